// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: linear quantization of float
// tensors to 8-bit integers and back, y = saturate(round(x / scale) + zero_point) and
// x = (y - zero_point) * scale, rounding half to even. A scale and zero point apply to the whole
// tensor (a scalar or 1-element vector), to each slice along `axis` (a vector, "per-axis"), or to
// each block of `block_size` elements along `axis` (a tensor of x's rank, "blocked").
#include "ops/quantize.h"

#include <algorithm>

namespace sgraph::ops {

void expect_quantized(const TypeCtx& c, size_t i) { c.expect_one_of(i, {DType::u8, DType::i8}); }

void types_integer_contraction(TypeCtx& c) {
  expect_quantized(c, 0);
  expect_quantized(c, 1);
  if (c.has(2)) c.expect_same(0, 2);
  if (c.has(3)) c.expect_same(1, 3);
  c.out[0] = DType::i32;
}

void check_row_param(const Shape& param, int64_t count, std::string_view what,
                     std::string_view along) {
  const bool scalar = param.size() <= 1 && numel(param) == 1;
  SG_CHECK(scalar || (param.size() == 1 && param[0] == count))
      << what << " must be a scalar or have shape [" << count << "] (one per " << along << "), got "
      << shape_str(param);
}

std::vector<double> param_values(const Tensor* t) {
  std::vector<double> v;
  if (!t || !t->defined()) return v;
  v.resize(static_cast<size_t>(t->numel()));
  for (int64_t i = 0; i < t->numel(); ++i) v[i] = t->at_double(i);
  return v;
}

void check_divisor_scales(const std::vector<double>& scales, std::string_view what) {
  for (double s : scales)
    SG_CHECK(s > 0 && std::isfinite(s)) << what << " must be positive and finite, got " << s;
}

namespace {

// How a (de)quantization's scale maps onto x: the scale of element (o, d, i) of x viewed as
// [outer, dim, inner] around `axis` is scale[(o * blocks + d / block) * inner + i] when blocked,
// scale[d] per axis, scale[0] per tensor.
struct QuantLayout {
  enum Kind { per_tensor, per_axis, blocked } kind = per_tensor;
  AxisSplit split{1, 1, 1};  // x around the axis (per tensor: [1, numel, 1])
  int64_t block = 1, blocks = 1;
  int64_t index(int64_t o, int64_t d, int64_t i) const {
    switch (kind) {
      case per_tensor:
        return 0;
      case per_axis:
        return d;
      case blocked:
        return (o * blocks + d / block) * split.inner + i;
    }
    return 0;
  }
};

// The layout of scale (input 1) and zero point (input 2, nullptr when absent) over x, checked.
QuantLayout quant_layout(const Node& n, const Shape& x, const Shape& scale, const Shape* zp) {
  if (zp)
    SG_CHECK(*zp == scale) << "the zero point's shape " << shape_str(*zp)
                           << " differs from the scale's " << shape_str(scale);
  QuantLayout q;
  const int64_t block = n.attrs.get_int("block_size", 0);
  SG_CHECK(block >= 0) << "block_size must be >= 0, got " << block;
  if (block == 0 && scale.size() <= 1 && numel(scale) == 1) {  // per tensor
    q.split = {1, numel(x), 1};
    return q;
  }
  const int64_t rank = static_cast<int64_t>(x.size());
  SG_CHECK(rank >= 1) << "a scale of shape " << shape_str(scale)
                      << " needs an input of rank >= 1 to apply along an axis, got a scalar";
  const int64_t axis = normalize_axis(n.attrs.get_int("axis", 1), rank);
  q.split = split_at_axis(x, axis);
  if (block == 0) {
    SG_CHECK(scale.size() == 1 && scale[0] == x[axis])
        << "a per-axis scale must have shape [" << x[axis] << "] (input dim " << axis << " of "
        << shape_str(x) << "), got " << shape_str(scale);
    q.kind = QuantLayout::per_axis;
    return q;
  }
  q.kind = QuantLayout::blocked;
  q.block = block;
  q.blocks = x[axis] == 0 ? 0 : (x[axis] - 1) / block + 1;
  Shape want = x;
  want[axis] = q.blocks;
  SG_CHECK(scale == want) << "with block_size " << block << " along axis " << axis
                          << ", the scale must have shape " << shape_str(want) << " for input "
                          << shape_str(x) << ", got " << shape_str(scale);
  return q;
}

// QuantizeLinear's output dtype: the zero point's, else output_dtype's, else u8.
DType quantized_type(const TypeCtx& c) {
  std::optional<DType> attr;
  if (c.attrs().has("output_dtype") && c.attrs().get_int("output_dtype") != 0) {
    const int64_t code = c.attrs().get_int("output_dtype");
    SG_CHECK(code == onnx_dtype_code(DType::u8) || code == onnx_dtype_code(DType::i8))
        << "output_dtype " << code << " is not supported (uint8 or int8 only)";
    attr = dtype_from_onnx_code(code);
  }
  if (!c.has(2)) return attr.value_or(DType::u8);
  expect_quantized(c, 2);
  SG_CHECK(!attr || *attr == c.in[2])
      << "output_dtype " << dtype_name(*attr) << " differs from the zero point's dtype "
      << dtype_name(c.in[2]);
  return c.in[2];
}

void types_quantize(TypeCtx& c) {
  c.expect_one_of(0, {DType::f32, DType::f64, DType::i32});
  c.expect_float(1);
  c.out[0] = quantized_type(c);
}

void shapes_quant(ShapeCtx& c) {
  quant_layout(c.node, c.shape(0), c.shape(1), c.has(2) ? &c.shape(2) : nullptr);
  c.out[0] = c.shape(0);
}

// Calls f(o, d, i, element, param) for every element of x in row-major order.
template <class F>
void for_each_quant(const QuantLayout& q, F&& f) {
  const AxisSplit& s = q.split;
  int64_t e = 0;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t d = 0; d < s.dim; ++d)
      for (int64_t i = 0; i < s.inner; ++i, ++e) f(e, q.index(o, d, i));
}

void run_quantize(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const QuantLayout q =
      quant_layout(c.node, x.shape(), c.in[1].shape(), c.has(2) ? &c.in[2].shape() : nullptr);
  const std::vector<double> scale = param_values(&c.in[1]);
  check_divisor_scales(scale, "y_scale");
  const std::vector<double> zp = param_values(c.has(2) ? &c.in[2] : nullptr);
  // f32 over f32 divides in f32 (as ONNX's reference does), anything else in f64.
  const bool single = x.dtype() == DType::f32 && c.in[1].dtype() == DType::f32;
  visit_quantized(c.out[0].dtype(), [&]<class Q>() {
    Q* y = c.out[0].data<Q>();
    visit_dtype(x.dtype(), [&]<class X>() {
      if constexpr (std::is_same_v<X, float> || std::is_same_v<X, double> ||
                    std::is_same_v<X, int32_t>) {
        const X* xs = x.data<X>();
        for_each_quant(q, [&](int64_t e, int64_t p) {
          const double z = zp.empty() ? 0.0 : zp[p];
          y[e] = single
                     ? quantize_value<Q>(static_cast<float>(xs[e]) / static_cast<float>(scale[p]),
                                         static_cast<float>(z))
                     : quantize_value<Q>(static_cast<double>(xs[e]) / scale[p], z);
        });
      }
    });
  });
}

void types_dequantize(TypeCtx& c) {
  c.expect_one_of(0, {DType::u8, DType::i8, DType::i32});
  c.expect_float(1);
  if (c.has(2)) c.expect_same(0, 2);
  c.out[0] = c.in[1];
}

void run_dequantize(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const QuantLayout q =
      quant_layout(c.node, x.shape(), c.in[1].shape(), c.has(2) ? &c.in[2].shape() : nullptr);
  std::vector<int64_t> zp;
  if (c.has(2)) {
    zp.resize(static_cast<size_t>(c.in[2].numel()));
    for (int64_t i = 0; i < c.in[2].numel(); ++i)
      zp[i] = static_cast<int64_t>(c.in[2].at_double(i));
  }
  visit_float(c.out[0].dtype(), [&]<class F>() {
    const F* scale = c.in[1].data<F>();
    F* y = c.out[0].data<F>();
    visit_dtype(x.dtype(), [&]<class X>() {
      if constexpr (std::is_integral_v<X> && !std::is_same_v<X, bool>) {
        const X* xs = x.data<X>();
        // x - zero_point in int64: exact for every i32 pair.
        for_each_quant(q, [&](int64_t e, int64_t p) {
          const int64_t v = static_cast<int64_t>(xs[e]) - (zp.empty() ? 0 : zp[p]);
          y[e] = static_cast<F>(v) * scale[p];
        });
      }
    });
  });
}

// DynamicQuantizeLinear(x f32) -> y u8, y_scale f32 [], y_zero_point u8 []: the scale and zero
// point that map [min(x, 0), max(x, 0)] onto [0, 255], and x quantized with them. An input of
// zeros (or empty) has no range: scale 0, zero point 0, y all 0.
void run_dynamic_quantize(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const float* xs = x.data<float>();
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(xs[i])) {
      lo = hi = xs[i];
      break;
    }
    lo = std::min(lo, xs[i]);
    hi = std::max(hi, xs[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  uint8_t* y = c.out[0].data<uint8_t>();
  if (!(scale > 0) || !std::isfinite(scale)) {
    // No range (all zeros), or one that is not finite (NaN or an infinity in x): no scale
    // quantizes it meaningfully; y and the zero point are 0, the scale tells which case it was.
    std::fill(y, y + x.numel(), uint8_t{0});
    c.out[1].data<float>()[0] = scale;
    c.out[2].data<uint8_t>()[0] = 0;
    return;
  }
  const float zp = static_cast<float>(quantize_value<uint8_t>(-lo / scale, 0.0f));
  for (int64_t i = 0; i < x.numel(); ++i) y[i] = quantize_value<uint8_t>(xs[i] / scale, zp);
  c.out[1].data<float>()[0] = scale;
  c.out[2].data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

}  // namespace

// QuantizeLinear(x, y_scale, y_zero_point?) {axis = 1, block_size = 0, output_dtype, saturate}:
// x f32, f64 or i32; y_scale f32 or f64, positive; y the zero point's dtype (u8 or i8; u8 when
// absent). saturate only concerns float8 outputs, which sgraph does not have.
extern const OpDef kQuantizeLinear;
const OpDef kQuantizeLinear{"QuantizeLinear", 2,           3, 1, 1, types_quantize,
                            shapes_quant,     run_quantize};

// DequantizeLinear(x, x_scale, x_zero_point?) {axis = 1, block_size = 0}: x u8, i8 or i32 (whose
// zero point ONNX requires to be 0; sgraph subtracts whatever it is); y has the scale's dtype.
extern const OpDef kDequantizeLinear;
const OpDef kDequantizeLinear{"DequantizeLinear", 2, 3, 1, 1, types_dequantize, shapes_quant,
                              run_dequantize};

extern const OpDef kDynamicQuantizeLinear;
const OpDef kDynamicQuantizeLinear{"DynamicQuantizeLinear",
                                   1,
                                   1,
                                   3,
                                   3,
                                   [](TypeCtx& c) {
                                     c.expect_one_of(0, {DType::f32});
                                     c.out = {DType::u8, DType::f32, DType::u8};
                                   },
                                   [](ShapeCtx& c) {
                                     c.out[0] = c.shape(0);
                                     c.out[1] = {};
                                     c.out[2] = {};
                                   },
                                   run_dynamic_quantize};

}  // namespace sgraph::ops
