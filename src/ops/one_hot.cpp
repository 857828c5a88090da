// OneHot(indices, depth, values) {axis = -1}: a new axis of size depth, inserted at `axis` of the
// indices' shape, holding values[1] (on) at each index and values[0] (off) elsewhere. Indices in
// [-depth, -1] count from the end; others outside [0, depth) give a row of only off values (as
// ONNX says). Float indices and depth are truncated toward zero.
#include <cmath>

#include "ops/op.h"

namespace sgraph::ops {
namespace {

int64_t one_hot_depth(const Tensor& t) {
  SG_CHECK(t.numel() == 1 && t.rank() <= 1)
      << "OneHot depth must hold one element, got shape " << shape_str(t.shape());
  const double d = t.at_double(0);
  // 2^62 keeps the depth itself exact and positive; the output size is checked against overflow.
  SG_CHECK(std::isfinite(d) && d >= 0 && d < 0x1p62) << "OneHot depth must be >= 0, got " << d;
  return is_float(t.dtype()) ? static_cast<int64_t>(d) : t.to_int64()[0];
}

}  // namespace

extern const OpDef kOneHot;
const OpDef kOneHot{
    "OneHot",
    3,
    3,
    1,
    1,
    [](TypeCtx& c) {
      c.expect_numeric(0);
      c.expect_numeric(1);
      c.out[0] = c.in[2];
    },
    [](ShapeCtx& c) {
      SG_CHECK(c.shape(2).size() == 1 && c.shape(2)[0] == 2)
          << "OneHot values must have shape [2] (off, on), got " << shape_str(c.shape(2));
      const int64_t r = c.rank(0);
      const int64_t axis = normalize_axis(c.attrs().get_int("axis", -1), r + 1);
      const int64_t depth = one_hot_depth(c.require_value(1));
      Shape s = c.shape(0);
      int64_t n = depth;
      for (int64_t d : s)
        SG_CHECK(!__builtin_mul_overflow(n, d, &n)) << "OneHot output would be too large";
      s.insert(s.begin() + axis, depth);
      c.out[0] = s;
    },
    [](KernelCtx& c) {
      const Tensor& y = c.out[0];
      const int64_t r = c.in[0].rank();
      const int64_t axis = normalize_axis(c.attrs().get_int("axis", -1), r + 1);
      const int64_t depth = y.dim(axis);
      // indices viewed as [outer, inner] around the new axis; out as [outer, depth, inner].
      const AxisSplit v = split_at_axis(y.shape(), axis);
      std::vector<int64_t> index;
      if (is_float(c.in[0].dtype())) {
        // A float outside (-2^62, 2^62), or NaN, is out of range whatever the depth: it becomes
        // an index below -depth rather than an undefined conversion.
        index.resize(c.in[0].numel());
        for (size_t i = 0; i < index.size(); ++i) {
          const double x = c.in[0].at_double(static_cast<int64_t>(i));
          index[i] = std::abs(x) < 0x1p62 ? static_cast<int64_t>(x) : -depth - 1;
        }
      } else {
        index = c.in[0].to_int64();
      }
      visit_dtype(y.dtype(), [&]<class T>() {
        const T off = c.in[2].data<T>()[0], on = c.in[2].data<T>()[1];
        T* dst = c.out[0].data<T>();
        std::fill(dst, dst + y.numel(), off);
        for (int64_t o = 0; o < v.outer; ++o)
          for (int64_t i = 0; i < v.inner; ++i) {
            int64_t k = index[o * v.inner + i];
            if (k < 0) k += depth;
            if (k >= 0 && k < depth) dst[(o * depth + k) * v.inner + i] = on;
          }
      });
    }};

}  // namespace sgraph::ops
