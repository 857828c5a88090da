// Conv and ConvTranspose over any number of spatial dims (1-D audio, 2-D images, 3-D volumes).
// Conv is im2col + one GEMM per (image, group); ConvTranspose is one GEMM per (image, group)
// followed by col2im, which scatters the columns back onto the output. Conv's gradient rule is in
// window_grad.cpp.
#include <algorithm>

#include "ops/gemm_kernel.h"
#include "ops/int_math.h"
#include "ops/window.h"
#include "ops/window_grad.h"

namespace sgraph::ops {
namespace {

void types_conv(TypeCtx& c) {
  c.expect_one_of(0, {DType::f32, DType::f64});
  for (size_t i = 1; i < c.in.size(); ++i)
    if (c.has(i)) c.expect_same(0, i);
  c.out[0] = c.in[0];
}

// Shared checks. `w_in_axis` is W's axis holding input channels (per group): 1 for Conv, 0 (all
// channels) for ConvTranspose. Sets batch, group, in_ch, out_ch and the kernel.
ConvGeom conv_common(const Attributes& attrs, const Shape& x, const Shape& wt, const Shape* b,
                     bool transpose) {
  ConvGeom g;
  g.w.in = spatial_dims(x, "X");
  SG_CHECK(wt.size() == x.size()) << "W must have rank " << x.size() << " like X " << shape_str(x)
                                  << ", got " << shape_str(wt);
  g.batch = x[0];
  g.in_ch = x[1];
  g.group = attrs.get_int("group", 1);
  SG_CHECK(g.group >= 1) << "group must be >= 1, got " << g.group;
  SG_CHECK(g.in_ch % g.group == 0)
      << "input channels " << g.in_ch << " are not divisible by group " << g.group;
  if (transpose) {
    SG_CHECK(wt[0] == g.in_ch) << "W " << shape_str(wt) << " expects " << wt[0]
                               << " input channels, but X " << shape_str(x) << " has " << g.in_ch;
    g.out_ch = wt[1] * g.group;
  } else {
    SG_CHECK(wt[1] * g.group == g.in_ch)
        << "W " << shape_str(wt) << " with group " << g.group << " expects " << wt[1] * g.group
        << " input channels, but X " << shape_str(x) << " has " << g.in_ch;
    g.out_ch = wt[0];
    SG_CHECK(g.out_ch % g.group == 0)
        << "output channels " << g.out_ch << " are not divisible by group " << g.group;
  }
  g.w.kernel.assign(wt.begin() + 2, wt.end());
  if (attrs.has("kernel_shape"))
    SG_CHECK(attrs.get_ints("kernel_shape") == g.w.kernel)
        << "kernel_shape " << shape_str(attrs.get_ints("kernel_shape"))
        << " does not match W's spatial dims " << shape_str(g.w.kernel);
  if (b)
    SG_CHECK(*b == Shape{g.out_ch})
        << "B must have shape [" << g.out_ch << "], got " << shape_str(*b);
  return g;
}

}  // namespace

ConvGeom conv_geometry(const Attributes& attrs, const Shape& x, const Shape& wt, const Shape* b) {
  ConvGeom g = conv_common(attrs, x, wt, b, false);
  g.w = forward_window(attrs, g.w.in, g.w.kernel);
  g.out_shape = {g.batch, g.out_ch};
  g.out_shape.insert(g.out_shape.end(), g.w.out.begin(), g.w.out.end());
  return g;
}

// Offsets of each kernel tap, per spatial dim: tap * dilation - pad_begin.
std::vector<Ints> tap_offsets(const Window& w) {
  std::vector<Ints> taps;
  Ints k(w.rank(), 0);
  for (int64_t t = 0, n = numel(w.kernel); t < n; ++t) {
    Ints off(w.rank());
    for (size_t d = 0; d < w.rank(); ++d) off[d] = k[d] * w.dilations[d] - w.pad_begin[d];
    taps.push_back(std::move(off));
    for (size_t d = w.rank(); d-- > 0 && ++k[d] == w.kernel[d];) k[d] = 0;
  }
  return taps;
}

namespace {

// ConvTranspose: out = stride * (in - 1) + output_padding + extent - pads, unless output_shape
// (or auto_pad SAME_*, which asks for in * stride) fixes the size and the pads follow from it.
ConvGeom conv_transpose_geometry(const Attributes& attrs, const Shape& x, const Shape& wt,
                                 const Shape* b) {
  ConvGeom g = conv_common(attrs, x, wt, b, true);
  Window& w = g.w;
  const size_t r = w.rank();
  w.strides = read_spatial(attrs, "strides", r, 1, 1);
  w.dilations = read_spatial(attrs, "dilations", r, 1, 1);
  const Ints out_pad = read_spatial(attrs, "output_padding", r, 0, 0);
  const AutoPad mode = read_auto_pad(attrs);
  Ints wanted;
  if (attrs.has("output_shape")) {
    wanted = attrs.get_ints("output_shape");
    if (wanted.size() == r + 2) wanted.erase(wanted.begin(), wanted.begin() + 2);  // [N, C, ...]
    SG_CHECK(wanted.size() == r) << "output_shape must have " << r << " values, got "
                                 << attrs.get_ints("output_shape").size();
  } else if (mode == AutoPad::same_upper || mode == AutoPad::same_lower) {
    for (size_t d = 0; d < r; ++d)
      wanted.push_back(checked_mul(w.in[d], w.strides[d], "the output size"));
  }
  const Ints pads = mode == AutoPad::notset && wanted.empty()
                        ? read_spatial(attrs, "pads", 2 * r, 0, 0)
                        : Ints(2 * r, 0);
  w.pad_begin.assign(pads.begin(), pads.begin() + r);
  w.pad_end.assign(pads.begin() + r, pads.end());
  w.out.resize(r);
  for (size_t d = 0; d < r; ++d) {
    SG_CHECK(w.kernel[d] >= 1) << "kernel size must be >= 1, got " << w.kernel[d]
                               << " along spatial dim " << d;
    const char* what = "the output size";
    const int64_t ext =
        checked_add(checked_mul(w.kernel[d] - 1, w.dilations[d], what), 1, what);  // extent
    const int64_t full = checked_add(
        checked_add(checked_mul(w.strides[d], w.in[d] - 1, what), out_pad[d], what), ext, what);
    if (!wanted.empty()) {
      SG_CHECK(wanted[d] >= 1) << "output_shape values must be >= 1, got " << wanted[d];
      const int64_t total = std::max<int64_t>(0, checked_add(full, -wanted[d], what));
      w.pad_begin[d] = mode == AutoPad::same_upper ? total / 2 : total - total / 2;
      w.pad_end[d] = total - w.pad_begin[d];
      w.out[d] = wanted[d];
    } else {
      w.out[d] = checked_add(full, -checked_add(w.pad_begin[d], w.pad_end[d], "the pads"), what);
      SG_CHECK(w.out[d] >= 1) << "pads " << w.pad_begin[d] << "+" << w.pad_end[d]
                              << " leave no output along spatial dim " << d << " (full size "
                              << full << ")";
    }
  }
  g.out_shape = {g.batch, g.out_ch};
  g.out_shape.insert(g.out_shape.end(), w.out.begin(), w.out.end());
  return g;
}

// For one kernel tap, walks the grid `from` row by row (rows run along the last dim) and maps
// each position p to q = p * stride + offset in the grid `to`, per dim. Calls f(p_row, q_row, lo,
// hi): positions p_row + j with j in [lo, hi) map to flat q_row + j * stride.back(); the others
// fall outside `to` (lo == hi when the whole row does).
template <class F>
void for_each_tap_row(const Ints& from, const Ints& to, const Ints& stride, const Ints& offset,
                      F&& f) {
  const size_t last = from.size() - 1;
  const int64_t len = from[last], s = stride[last], off = offset[last];
  if (numel(from) == 0) return;
  const int64_t lo = std::min(len, off >= 0 ? 0 : (-off + s - 1) / s);
  const int64_t hi =
      std::clamp<int64_t>(off >= to[last] ? 0 : (to[last] - 1 - off) / s + 1, lo, len);
  const Shape to_strides = strides_of(to);
  Ints idx(last, 0);
  for (int64_t p_row = 0, total = numel(from); p_row < total; p_row += len) {
    int64_t q_row = off;
    bool inside = true;
    for (size_t d = 0; d < last; ++d) {
      const int64_t q = idx[d] * stride[d] + offset[d];
      inside = inside && q >= 0 && q < to[d];
      q_row += q * to_strides[d];
    }
    f(p_row, q_row, inside ? lo : 0, inside ? hi : 0);
    for (size_t d = last; d-- > 0 && ++idx[d] == from[d];) idx[d] = 0;
  }
}

// col[(c * taps + t) * out + o] = x[c] at the input position tap t of output o reads (0 in pads).
template <class T>
void im2col(const T* x, int64_t channels, const Window& w, const std::vector<Ints>& taps, T* col) {
  const int64_t in = numel(w.in), out = numel(w.out), len = w.out.back(), s = w.strides.back();
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * in;
    for (size_t t = 0; t < taps.size(); ++t) {
      T* row = col + (c * static_cast<int64_t>(taps.size()) + static_cast<int64_t>(t)) * out;
      for_each_tap_row(w.out, w.in, w.strides, taps[t],
                       [&](int64_t p, int64_t q, int64_t lo, int64_t hi) {
                         std::fill(row + p, row + p + lo, T(0));
                         for (int64_t j = lo; j < hi; ++j) row[p + j] = xc[q + j * s];
                         std::fill(row + p + hi, row + p + len, T(0));
                       });
    }
  }
}

// y[m] at the output position tap t of input i writes += col[(m * taps + t) * in + i].
template <class T>
void col2im(const T* col, int64_t channels, const Window& w, const std::vector<Ints>& taps, T* y) {
  const int64_t in = numel(w.in), out = numel(w.out), s = w.strides.back();
  for (int64_t m = 0; m < channels; ++m) {
    T* ym = y + m * out;
    for (size_t t = 0; t < taps.size(); ++t) {
      const T* row = col + (m * static_cast<int64_t>(taps.size()) + static_cast<int64_t>(t)) * in;
      for_each_tap_row(w.in, w.out, w.strides, taps[t],
                       [&](int64_t p, int64_t q, int64_t lo, int64_t hi) {
                         for (int64_t j = lo; j < hi; ++j) ym[q + j * s] += row[p + j];
                       });
    }
  }
}

// Fills y [batch, channels, size] with the bias per channel, or zeros.
template <class T>
void fill_bias(T* y, int64_t batch, int64_t channels, int64_t size, const T* bias) {
  for (int64_t n = 0; n < batch * channels; ++n)
    std::fill(y + n * size, y + (n + 1) * size, bias ? bias[n % channels] : T(0));
}

template <class T>
void run_conv(KernelCtx& c) {
  const ConvGeom g = conv_geometry(c.attrs(), c.in[0].shape(), c.in[1].shape(),
                                   c.has(2) ? &c.in[2].shape() : nullptr);
  const Window& w = g.w;
  const int64_t cg = g.in_ch / g.group, mg = g.out_ch / g.group;
  const int64_t in = g.in_size(), out = g.out_size(), k = cg * g.taps();
  const T* x = c.in[0].data<T>();
  const T* wt = c.in[1].data<T>();
  T* y = c.out[0].data<T>();
  const T* bias = c.has(2) ? c.in[2].data<T>() : nullptr;
  if (bias) fill_bias(y, g.batch, g.out_ch, out, bias);
  // A 1x1 kernel with unit strides and no padding reads the input as it is.
  const bool pointwise = g.taps() == 1 &&
                         std::ranges::all_of(w.strides, [](int64_t s) { return s == 1; }) &&
                         std::ranges::all_of(w.pad_begin, [](int64_t p) { return p == 0; }) &&
                         std::ranges::all_of(w.pad_end, [](int64_t p) { return p == 0; });
  const std::vector<Ints> taps = tap_offsets(w);
  std::vector<T> col(pointwise ? 0 : static_cast<size_t>(k * out));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t gr = 0; gr < g.group; ++gr) {
      const T* xg = x + (n * g.in_ch + gr * cg) * in;
      if (!pointwise) im2col(xg, cg, w, taps, col.data());
      gemm<T>(mg, out, k, wt + gr * mg * k, false, pointwise ? xg : col.data(), false,
              y + (n * g.out_ch + gr * mg) * out, T(1), bias ? T(1) : T(0));
    }
  }
}

template <class T>
void run_conv_transpose(KernelCtx& c) {
  const ConvGeom g = conv_transpose_geometry(c.attrs(), c.in[0].shape(), c.in[1].shape(),
                                             c.has(2) ? &c.in[2].shape() : nullptr);
  const int64_t cg = g.in_ch / g.group, mg = g.out_ch / g.group;
  const int64_t in = g.in_size(), out = g.out_size(), rows = mg * g.taps();
  const T* x = c.in[0].data<T>();
  const T* wt = c.in[1].data<T>();
  T* y = c.out[0].data<T>();
  fill_bias(y, g.batch, g.out_ch, out, c.has(2) ? c.in[2].data<T>() : nullptr);
  const std::vector<Ints> taps = tap_offsets(g.w);
  std::vector<T> col(static_cast<size_t>(rows * in));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t gr = 0; gr < g.group; ++gr) {
      // col [mg * taps, in] = W_g^T [mg * taps, cg] * X_g [cg, in]
      gemm<T>(rows, in, cg, wt + gr * cg * rows, true, x + (n * g.in_ch + gr * cg) * in, false,
              col.data());
      col2im(col.data(), mg, g.w, taps, y + (n * g.out_ch + gr * mg) * out);
    }
  }
}

}  // namespace

// Conv(X, W, B?) {auto_pad, dilations, group, kernel_shape, pads, strides}
extern const Lowering kWindowLowering;  // window_jit.cpp
extern const OpDef kConv;
const OpDef kConv = with_symbolic_shape(
    window_symbolic_shape,
    with_lowering(
        &kWindowLowering,
        with_grad(grad_conv, {"Conv", 2, 3, 1, 1, types_conv,
                              [](ShapeCtx& c) {
                                c.out[0] = conv_geometry(c.attrs(), c.shape(0), c.shape(1),
                                                         c.has(2) ? &c.shape(2) : nullptr)
                                               .out_shape;
                              },
                              [](KernelCtx& c) {
                                visit_float(c.in[0].dtype(), [&]<class T>() { run_conv<T>(c); });
                              }})));

// ConvTranspose(X, W, B?) {Conv's attributes, output_padding, output_shape}
extern const OpDef kConvTranspose;
const OpDef kConvTranspose{"ConvTranspose",
                           2,
                           3,
                           1,
                           1,
                           types_conv,
                           [](ShapeCtx& c) {
                             c.out[0] = conv_transpose_geometry(c.attrs(), c.shape(0), c.shape(1),
                                                                c.has(2) ? &c.shape(2) : nullptr)
                                            .out_shape;
                           },
                           [](KernelCtx& c) {
                             visit_float(c.in[0].dtype(),
                                         [&]<class T>() { run_conv_transpose<T>(c); });
                           }};

}  // namespace sgraph::ops
