// Slice's lowering: output index i on each axis reads input index start + i * step (starts,
// ends, axes and steps must be constants; the start clamped as the reference kernel clamps it).
#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

std::string why_not_slice(const Graph& g, const Node& n) {
  const char* names[] = {"starts", "ends", "axes", "steps"};
  for (size_t i = 1; i <= 4; ++i)
    if (std::string s = need_constant(g, n, i, names[i - 1]); !s.empty()) return s;
  if (!has_input(n, 1) && !n.attrs.has("starts")) return "no starts";
  return "";
}

llvm::Value* generate_slice(Emitter& e, const Node& n, const Index& idx) {
  const ValueId x = n.inputs[0];
  const Shape& in = e.shape(x);
  const Shape& out = e.shape(n.outputs[0]);
  SG_CHECK(in.size() == out.size()) << node_str(n) << ": output shape " << shape_str(out)
                                    << " is not a slice of " << shape_str(in);
  const Graph& g = e.graph;
  const std::vector<SliceAxis> axes =
      slice_params(n, in, constant_input(g, n, 1), constant_input(g, n, 2), constant_input(g, n, 3),
                   constant_input(g, n, 4));
  llvm::IRBuilderBase& b = e.b;
  Index in_idx(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const auto [start, step, count] = axes[d];
    SG_CHECK(count == out[d]) << node_str(n) << ": output shape " << shape_str(out)
                              << " is not the slice's (" << count << " on axis " << d << ")";
    // The first and the last element read lie in the input.
    int64_t last = 0;
    const bool fits =
        out[d] == 0 || (out[d] <= in[d] && start >= 0 && start < in[d] &&
                        !__builtin_mul_overflow(out[d] - 1, step, &last) &&
                        !__builtin_add_overflow(last, start, &last) && last >= 0 && last < in[d]);
    SG_CHECK(fits) << node_str(n) << ": output shape " << shape_str(out)
                   << " does not fit a slice of " << shape_str(in) << " on axis " << d;
    if (out[d] <= 1)
      in_idx[d] = e.i64(start);
    else if (step == 1)
      in_idx[d] = start == 0 ? idx[d] : b.CreateAdd(idx[d], e.i64(start), "", true, true);
    else
      in_idx[d] = b.CreateAdd(b.CreateMul(idx[d], e.i64(step), "", false, true), e.i64(start), "",
                              false, true);
  }
  return e.element(x, in_idx);
}

}  // namespace

extern const Lowering kSliceLowering;
const Lowering kSliceLowering{.why_not = why_not_slice, .generate = generate_slice};

}  // namespace sgraph::ops
