// Transpose's lowering: the output index permuted is the input's.
#include "ops/lowering.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

// "" when `out` is `in` permuted by `perm`.
std::string check_perm(const Ints& perm, const SymShape& in, const SymShape& out) {
  if (perm.size() != out.size() || in.size() != out.size()) return "perm does not fit the shape";
  for (size_t d = 0; d < out.size(); ++d)
    if (perm[d] < 0 || static_cast<size_t>(perm[d]) >= in.size() || !(in[perm[d]] == out[d]))
      return "output shape is not a transpose of the input's";
  return "";
}

llvm::Value* generate_transpose(Emitter& e, const Node& n, const Index& idx) {
  const SymShape out = e.dims(n.outputs[0]), in = e.dims(n.inputs[0]);
  const Ints perm = transpose_perm(n, in.size());
  const std::string why = check_perm(perm, in, out);
  SG_CHECK(why.empty()) << node_str(n) << ": " << why << " (perm " << shape_str(perm) << ")";
  Index in_idx(out.size());
  for (size_t d = 0; d < out.size(); ++d) in_idx[perm[d]] = idx[d];
  return e.element(n.inputs[0], in_idx);
}

std::string why_not_dynamic_transpose(const Graph&, const Node& n,
                                      const std::vector<const SymShape*>& in, const SymShape& out) {
  return in.empty() || !in[0] ? "no input"
                              : check_perm(transpose_perm(n, in[0]->size()), *in[0], out);
}

}  // namespace

extern const Lowering kTransposeLowering;
const Lowering kTransposeLowering{.why_not_dynamic = why_not_dynamic_transpose,
                                  .generate = generate_transpose};

}  // namespace sgraph::ops
