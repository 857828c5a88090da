// ConvInteger and QLinearConv: Conv (Conv's attributes and geometry, src/ops/window.h) on 8-bit
// quantized operands, in integer arithmetic: acc = sum over channels and taps of
// (x - x_zero) * (w - w_zero[m]), accumulated in i32 (wrapping past its range, as the JIT's integer
// adds do). Padding reads x_zero, so a padded position adds nothing.
#include "ops/quantize.h"
#include "ops/window.h"

namespace sgraph::ops {
namespace {

// Walks a window's output positions in row-major order, giving for each the kernel taps that read
// inside the input, and where. (Out of line: GCC 12 inlining it into the kernels below warns
// falsely about freeing its vectors.)
class TapReads {
 public:
  explicit TapReads(const Window& w)
      : w_(w), offsets_(tap_offsets(w)), in_strides_(strides_of(w.in)), pos_(w.rank(), 0) {}
  // The (tap, flat input position) pairs of the next output position.
  [[gnu::noinline]] const std::vector<std::pair<int64_t, int64_t>>& next() {
    reads_.clear();
    for (size_t t = 0; t < offsets_.size(); ++t) {
      int64_t q = 0;
      bool inside = true;
      for (size_t d = 0; d < w_.rank() && inside; ++d) {
        const int64_t p = pos_[d] * w_.strides[d] + offsets_[t][d];
        inside = p >= 0 && p < w_.in[d];
        q += p * in_strides_[d];
      }
      if (inside) reads_.emplace_back(static_cast<int64_t>(t), q);
    }
    for (size_t d = w_.rank(); d-- > 0 && ++pos_[d] == w_.out[d];) pos_[d] = 0;
    return reads_;
  }

 private:
  const Window& w_;
  std::vector<Ints> offsets_;
  Shape in_strides_;
  Ints pos_;
  std::vector<std::pair<int64_t, int64_t>> reads_;
};

// Calls f(y_index, m, acc) for every element of the convolution of x [N, C, ...] and
// w [M, C / group, ...] (u8 or i8 each), with x's zero point x_zero and w's w_zero (one per output
// channel m), acc starting from bias[m] (nullptr: 0).
template <class F>
void int_conv(const Tensor& tx, const Tensor& tw, const ConvGeom& g, int32_t x_zero,
              const std::vector<int32_t>& w_zero, const int32_t* bias, F&& f) {
  const int64_t cg = g.in_ch / g.group, mg = g.out_ch / g.group;
  const int64_t in = g.in_size(), out = g.out_size(), taps = g.taps();
  TapReads walk(g.w);
  visit_quantized(tx.dtype(), [&]<class X>() {
    visit_quantized(tw.dtype(), [&]<class W>() {
      const X* x = tx.data<X>();
      const W* wt = tw.data<W>();
      for (int64_t o = 0; o < out; ++o) {
        const std::vector<std::pair<int64_t, int64_t>>& reads = walk.next();
        for (int64_t n = 0; n < g.batch; ++n)
          for (int64_t m = 0; m < g.out_ch; ++m) {
            const int64_t gr = m / mg;
            int32_t acc = bias ? bias[m] : 0;
            for (int64_t c = 0; c < cg; ++c) {
              const X* xc = x + (n * g.in_ch + gr * cg + c) * in;
              const W* wc = wt + (m * cg + c) * taps;
              for (const auto& [t, q] : reads)
                acc = wrap_add(acc, wrap_mul(int32_t{xc[q]} - x_zero, int32_t{wc[t]} - w_zero[m]));
            }
            f((n * g.out_ch + m) * out + o, m, acc);
          }
      }
    });
  });
}

// w's zero points, one per output channel (0 when absent).
std::vector<int32_t> w_zero_points(const Tensor* zp, int64_t out_ch) {
  std::vector<int32_t> z(static_cast<size_t>(out_ch), 0);
  if (!zp || !zp->defined()) return z;
  for (int64_t m = 0; m < out_ch; ++m)
    z[m] = static_cast<int32_t>(zp->at_double(zp->numel() == 1 ? 0 : m));
  return z;
}

// A per-tensor parameter: a scalar or a 1-element vector.
void check_scalar_param(const Shape& s, std::string_view what) {
  SG_CHECK(s.size() <= 1 && numel(s) == 1)
      << what << " must be a scalar (one for the whole tensor), got shape " << shape_str(s);
}

void shapes_conv_integer(ShapeCtx& c) {
  const ConvGeom g = conv_geometry(c.attrs(), c.shape(0), c.shape(1), nullptr);
  if (c.has(2)) check_scalar_param(c.shape(2), "x_zero_point");
  if (c.has(3)) check_row_param(c.shape(3), g.out_ch, "w_zero_point", "output channel");
  c.out[0] = g.out_shape;
}

void run_conv_integer(KernelCtx& c) {
  const ConvGeom g = conv_geometry(c.attrs(), c.in[0].shape(), c.in[1].shape(), nullptr);
  const int32_t x_zero = c.has(2) ? static_cast<int32_t>(c.in[2].at_double(0)) : 0;
  int32_t* y = c.out[0].data<int32_t>();
  int_conv(c.in[0], c.in[1], g, x_zero, w_zero_points(c.has(3) ? &c.in[3] : nullptr, g.out_ch),
           nullptr, [&](int64_t at, int64_t, int32_t acc) { y[at] = acc; });
}

// QLinearConv's inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B?.
void types_qlinear_conv(TypeCtx& c) {
  expect_quantized(c, 0);
  expect_quantized(c, 3);
  c.expect_same(0, 2);
  c.expect_same(3, 5);
  expect_quantized(c, 7);
  for (size_t s : {1, 4, 6}) c.expect_float(s);
  if (c.has(8)) c.expect_one_of(8, {DType::i32});
  c.out[0] = c.in[7];
}

void shapes_qlinear_conv(ShapeCtx& c) {
  const ConvGeom g =
      conv_geometry(c.attrs(), c.shape(0), c.shape(3), c.has(8) ? &c.shape(8) : nullptr);
  check_scalar_param(c.shape(1), "x_scale");
  check_scalar_param(c.shape(2), "x_zero_point");
  check_row_param(c.shape(4), g.out_ch, "w_scale", "output channel");
  check_row_param(c.shape(5), g.out_ch, "w_zero_point", "output channel");
  check_scalar_param(c.shape(6), "y_scale");
  check_scalar_param(c.shape(7), "y_zero_point");
  c.out[0] = g.out_shape;
}

// y = round((acc + B[m]) * x_scale * w_scale[m] / y_scale) + y_zero_point, saturated: the scales'
// ratio in f32 (the scales' own precision), its product with the i32 sum in f64.
void run_qlinear_conv(KernelCtx& c) {
  const ConvGeom g = conv_geometry(c.attrs(), c.in[0].shape(), c.in[3].shape(),
                                   c.has(8) ? &c.in[8].shape() : nullptr);
  const std::vector<double> sw = param_values(&c.in[4]);
  const double sx = c.in[1].at_double(0), sy = c.in[6].at_double(0), zy = c.in[7].at_double(0);
  check_divisor_scales({sy}, "y_scale");
  const int32_t x_zero = static_cast<int32_t>(c.in[2].at_double(0));
  std::vector<float> ratio(static_cast<size_t>(g.out_ch));
  for (int64_t m = 0; m < g.out_ch; ++m)
    ratio[m] = static_cast<float>(sx) * static_cast<float>(sw[sw.size() == 1 ? 0 : m]) /
               static_cast<float>(sy);
  visit_quantized(c.out[0].dtype(), [&]<class Q>() {
    Q* y = c.out[0].data<Q>();
    int_conv(c.in[0], c.in[3], g, x_zero, w_zero_points(&c.in[5], g.out_ch),
             c.has(8) ? c.in[8].data<int32_t>() : nullptr, [&](int64_t at, int64_t m, int32_t acc) {
               y[at] = quantize_value<Q>(static_cast<double>(acc) * ratio[m], zy);
             });
  });
}

}  // namespace

// ConvInteger(x, w, x_zero_point?, w_zero_point?) {Conv's attributes} -> i32: x and w u8 or i8,
// x_zero_point a scalar with x's dtype, w_zero_point a scalar or one per output channel with w's.
extern const OpDef kConvInteger;
const OpDef kConvInteger{
    "ConvInteger", 2, 4, 1, 1, types_integer_contraction, shapes_conv_integer, run_conv_integer};

// QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?)
// {Conv's attributes}: y has y_zero_point's dtype; w's scale and zero point are scalars or one per
// output channel, the others scalars; B is i32, one per output channel, added to the sum.
extern const OpDef kQLinearConv;
const OpDef kQLinearConv{"QLinearConv",   8, 9, 1, 1, types_qlinear_conv, shapes_qlinear_conv,
                         run_qlinear_conv};

}  // namespace sgraph::ops
