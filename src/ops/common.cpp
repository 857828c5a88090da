// Helpers shared by op files: type checks, axis normalisation, broadcasting.
#include <algorithm>

#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {

void TypeCtx::expect_float(size_t i) const {
  SG_CHECK(has(i) && is_float(in[i])) << "input " << i << " must be a float tensor, got "
                                      << dtype_name(has(i) ? in[i] : DType::undefined);
}

void TypeCtx::expect_numeric(size_t i) const {
  SG_CHECK(has(i) && in[i] != DType::boolean)
      << "input " << i << " must be numeric, got " << dtype_name(has(i) ? in[i] : DType::undefined);
}

void TypeCtx::expect_one_of(size_t i, std::initializer_list<DType> ok) const {
  const DType t = has(i) ? in[i] : DType::undefined;
  if (std::find(ok.begin(), ok.end(), t) != ok.end()) return;
  detail::Message m;
  m << "input " << i << " has dtype " << dtype_name(t) << ", expected one of";
  for (DType d : ok) m << " " << dtype_name(d);
  throw Error(m.str());
}

void TypeCtx::expect_same(size_t i, size_t j) const {
  SG_CHECK(in[i] == in[j]) << "inputs " << i << " and " << j << " must have the same dtype, got "
                           << dtype_name(in[i]) << " and " << dtype_name(in[j]);
}

void TypeCtx::expect_int_index(size_t i) const { expect_one_of(i, {DType::i32, DType::i64}); }

const Tensor& ShapeCtx::require_value(size_t i) const {
  SG_CHECK(i < value.size()) << "missing input " << i;
  if (values_read && i < values_read->size()) (*values_read)[i] = true;
  if (value[i] == nullptr) throw ValueUnknown{};
  return *value[i];
}

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view what) {
  // Strictly [-rank, rank): a scalar has no axis (callers index per-dim tables with the result).
  SG_CHECK(axis >= -rank && axis < rank)
      << what << " " << axis << " is out of range for rank " << rank;
  return axis < 0 ? axis + rank : axis;
}

int64_t op_axis(const Node& n, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  switch (n.op) {
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
    case OpKind::LayerNormalization:
      return normalize_axis(n.attrs.get_int("axis", -1), r);
    case OpKind::Gather:
    case OpKind::Split:
    case OpKind::ArgMax:
    case OpKind::ArgMin:
      return normalize_axis(n.attrs.get_int("axis", 0), r);
    case OpKind::Concat:
      return normalize_axis(n.attrs.get_int("axis"), r);
    default:
      SG_ASSERT(false) << op_name(n.op) << " has no single axis";
      return 0;
  }
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    SG_CHECK(da == db || da == 1 || db == 1)
        << "shapes " << shape_str(a) << " and " << shape_str(b) << " cannot be broadcast";
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape strides_of(const Shape& shape) {
  Shape s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

Shape broadcast_strides(const Shape& in_shape, const Shape& out_shape) {
  SG_ASSERT(in_shape.size() <= out_shape.size());
  Shape s(out_shape.size(), 0);
  const Shape own = strides_of(in_shape);
  const size_t off = out_shape.size() - in_shape.size();
  for (size_t i = 0; i < in_shape.size(); ++i) s[off + i] = in_shape[i] == 1 ? 0 : own[i];
  return s;
}

AxisSplit split_at_axis(const Shape& shape, int64_t axis) {
  SG_ASSERT(axis >= 0 && axis < static_cast<int64_t>(shape.size()));
  return {numel(std::span(shape).first(axis)), shape[axis],
          numel(std::span(shape).subspan(axis + 1))};
}

void types_same_as_input0(TypeCtx& c) {
  for (auto& t : c.out) t = c.in[0];
}

void types_float_same(TypeCtx& c) {
  c.expect_float(0);
  types_same_as_input0(c);
}

void shapes_same_as_input0(ShapeCtx& c) { c.out[0] = c.shape(0); }

}  // namespace sgraph::ops
