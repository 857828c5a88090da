// Softmax and LogSoftmax (opset 13: along the single `axis`, default -1), numerically stable:
// each slice has its maximum subtracted before exp. The input is viewed as [outer, n, inner] with
// n the softmax axis; inner == 1 (the last axis) runs row by row, otherwise the inner dim is the
// vectorisable loop.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/grad.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

void shapes_softmax(ShapeCtx& c) {
  SG_CHECK(c.rank(0) >= 1) << "input must have rank >= 1, got a scalar";
  op_axis(c.node, c.shape(0).size());
  shapes_same_as_input0(c);
}

template <class T>
T scalar_max_of(T a, T b) {
  return b > a ? b : a;
}

// The maximum of x[0..n) (n >= 1), as four independent running maxima.
template <class T>
T row_max(const T* x, int64_t n) {
  T m[4] = {x[0], x[0], x[0], x[0]};
  int64_t j = 1;
  for (; j + 4 <= n; j += 4)
    for (int k = 0; k < 4; ++k) m[k] = scalar_max_of(m[k], x[j + k]);
  for (; j < n; ++j) m[0] = scalar_max_of(m[0], x[j]);
  return scalar_max_of(scalar_max_of(m[0], m[1]), scalar_max_of(m[2], m[3]));
}

// Contiguous rows of n elements (n >= 1). Sums accumulate in double.
template <bool Log, class T>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
    const T m = row_max(x, n);
    double s = 0;
    if constexpr (Log) {
      for (int64_t j = 0; j < n; ++j) s += std::exp(x[j] - m);
      const T ls = static_cast<T>(std::log(s));
      for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - m) - ls;
    } else {
      for (int64_t j = 0; j < n; ++j) {
        y[j] = std::exp(x[j] - m);
        s += y[j];
      }
      const T inv = static_cast<T>(1 / s);
      for (int64_t j = 0; j < n; ++j) y[j] *= inv;
    }
  }
}

// Blocks of [n, inner] (n >= 1, inner > 1): softmax down each column, walking rows of `inner`
// contiguous elements.
template <bool Log, class T>
void softmax_columns(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  std::vector<T> m(inner), k(inner);
  std::vector<double> s(inner);
  for (int64_t o = 0; o < outer; ++o, x += n * inner, y += n * inner) {
    std::copy(x, x + inner, m.begin());
    for (int64_t r = 1; r < n; ++r)
      for (int64_t j = 0; j < inner; ++j) m[j] = scalar_max_of(m[j], x[r * inner + j]);
    std::fill(s.begin(), s.end(), 0.0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < inner; ++j) {
        const T e = std::exp(x[r * inner + j] - m[j]);
        if constexpr (!Log) y[r * inner + j] = e;
        s[j] += e;
      }
    // k is what each column is multiplied by (softmax), or has subtracted after m (log).
    for (int64_t j = 0; j < inner; ++j) k[j] = static_cast<T>(Log ? std::log(s[j]) : 1 / s[j]);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < inner; ++j) {
        if constexpr (Log)
          y[r * inner + j] = (x[r * inner + j] - m[j]) - k[j];
        else
          y[r * inner + j] *= k[j];
      }
  }
}

template <bool Log>
void run_softmax(KernelCtx& c) {
  const Tensor& x = c.in[0];
  if (x.numel() == 0) return;
  const int64_t axis = op_axis(c.node, x.shape().size());
  const auto [outer, n, inner] = split_at_axis(x.shape(), axis);
  visit_float(x.dtype(), [&]<class T>() {
    if (inner == 1)
      softmax_rows<Log>(x.data<T>(), c.out[0].data<T>(), outer, n);
    else
      softmax_columns<Log>(x.data<T>(), c.out[0].data<T>(), outer, n, inner);
  });
}

// Gradients, with s a sum along the axis (dims kept): Softmax dx = y * (dy - s(dy * y)),
// LogSoftmax dx = dy - exp(y) * s(dy).
void grad_softmax(GradCtx& c) {
  const ValueId y = c.out(0), dy = c.dout(0);
  const int64_t axis = op_axis(c.node, c.dims(y).size());
  const Attributes along{{"axes", Ints{axis}}, {"keepdims", int64_t{1}}};
  if (c.node.op == OpKind::Softmax)
    c.set(0, c.b.mul(y, c.b.sub(dy, c.b.reduce_sum(c.b.mul(dy, y), along))));
  else
    c.set(0, c.b.sub(dy, c.b.mul(c.b.exp(y), c.b.reduce_sum(dy, along))));
}

}  // namespace

extern const Lowering kSoftmaxLowering;  // softmax_jit.cpp
extern const OpDef kSoftmax, kLogSoftmax;
const OpDef kSoftmax = with_lowering(
    &kSoftmaxLowering, with_grad(grad_softmax, {"Softmax", 1, 1, 1, 1, types_float_same,
                                                shapes_softmax, run_softmax<false>}));
const OpDef kLogSoftmax = with_lowering(
    &kSoftmaxLowering, with_grad(grad_softmax, {"LogSoftmax", 1, 1, 1, 1, types_float_same,
                                                shapes_softmax, run_softmax<true>}));

}  // namespace sgraph::ops
