// The helpers gradient rules share (src/ops/grad.h): value shapes, constants, and the two shape
// adjustments every broadcasting or reducing op needs (sum a gradient back to an operand's shape,
// broadcast a reduced gradient back to the input's).
#include "ops/grad.h"

#include <algorithm>

#include "ops/op.h"

namespace sgraph::ops {

DimList GradCtx::dims(ValueId v) const {
  const ValueInfo& info = b.graph().values.at(v);
  if (info.initializer.defined()) return to_dims(info.initializer.shape());
  SG_CHECK(info.shape.has_value())
      << "cannot differentiate: the rank of value '" << info.name << "' is unknown";
  return *info.shape;
}

std::optional<Shape> GradCtx::static_shape(ValueId v) const {
  Shape s;
  for (const Dim& d : dims(v)) {
    if (!d.is_static()) return std::nullopt;
    s.push_back(d.size);
  }
  return s;
}

ValueId GradCtx::scalar(double x, DType t) {
  Tensor c(t, {});
  visit_dtype(t, [&]<class T>() { c.data<T>()[0] = static_cast<T>(x); });
  return b.constant("", std::move(c));
}

ValueId GradCtx::shape_of(ValueId v) {
  if (std::optional<Shape> s = static_shape(v)) return b.ints(*s);
  return b.shape(v);
}

ValueId GradCtx::with_dims_of(ValueId v, ValueId x) {
  std::optional<DimList>& shape = b.graph().values.at(v).shape;
  if (!shape) shape = dims(x);
  return v;
}

ValueId GradCtx::count_ratio(ValueId big, ValueId small) {
  const std::optional<Shape> sb = static_shape(big), ss = static_shape(small);
  if (sb && ss) {
    const int64_t n = numel(*ss);
    return scalar(n == 0 ? 0.0 : static_cast<double>(numel(*sb)) / static_cast<double>(n), big);
  }
  const ValueId ratio = b.div(b.size(big), b.size(small));
  return b.cast(ratio, Attributes{{"to", onnx_dtype_code(dtype(big))}});
}

ValueId GradCtx::sum_to(ValueId grad, ValueId like) {
  const DimList g = dims(grad), l = dims(like);
  SG_ASSERT(g.size() >= l.size()) << "gradient of rank " << g.size() << " for an operand of rank "
                                  << l.size();
  const size_t lead = g.size() - l.size();
  Ints axes;
  for (size_t d = 0; d < g.size(); ++d) {
    const bool one = d >= lead && l[d - lead].is_static() && l[d - lead].size == 1;
    const bool g_one = g[d].is_static() && g[d].size == 1;
    if (d < lead || (one && !g_one)) axes.push_back(static_cast<int64_t>(d));
  }
  if (axes.empty()) return grad;
  ValueId r = b.reduce_sum(grad, Attributes{{"axes", axes}, {"keepdims", int64_t{1}}});
  if (lead == 0) return r;
  Ints leading(lead);
  for (size_t d = 0; d < lead; ++d) leading[d] = static_cast<int64_t>(d);
  return b.squeeze(r, b.ints(leading));
}

ValueId GradCtx::expand_to(ValueId grad, ValueId x, const Ints& axes, bool keepdims) {
  if (!keepdims && !axes.empty()) grad = b.unsqueeze(grad, b.ints(axes));
  return with_dims_of(b.expand(grad, shape_of(x)), x);
}

}  // namespace sgraph::ops
