// Slice's lowering: output index i on each axis reads input index start + i * step (starts,
// ends, axes and steps must be constants; the start clamped as the reference kernel clamps it).
#include <algorithm>

#include "ops/lowering.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

struct SliceAxis {
  int64_t start = 0, step = 1;
};

Ints all_axes(size_t rank) {
  Ints a(rank);
  for (size_t d = 0; d < rank; ++d) a[d] = static_cast<int64_t>(d);
  return a;
}

// Per input dim, the first element read and the step between reads; how many are read is the
// output shape's. Starts are clamped forward to [0, dim], backward to [0, dim - 1].
std::vector<SliceAxis> slice_axes(const Graph& g, const Node& n, const Shape& in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  Ints starts, axes, steps;
  if (const Tensor* s = constant_input(g, n, 1)) {  // ONNX 10+: inputs
    starts = s->to_int64();
    if (const Tensor* a = constant_input(g, n, 3)) axes = a->to_int64();
    if (const Tensor* st = constant_input(g, n, 4)) steps = st->to_int64();
    if (!has_input(n, 3)) axes = all_axes(starts.size());
  } else {  // opset 1: attributes
    starts = n.attrs.get_ints("starts");
    axes = n.attrs.get_ints("axes", all_axes(starts.size()));
  }
  if (!has_input(n, 4)) steps.assign(starts.size(), 1);
  SG_CHECK(axes.size() == starts.size() && steps.size() == starts.size())
      << node_str(n) << ": " << starts.size() << " starts, " << axes.size() << " axes and "
      << steps.size() << " steps";
  std::vector<SliceAxis> r(in.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = normalize_axis(axes[i], rank, "Slice axis");
    const int64_t dim = in[a], step = steps[i];
    SG_CHECK(step != 0) << node_str(n) << ": step 0 on axis " << axes[i];
    const int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    r[a] = {std::min(std::max(s, int64_t{0}), step > 0 ? dim : dim - 1), step};
  }
  return r;
}

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
  const std::vector<SliceAxis> axes = slice_axes(e.graph, n, in);
  llvm::IRBuilderBase& b = e.b;
  Index in_idx(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const auto [start, step] = axes[d];
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
