// InstanceNormalization, LRN and MeanVarianceNormalization: normalisations over [N, C, spatial...]
// inputs (MVN over any axes). Statistics are accumulated in double, whatever the input's dtype.
#include <algorithm>
#include <cmath>

#include "ops/op.h"
#include "ops/window.h"

namespace sgraph::ops {

// InstanceNormalization(x, scale, bias) {epsilon = 1e-5}: per (n, c) plane,
// y = scale[c] * (x - mean) / sqrt(var + epsilon) + bias[c] (population variance).
extern const OpDef kInstanceNormalization;
const OpDef kInstanceNormalization{
    "InstanceNormalization",
    3,
    3,
    1,
    1,
    [](TypeCtx& c) {
      c.expect_float(0);
      c.expect_same(0, 1);
      c.expect_same(0, 2);
      c.out[0] = c.in[0];
    },
    [](ShapeCtx& c) {
      spatial_dims(c.shape(0));
      const Shape want = {c.shape(0)[1]};
      for (size_t i = 1; i < 3; ++i)
        SG_CHECK(c.shape(i) == want) << "InstanceNormalization input " << i << " must have shape "
                                     << shape_str(want) << ", got " << shape_str(c.shape(i));
      shapes_same_as_input0(c);
    },
    [](KernelCtx& c) {
      const Tensor& x = c.in[0];
      const int64_t channels = x.dim(1), planes = x.dim(0) * channels;
      const int64_t size = planes == 0 ? 0 : x.numel() / planes;
      const double eps = c.attrs().get_float("epsilon", 1e-5);
      visit_float(x.dtype(), [&]<class T>() {
        const T *scale = c.in[1].data<T>(), *bias = c.in[2].data<T>();
        for (int64_t p = 0; p < planes; ++p) {
          const T* src = x.data<T>() + p * size;
          T* dst = c.out[0].data<T>() + p * size;
          double mean = 0, var = 0;
          for (int64_t i = 0; i < size; ++i) mean += src[i];
          mean /= static_cast<double>(size);
          for (int64_t i = 0; i < size; ++i) var += (src[i] - mean) * (src[i] - mean);
          var /= static_cast<double>(size);
          const double k = scale[p % channels] / std::sqrt(var + eps);
          for (int64_t i = 0; i < size; ++i)
            dst[i] = static_cast<T>((src[i] - mean) * k + bias[p % channels]);
        }
      });
    }};

// LRN(x) {size, alpha = 1e-4, beta = 0.75, bias = 1}: across channels,
// y = x / (bias + alpha / size * sum of x^2 over channels [c - (size-1)/2, c + ceil((size-1)/2)])
// ^ beta, the window clipped to the channels there are.
extern const OpDef kLRN;
const OpDef kLRN{
    "LRN",
    1,
    1,
    1,
    1,
    types_float_same,
    [](ShapeCtx& c) {
      spatial_dims(c.shape(0));
      const int64_t size = c.attrs().get_int("size");
      SG_CHECK(size >= 1) << "LRN size must be >= 1, got " << size;
      shapes_same_as_input0(c);
    },
    [](KernelCtx& c) {
      const Tensor& x = c.in[0];
      const int64_t n = x.dim(0), channels = x.dim(1);
      const int64_t plane = n * channels == 0 ? 0 : x.numel() / (n * channels);
      const int64_t size = c.attrs().get_int("size");
      const double alpha = c.attrs().get_float("alpha", 1e-4);
      const double beta = c.attrs().get_float("beta", 0.75);
      const double bias = c.attrs().get_float("bias", 1.0);
      const int64_t lo = (size - 1) / 2, hi = size / 2;  // size / 2 == ceil((size - 1) / 2)
      visit_float(x.dtype(), [&]<class T>() {
        const T* src = x.data<T>();
        T* dst = c.out[0].data<T>();
        for (int64_t b = 0; b < n; ++b)
          for (int64_t ch = 0; ch < channels; ++ch)
            for (int64_t s = 0; s < plane; ++s) {
              double sum = 0;
              const int64_t first = std::max<int64_t>(0, ch - lo);
              const int64_t last = std::min<int64_t>(channels - 1, ch + std::min(hi, channels));
              for (int64_t k = first; k <= last; ++k) {
                const double v = src[(b * channels + k) * plane + s];
                sum += v * v;
              }
              const int64_t i = (b * channels + ch) * plane + s;
              dst[i] = static_cast<T>(
                  src[i] / std::pow(bias + alpha / static_cast<double>(size) * sum, beta));
            }
      });
    }};

// MeanVarianceNormalization(x) {axes = [0, 2, 3]}: y = (x - mean) / (sqrt(var) + 1e-9), mean and
// (population) variance over `axes`, as ONNX's function body computes it.
namespace {

// The statistics' shape: x's with the normalised axes set to 1; throws on a bad or repeated axis.
Shape mvn_stats_shape(const Node& n, const Shape& x) {
  const int64_t r = static_cast<int64_t>(x.size());
  // (normalize_axis lets axis 0 through for a scalar, which has no axis to normalise over)
  SG_CHECK(r >= 1) << "MeanVarianceNormalization needs an input of rank >= 1, got a scalar";
  Shape s = x;
  std::vector<bool> seen(x.size(), false);
  for (int64_t a : n.attrs.get_ints("axes", Ints{0, 2, 3})) {
    a = normalize_axis(a, r, "axes");
    SG_CHECK(!seen[a]) << "MeanVarianceNormalization axis " << a << " is repeated";
    seen[a] = true;
    s[a] = 1;
  }
  return s;
}

}  // namespace

extern const OpDef kMeanVarianceNormalization;
const OpDef kMeanVarianceNormalization{
    "MeanVarianceNormalization",
    1,
    1,
    1,
    1,
    types_float_same,
    [](ShapeCtx& c) {
      mvn_stats_shape(c.node, c.shape(0));
      shapes_same_as_input0(c);
    },
    [](KernelCtx& c) {
      const Tensor& x = c.in[0];
      const Shape stats = mvn_stats_shape(c.node, x.shape());
      const int64_t groups = numel(stats);
      const double count = groups == 0 ? 0.0 : static_cast<double>(x.numel() / groups);
      const std::array<Shape, 1> to_stats = {broadcast_strides(stats, x.shape())};
      std::vector<double> mean(groups, 0.0), var(groups, 0.0);
      visit_float(x.dtype(), [&]<class T>() {
        const T* src = x.data<T>();
        T* dst = c.out[0].data<T>();
        for_each_broadcast(x.shape(), to_stats, [&](int64_t i, auto o) { mean[o[0]] += src[i]; });
        for (double& m : mean) m /= count;
        for_each_broadcast(x.shape(), to_stats, [&](int64_t i, auto o) {
          const double d = src[i] - mean[o[0]];
          var[o[0]] += d * d;
        });
        for (double& v : var) v = std::sqrt(v / count) + 1e-9;
        for_each_broadcast(x.shape(), to_stats, [&](int64_t i, auto o) {
          dst[i] = static_cast<T>((src[i] - mean[o[0]]) / var[o[0]]);
        });
      });
    }};

}  // namespace sgraph::ops
