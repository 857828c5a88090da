// Transpose's lowering: the output index permuted is the input's.
#include "ops/lowering.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

llvm::Value* generate_transpose(Emitter& e, const Node& n, const Index& idx) {
  const Shape& out = e.shape(n.outputs[0]);
  const Shape& in = e.shape(n.inputs[0]);
  const Ints perm = transpose_perm(n, in.size());
  SG_CHECK(perm.size() == out.size() && in.size() == out.size())
      << node_str(n) << ": perm " << shape_str(perm) << " does not fit shape " << shape_str(in);
  Index in_idx(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    SG_CHECK(in.at(perm[d]) == out[d]) << node_str(n) << ": output shape " << shape_str(out)
                                       << " is not a transpose of " << shape_str(in);
    in_idx[perm[d]] = idx[d];
  }
  return e.element(n.inputs[0], in_idx);
}

}  // namespace

extern const Lowering kTransposeLowering;
const Lowering kTransposeLowering{.generate = generate_transpose};

}  // namespace sgraph::ops
