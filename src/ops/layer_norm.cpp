// LayerNormalization (opset 17): Y = (X - mean) / sqrt(var + epsilon) * Scale + B, with mean and
// (population) variance over all dims from `axis` to the end. Optional outputs Mean and InvStdDev
// have X's shape with those dims set to 1 and the dtype named by stash_type (ONNX code, 1 = f32).
// The statistics are always computed in double, which is at least as precise as stash_type asks;
// Scale and B broadcast (numpy-style, unidirectionally) to X.shape[axis:].
#include <cmath>
#include <vector>

#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

DType stash_dtype(const Attributes& attrs) {
  const int64_t code = attrs.get_int("stash_type", 1);
  const DType t = dtype_from_onnx_code(code);
  SG_CHECK(is_float(t)) << "stash_type must name a float type (1 or 11), got " << code;
  return t;
}

void types_layer_norm(TypeCtx& c) {
  c.expect_float(0);
  c.expect_same(0, 1);
  if (c.has(2)) c.expect_same(0, 2);
  c.out[0] = c.in[0];
  const DType stash = stash_dtype(c.attrs());
  for (size_t k = 1; k < c.out.size(); ++k) c.out[k] = stash;
}

void shapes_layer_norm(ShapeCtx& c) {
  const Shape& x = c.shape(0);
  SG_CHECK(!x.empty()) << "X must have rank >= 1, got a scalar";
  const int64_t axis = op_axis(c.node, c.shape(0).size());
  const Shape norm(x.begin() + axis, x.end());
  for (size_t i = 1; i < 3; ++i) {
    if (!c.has(i)) continue;
    const Shape& s = c.shape(i);
    bool ok = s.size() <= norm.size();
    for (size_t d = 0; ok && d < s.size(); ++d) {
      const int64_t want = norm[norm.size() - s.size() + d];
      ok = s[d] == want || s[d] == 1;
    }
    SG_CHECK(ok) << (i == 1 ? "Scale" : "B") << " shape " << shape_str(s)
                 << " cannot be broadcast to the normalized shape " << shape_str(norm)
                 << " (X dims from axis " << axis << ")";
  }
  c.out[0] = x;
  Shape stat = x;
  for (size_t d = static_cast<size_t>(axis); d < stat.size(); ++d) stat[d] = 1;
  for (size_t k = 1; k < c.out.size(); ++k) c.out[k] = stat;
}

// `t` (Scale or B) broadcast to `norm` and flattened to numel(norm) values.
template <class T>
std::vector<T> expand_to(const Tensor& t, const Shape& norm) {
  std::vector<T> v(static_cast<size_t>(numel(norm)));
  const T* p = t.data<T>();
  for_each_broadcast<1>(norm, {broadcast_strides(t.shape(), norm)},
                        [&](int64_t i, const std::array<int64_t, 1>& o) { v[i] = p[o[0]]; });
  return v;
}

template <class T>
void layer_norm(KernelCtx& c, int64_t axis, std::vector<double>& mean, std::vector<double>& inv) {
  const Tensor& x = c.in[0];
  const Shape norm(x.shape().begin() + axis, x.shape().end());
  const int64_t n = numel(norm), rows = static_cast<int64_t>(mean.size());
  const std::vector<T> scale = expand_to<T>(c.in[1], norm);
  const std::vector<T> bias = c.has(2) ? expand_to<T>(c.in[2], norm) : std::vector<T>(n, T(0));
  const double eps = c.attrs().get_float("epsilon", 1e-5);
  const T* px = x.data<T>();
  T* py = c.out[0].data<T>();
  for (int64_t r = 0; r < rows; ++r, px += n, py += n) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += px[j];
    const double mu = s / static_cast<double>(n);  // NaN for an empty row, as numpy's mean
    double ss = 0;
    for (int64_t j = 0; j < n; ++j) ss += (px[j] - mu) * (px[j] - mu);
    const double is = 1 / std::sqrt(ss / static_cast<double>(n) + eps);
    mean[r] = mu;
    inv[r] = is;
    const T m = static_cast<T>(mu), k = static_cast<T>(is);
    for (int64_t j = 0; j < n; ++j) py[j] = (px[j] - m) * k * scale[j] + bias[j];
  }
}

void run_layer_norm(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const int64_t axis = op_axis(c.node, x.shape().size());
  int64_t rows = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= x.shape()[d];
  std::vector<double> mean(rows), inv(rows);
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) layer_norm<T>(c, axis, mean, inv);
  });
  for (size_t k = 1; k < c.out.size(); ++k) {
    const std::vector<double>& stat = k == 1 ? mean : inv;
    visit_dtype(c.out[k].dtype(), [&]<class U>() {
      U* p = c.out[k].data<U>();
      for (int64_t r = 0; r < rows; ++r) p[r] = static_cast<U>(stat[r]);
    });
  }
}

}  // namespace

extern const Lowering kLayerNormLowering;  // layer_norm_jit.cpp
extern const OpDef kLayerNormalization;
const OpDef kLayerNormalization = with_lowering(
    &kLayerNormLowering,
    OpDef{"LayerNormalization", 2, 3, 1, 3, types_layer_norm, shapes_layer_norm, run_layer_norm});

}  // namespace sgraph::ops
