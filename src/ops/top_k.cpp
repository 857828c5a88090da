// Hardmax and TopK: picking the largest (or smallest) elements along one axis. Both view the input
// as [outer, dim, inner] and work on one lane of `dim` elements (stride `inner`) at a time.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/op.h"

namespace sgraph::ops {
namespace {

// a > b in an order where NaN is above every number and equal to itself: a strict weak order, so
// sorting inputs holding NaN is defined (and NaN counts as the largest, as numpy's argmax has it).
template <class T>
bool above(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

int64_t axis_attr(const Node& n, int64_t rank) {
  return normalize_axis(n.attrs.get_int("axis", -1), rank);
}

}  // namespace

// Hardmax(x) {axis = -1} (opset 13): 1 where an element is its lane's maximum (the first one when
// several are equal), 0 elsewhere.
extern const OpDef kHardmax;
const OpDef kHardmax{"Hardmax",
                     1,
                     1,
                     1,
                     1,
                     types_float_same,
                     [](ShapeCtx& c) {
                       SG_CHECK(c.rank(0) >= 1) << "Hardmax input must have rank >= 1";
                       axis_attr(c.node, c.rank(0));
                       shapes_same_as_input0(c);
                     },
                     [](KernelCtx& c) {
                       const Tensor& x = c.in[0];
                       const AxisSplit v = split_at_axis(x.shape(), axis_attr(c.node, x.rank()));
                       visit_float(x.dtype(), [&]<class T>() {
                         const T* src = x.data<T>();
                         T* dst = c.out[0].data<T>();
                         std::fill(dst, dst + x.numel(), T(0));
                         if (v.dim == 0) return;
                         for (int64_t o = 0; o < v.outer; ++o)
                           for (int64_t i = 0; i < v.inner; ++i) {
                             const int64_t base = o * v.dim * v.inner + i;
                             int64_t best = 0;
                             for (int64_t k = 1; k < v.dim; ++k)
                               if (above(src[base + k * v.inner], src[base + best * v.inner]))
                                 best = k;
                             dst[base + best * v.inner] = T(1);
                           }
                       });
                     }};

// TopK(x, k) {axis = -1, largest = 1, sorted = 1}: the k largest (smallest) elements of each lane
// and their int64 indices, best first; equal elements by lower index first. k is input 1 (a
// one-element int64 tensor, opset 10+) or the `k` attribute (opset 1). Sorted output is given
// for sorted = 0 too (ONNX leaves that order unspecified).
namespace {

int64_t top_k_count(const ShapeCtx& c) {
  int64_t k = 0;
  if (c.has(1)) {
    const Tensor& t = c.require_value(1);
    SG_CHECK(t.numel() == 1 && t.rank() <= 1)
        << "TopK k must hold one element, got shape " << shape_str(t.shape());
    k = t.to_int64()[0];
  } else {
    k = c.attrs().get_int("k");
  }
  SG_CHECK(k >= 0) << "TopK k must be >= 0, got " << k;
  return k;
}

template <class T>
void top_k(KernelCtx& c, int64_t axis) {
  const Tensor& x = c.in[0];
  const AxisSplit v = split_at_axis(x.shape(), axis);
  const int64_t k = c.out[0].dim(axis);
  const bool largest = c.attrs().get_int("largest", 1) != 0;
  const T* src = x.data<T>();
  T* val = c.out[0].data<T>();
  int64_t* idx = c.out[1].data<int64_t>();
  std::vector<int64_t> order(v.dim);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      const T* lane = src + o * v.dim * v.inner + i;
      auto at = [&](int64_t j) { return lane[j * v.inner]; };
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
        const T xa = at(a), xb = at(b);
        if (largest ? above(xa, xb) : above(xb, xa)) return true;
        if (largest ? above(xb, xa) : above(xa, xb)) return false;
        return a < b;
      });
      const int64_t out_base = o * k * v.inner + i;
      for (int64_t j = 0; j < k; ++j) {
        val[out_base + j * v.inner] = at(order[j]);
        idx[out_base + j * v.inner] = order[j];
      }
    }
}

}  // namespace

extern const OpDef kTopK;
const OpDef kTopK{"TopK",
                  1,
                  2,
                  2,
                  2,
                  [](TypeCtx& c) {
                    c.expect_numeric(0);
                    if (c.has(1)) c.expect_one_of(1, {DType::i64});
                    c.out[0] = c.in[0];
                    c.out[1] = DType::i64;
                  },
                  [](ShapeCtx& c) {
                    SG_CHECK(c.rank(0) >= 1) << "TopK input must have rank >= 1";
                    const int64_t axis = axis_attr(c.node, c.rank(0));
                    const int64_t k = top_k_count(c);
                    SG_CHECK(k <= c.shape(0)[axis]) << "TopK k = " << k << " exceeds axis " << axis
                                                    << " of size " << c.shape(0)[axis];
                    Shape s = c.shape(0);
                    s[axis] = k;
                    c.out[0] = s;
                    c.out[1] = s;
                  },
                  [](KernelCtx& c) {
                    const int64_t axis = axis_attr(c.node, c.in[0].rank());
                    visit_dtype(c.in[0].dtype(), [&]<class T>() { top_k<T>(c, axis); });
                  }};

}  // namespace sgraph::ops
