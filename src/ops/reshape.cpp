// View ops — Identity, Reshape, Flatten, Squeeze, Unsqueeze. Each only computes the output shape;
// the interpreter makes output 0 a view of input 0's buffer (OpDef::view), so no kernel runs.
// Their gradient is the output's gradient viewed with the input's shape.
#include <algorithm>
#include <optional>

#include "ops/grad.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

// A 1-D integer shape-valued input (Reshape's shape, the axes of Squeeze/Unsqueeze) as int64s.
Ints int_list_input(const ShapeCtx& c, size_t i, std::string_view what) {
  const Tensor& t = c.require_value(i);
  SG_CHECK(t.rank() == 1) << what << " must be a 1-D tensor, got shape " << shape_str(t.shape());
  return t.to_int64();
}

// Axes from input `i` when present (opset 13+), else from the `axes` attribute, else nullopt.
std::optional<Ints> axes_of(const ShapeCtx& c, size_t i) {
  if (c.has(i)) return int_list_input(c, i, "axes");
  if (c.attrs().has("axes")) return c.attrs().get_ints("axes");
  return std::nullopt;
}

void types_data_and_index(TypeCtx& c) {
  if (c.has(1)) c.expect_int_index(1);
  c.out[0] = c.in[0];
}

// Reshape(data, shape) {allowzero = 0}: a 0 copies the input dimension unless allowzero is set;
// one -1 is inferred from the element count.
void shapes_reshape(ShapeCtx& c) {
  const Shape& in = c.shape(0);
  const Ints spec = int_list_input(c, 1, "shape");
  const bool allowzero = c.attrs().get_int("allowzero", 0) != 0;
  Shape out(spec.size());
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    SG_CHECK(d >= -1) << "shape " << shape_str(spec) << " has invalid dimension " << d;
    if (d == -1) {
      SG_CHECK(infer_at < 0) << "shape " << shape_str(spec) << " has more than one -1";
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d == 0 && !allowzero) {
      SG_CHECK(i < in.size()) << "shape " << shape_str(spec) << " copies dimension " << i
                              << " (0) but the input " << shape_str(in) << " has rank "
                              << in.size();
      d = in[i];
    }
    out[i] = d;
    SG_CHECK(!__builtin_mul_overflow(known, d, &known))
        << "shape " << shape_str(spec) << " has too many elements";
  }
  const int64_t n = numel(in);
  if (infer_at >= 0) {
    SG_CHECK(known != 0) << "cannot reshape " << shape_str(in) << " to " << shape_str(spec)
                         << ": the -1 cannot be inferred when the other dimensions multiply to 0"
                         << (allowzero ? " (allowzero=1 with both 0 and -1)" : "");
    SG_CHECK(n % known == 0) << "cannot reshape " << shape_str(in) << " (" << n << " elements) to "
                             << shape_str(spec) << ": " << n << " is not divisible by " << known;
    out[infer_at] = n / known;
  } else {
    SG_CHECK(known == n) << "cannot reshape " << shape_str(in) << " (" << n << " elements) to "
                         << shape_str(out) << " (" << known << " elements)";
  }
  c.out[0] = std::move(out);
}

// Flatten(x) {axis = 1}: [prod(dims[:axis]), prod(dims[axis:])], axis in [-r, r].
void shapes_flatten(ShapeCtx& c) {
  const Shape& in = c.shape(0);
  const int64_t r = c.rank(0);
  int64_t axis = c.attrs().get_int("axis", 1);
  SG_CHECK(axis >= -r && axis <= r) << "axis " << axis << " is out of range for rank " << r
                                    << " (Flatten accepts [" << -r << ", " << r << "])";
  if (axis < 0) axis += r;
  const auto split = static_cast<size_t>(axis);
  c.out[0] = {numel(std::span(in).first(split)), numel(std::span(in).subspan(split))};
}

// Squeeze(data, axes?): removes the listed size-1 dims, or every size-1 dim without axes.
void shapes_squeeze(ShapeCtx& c) {
  const Shape& in = c.shape(0);
  const int64_t r = c.rank(0);
  const std::optional<Ints> axes = axes_of(c, 1);
  std::vector<bool> drop(r, false);
  if (!axes || axes->empty()) {
    for (int64_t d = 0; d < r; ++d) drop[d] = in[d] == 1;
  } else {
    for (int64_t a : *axes) {
      SG_CHECK(r > 0) << "axis " << a << " is out of range for rank 0";
      const int64_t d = normalize_axis(a, r);
      SG_CHECK(in[d] == 1) << "cannot squeeze axis " << a << " of shape " << shape_str(in)
                           << ": its size is " << in[d] << ", not 1";
      drop[d] = true;
    }
  }
  Shape out;
  for (int64_t d = 0; d < r; ++d)
    if (!drop[d]) out.push_back(in[d]);
  c.out[0] = std::move(out);
}

// Unsqueeze(data, axes): inserts size-1 dims at `axes`, which index the output.
void shapes_unsqueeze(ShapeCtx& c) {
  const Shape& in = c.shape(0);
  const std::optional<Ints> axes = axes_of(c, 1);
  SG_CHECK(axes.has_value()) << "Unsqueeze needs axes (as input 1 or the 'axes' attribute)";
  const int64_t r = c.rank(0) + static_cast<int64_t>(axes->size());
  std::vector<bool> inserted(r, false);
  for (int64_t a : *axes) {
    const int64_t d = normalize_axis(a, r);
    SG_CHECK(!inserted[d]) << "axis " << a << " appears twice in axes " << shape_str(*axes);
    inserted[d] = true;
  }
  Shape out(r);
  for (int64_t d = 0, k = 0; d < r; ++d) out[d] = inserted[d] ? 1 : in[k++];
  c.out[0] = std::move(out);
}

// Gradients: dy viewed with the input's shape (Identity: dy itself). Shape and axes inputs are
// integers and get none.
void grad_identity(GradCtx& c) { c.set(0, c.dout(0)); }
void grad_view(GradCtx& c) {
  c.set(0, c.with_dims_of(c.b.reshape(c.dout(0), c.shape_of(c.in(0))), c.in(0)));
}

}  // namespace

extern const Lowering kViewLowering;  // reshape_jit.cpp
extern const OpDef kIdentity, kReshape, kFlatten, kSqueeze, kUnsqueeze;

constexpr OpDef view(OpDef def) { return with_lowering(&kViewLowering, def); }

const OpDef kIdentity = view(with_grad(grad_identity, {"Identity", 1, 1, 1, 1, types_same_as_input0,
                                                       shapes_same_as_input0, nullptr, true}));
const OpDef kReshape = view(with_grad(
    grad_view, {"Reshape", 2, 2, 1, 1, types_data_and_index, shapes_reshape, nullptr, true}));
const OpDef kFlatten = view(with_grad(
    grad_view, {"Flatten", 1, 1, 1, 1, types_same_as_input0, shapes_flatten, nullptr, true}));
const OpDef kSqueeze = view(with_grad(
    grad_view, {"Squeeze", 1, 2, 1, 1, types_data_and_index, shapes_squeeze, nullptr, true}));
const OpDef kUnsqueeze = view(with_grad(
    grad_view, {"Unsqueeze", 1, 2, 1, 1, types_data_and_index, shapes_unsqueeze, nullptr, true}));

}  // namespace sgraph::ops
