// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool over [N, C, spatial...] inputs, any
// number of spatial dims. The windows depend only on the geometry, so their input offsets are
// listed once and every (image, channel) plane reuses the list. Their gradient rules are in
// window_grad.cpp.
#include <algorithm>
#include <limits>
#include <utility>

#include "ops/window.h"
#include "ops/window_grad.h"

namespace sgraph::ops {
namespace {

// Per output position o: the plane offsets (with `strides`) of the input elements its window
// covers, taps[begin[o] .. begin[o + 1]), and how many window positions lie inside the padded
// input (AveragePool's divisor with count_include_pad).
struct WindowTaps {
  Ints begin{0}, taps, padded;
};

WindowTaps window_taps(const Window& w, const Shape& strides) {
  const size_t r = w.rank();
  std::vector<std::vector<Ints>> pos(r);  // [dim][output index] -> input positions inside
  std::vector<Ints> padded(r);
  for (size_t d = 0; d < r; ++d) {
    pos[d].resize(w.out[d]);
    padded[d].assign(w.out[d], 0);
    for (int64_t o = 0; o < w.out[d]; ++o) {
      for (int64_t k = 0; k < w.kernel[d]; ++k) {
        const int64_t i = o * w.strides[d] - w.pad_begin[d] + k * w.dilations[d];
        if (i >= 0 && i < w.in[d]) pos[d][o].push_back(i * strides[d]);
        if (i < w.in[d] + w.pad_end[d]) ++padded[d][o];
      }
    }
  }
  WindowTaps t;
  Ints o(r, 0), cur, next;
  for (int64_t n = numel(w.out), flat = 0; flat < n; ++flat) {
    cur.assign(1, 0);
    int64_t pad = 1;
    for (size_t d = 0; d < r; ++d) {
      next.clear();
      for (int64_t base : cur)
        for (int64_t off : pos[d][o[d]]) next.push_back(base + off);
      std::swap(cur, next);
      pad *= padded[d][o[d]];
    }
    t.taps.insert(t.taps.end(), cur.begin(), cur.end());
    t.begin.push_back(static_cast<int64_t>(t.taps.size()));
    t.padded.push_back(pad);
    for (size_t d = r; d-- > 0 && ++o[d] == w.out[d];) o[d] = 0;
  }
  return t;
}

// Window of a pooling node: kernel_shape is required; ceil_mode rounds output sizes up; a kernel
// overhanging the input by less than a stride still gives one (clipped) window.
Window pool_window(const Attributes& attrs, const Shape& x) {
  Ints in = spatial_dims(x, "X");
  SG_CHECK(attrs.has("kernel_shape")) << "kernel_shape is required";
  Ints kernel = read_spatial(attrs, "kernel_shape", in.size(), 0, 1);
  return forward_window(attrs, std::move(in), std::move(kernel), attrs.get_int("ceil_mode", 0) != 0,
                        /*clip_last=*/true);
}

void shapes_pool(ShapeCtx& c) {
  const Window w = pool_window(c.attrs(), c.shape(0));
  Shape s{c.shape(0)[0], c.shape(0)[1]};
  s.insert(s.end(), w.out.begin(), w.out.end());
  for (auto& o : c.out) o = s;
}

// Planes (image, channel) and the per-plane sizes of input and output.
struct Planes {
  int64_t count, in, out;
};
Planes planes(const Tensor& x, const Tensor& y) {
  return {x.dim(0) * x.dim(1), numel(Ints(x.shape().begin() + 2, x.shape().end())),
          numel(Ints(y.shape().begin() + 2, y.shape().end()))};
}

// Empty windows (only padding) give the lowest value and index -1.
template <class T>
void max_pool(KernelCtx& c) {
  const Window w = pool_window(c.attrs(), c.in[0].shape());
  const WindowTaps t = window_taps(w, strides_of(w.in));
  const int64_t order = c.attrs().get_int("storage_order", 0);
  SG_CHECK(order == 0 || order == 1) << "storage_order must be 0 or 1, got " << order;
  const bool with_indices = c.out.size() > 1;
  Shape column_major(w.rank());
  int64_t acc = 1;
  for (size_t d = 0; d < w.rank(); acc *= w.in[d++]) column_major[d] = acc;
  const Ints index_taps = with_indices && order == 1 ? window_taps(w, column_major).taps : t.taps;
  const Planes p = planes(c.in[0], c.out[0]);
  const T* x = c.in[0].data<T>();
  T* y = c.out[0].data<T>();
  int64_t* ind = with_indices ? c.out[1].data<int64_t>() : nullptr;
  for (int64_t pl = 0; pl < p.count; ++pl) {
    const T* xp = x + pl * p.in;
    for (int64_t o = 0; o < p.out; ++o) {
      T best = std::numeric_limits<T>::lowest();
      int64_t arg = -1;
      for (int64_t k = t.begin[o]; k < t.begin[o + 1]; ++k) {
        const T v = xp[t.taps[k]];
        if (arg < 0 || v > best) {
          best = v;
          arg = k;
        }
      }
      y[pl * p.out + o] = best;
      if (ind) ind[pl * p.out + o] = arg < 0 ? -1 : pl * p.in + index_taps[arg];
    }
  }
}

template <class T>
void average_pool(KernelCtx& c) {
  const Window w = pool_window(c.attrs(), c.in[0].shape());
  const WindowTaps t = window_taps(w, strides_of(w.in));
  const bool include_pad = c.attrs().get_int("count_include_pad", 0) != 0;
  const Planes p = planes(c.in[0], c.out[0]);
  const T* x = c.in[0].data<T>();
  T* y = c.out[0].data<T>();
  for (int64_t pl = 0; pl < p.count; ++pl) {
    const T* xp = x + pl * p.in;
    for (int64_t o = 0; o < p.out; ++o) {
      T sum = 0;
      for (int64_t k = t.begin[o]; k < t.begin[o + 1]; ++k) sum += xp[t.taps[k]];
      const int64_t n = include_pad ? t.padded[o] : t.begin[o + 1] - t.begin[o];
      y[pl * p.out + o] = sum / static_cast<T>(n);
    }
  }
}

template <class T>
void global_average_pool(KernelCtx& c) {
  const Planes p = planes(c.in[0], c.out[0]);
  const T* x = c.in[0].data<T>();
  T* y = c.out[0].data<T>();
  for (int64_t pl = 0; pl < p.count; ++pl) {
    double sum = 0;
    for (int64_t i = 0; i < p.in; ++i) sum += static_cast<double>(x[pl * p.in + i]);
    y[pl] = static_cast<T>(sum / static_cast<double>(p.in));
  }
}

// As MaxPool: NaN does not win (x > m is false), an empty plane gives the lowest value.
template <class T>
void global_max_pool(KernelCtx& c) {
  const Planes p = planes(c.in[0], c.out[0]);
  const T* x = c.in[0].data<T>();
  T* y = c.out[0].data<T>();
  for (int64_t pl = 0; pl < p.count; ++pl) {
    T m = std::numeric_limits<T>::lowest();
    for (int64_t i = 0; i < p.in; ++i) m = x[pl * p.in + i] > m ? x[pl * p.in + i] : m;
    y[pl] = m;
  }
}

void shapes_global_pool(ShapeCtx& c) {
  spatial_dims(c.shape(0), "X");
  Shape s = c.shape(0);
  std::fill(s.begin() + 2, s.end(), 1);
  c.out[0] = s;
}

}  // namespace

// MaxPool(X) -> Y, Indices? {kernel_shape, strides, pads, auto_pad, dilations, ceil_mode,
// storage_order}. Indices flatten (n, c, spatial) with the spatial part row-major (storage_order
// 0) or column-major (1); padding never wins.
extern const Lowering kWindowLowering;  // window_jit.cpp
extern const OpDef kMaxPool;
const OpDef kMaxPool = with_symbolic_shape(
    window_symbolic_shape,
    with_lowering(
        &kWindowLowering,
        with_grad(grad_max_pool,
                  {"MaxPool", 1, 1, 1, 2,
                   [](TypeCtx& c) {
                     c.expect_one_of(0, {DType::f32, DType::f64, DType::i8, DType::u8});
                     c.out[0] = c.in[0];
                     if (c.out.size() > 1) c.out[1] = DType::i64;
                   },
                   shapes_pool,
                   [](KernelCtx& c) {
                     visit_dtype(c.in[0].dtype(), [&]<class T>() {
                       if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                     std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>)
                         max_pool<T>(c);
                       else
                         SG_ASSERT(false) << "MaxPool on " << dtype_name(c.in[0].dtype());
                     });
                   }})));

// AveragePool(X) {kernel_shape, strides, pads, auto_pad, dilations, ceil_mode,
// count_include_pad = 0}. Windows past the end padding (ceil_mode) never count those positions.
extern const Lowering kWindowLowering;  // window_jit.cpp
extern const OpDef kAveragePool;
const OpDef kAveragePool = with_symbolic_shape(
    window_symbolic_shape,
    with_lowering(
        &kWindowLowering,
        with_grad(grad_average_pool,
                  {"AveragePool", 1, 1, 1, 1, types_float_same, shapes_pool, [](KernelCtx& c) {
                     visit_float(c.in[0].dtype(), [&]<class T>() { average_pool<T>(c); });
                   }})));

// GlobalAveragePool(X): the mean over all spatial dims, kept as size 1.
extern const Lowering kReduceLowering;  // reduce_jit.cpp
extern const OpDef kGlobalAveragePool;
const OpDef kGlobalAveragePool = with_lowering(
    &kReduceLowering,
    with_grad(
        grad_global_average_pool,
        {"GlobalAveragePool", 1, 1, 1, 1, types_float_same, shapes_global_pool, [](KernelCtx& c) {
           visit_float(c.in[0].dtype(), [&]<class T>() { global_average_pool<T>(c); });
         }}));

// GlobalMaxPool(X): the maximum over all spatial dims, kept as size 1.
extern const OpDef kGlobalMaxPool;
const OpDef kGlobalMaxPool = with_lowering(
    &kReduceLowering,
    {"GlobalMaxPool", 1, 1, 1, 1, types_float_same, shapes_global_pool, [](KernelCtx& c) {
       visit_float(c.in[0].dtype(), [&]<class T>() { global_max_pool<T>(c); });
     }});

}  // namespace sgraph::ops
