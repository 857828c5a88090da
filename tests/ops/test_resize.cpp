// Resize: hand-computed cases for every mode, coordinate transformation mode and nearest mode,
// scales vs sizes, the Upsample/Resize-10 form, the opset-18 attributes, N-d resizes, dtypes and
// one case per error; then random inputs against a reference that computes each output element
// on its own, the way ONNX's reference does (recursive 1-D interpolation over the axes, the
// fraction taken in (0, 1], neighbours picked around it and clamped to the edges).
#include <algorithm>
#include <random>
#include <string>

#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;
using namespace std::string_literals;

namespace {

Tensor scales_of(const std::vector<float>& s) {
  return Tensor::from<float>({static_cast<int64_t>(s.size())}, s);
}
Tensor with_scales(const Tensor& x, const std::vector<float>& s, Attributes a = {}) {
  return run_op(OpKind::Resize, {x, {}, scales_of(s)}, std::move(a))[0];
}
Tensor with_sizes(const Tensor& x, const Ints& s, Attributes a = {}) {
  return run_op(OpKind::Resize, {x, {}, {}, ints(s)}, std::move(a))[0];
}
Attributes linear(std::string coord = "half_pixel") {
  return {{"mode", "linear"s}, {"coordinate_transformation_mode", std::move(coord)}};
}
Attributes nearest(std::string coord, std::string rounding) {
  return {{"mode", "nearest"s},
          {"coordinate_transformation_mode", std::move(coord)},
          {"nearest_mode", std::move(rounding)}};
}

// ---- the per-element reference ---------------------------------------------------------------

struct Spec {
  std::string mode = "nearest", coord = "half_pixel", rounding = "round_prefer_floor";
  double a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;
};
struct RefAxis {
  int64_t out;
  double scale, roi0 = 0, roi1 = 1;
};

double keys(double d, double a) {
  d = std::abs(d);
  if (d <= 1) return (a + 2) * d * d * d - (a + 3) * d * d + 1;
  if (d < 2) return a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a;
  return 0;
}

// The source indices (unclamped) and coefficients for output index x of one axis, as in the ONNX
// reference; false when tf_crop_and_resize samples outside the input.
bool taps(const Spec& s, int64_t in, const RefAxis& ax, int64_t x, Ints& idx,
          std::vector<double>& c) {
  const double n = static_cast<double>(in), out = static_cast<double>(ax.out), sc = ax.scale;
  double xo;
  if (s.coord == "half_pixel") {
    xo = (x + 0.5) / sc - 0.5;
  } else if (s.coord == "half_pixel_symmetric") {
    xo = n / 2 * (1 - out / (sc * n)) + (x + 0.5) / sc - 0.5;
  } else if (s.coord == "pytorch_half_pixel") {
    xo = ax.out > 1 ? (x + 0.5) / sc - 0.5 : 0;
  } else if (s.coord == "align_corners") {
    xo = ax.out > 1 ? x * (n - 1) / (out - 1) : 0;
  } else if (s.coord == "asymmetric") {
    xo = x / sc;
  } else if (s.coord == "tf_half_pixel_for_nn") {
    xo = (x + 0.5) / sc;
  } else {
    xo = ax.out > 1 ? x * (ax.roi1 - ax.roi0) * (n - 1) / (out - 1) + ax.roi0 * (n - 1)
                    : 0.5 * (ax.roi0 + ax.roi1) * (n - 1);
    if (xo < 0 || xo > n - 1) return false;
  }
  int64_t xi = static_cast<int64_t>(std::floor(xo));
  double r = xo - static_cast<double>(xi);
  if (r == 0) {  // the ratio is in (0, 1]: prefer the neighbour on the left
    r = 1;
    --xi;
  }
  idx.clear();
  c.clear();
  if (s.mode == "nearest") {
    bool right = true;  // ceil, or an integer coordinate
    if (r < 1 && s.rounding == "round_prefer_floor") right = r > 0.5;
    if (r < 1 && s.rounding == "round_prefer_ceil") right = r >= 0.5;
    if (r < 1 && s.rounding == "floor") right = false;
    idx = {xi + (right ? 1 : 0)};
    c = {1.0};
    return true;
  }
  const double support = s.mode == "linear" ? 1 : 2;
  const double e = s.antialias ? std::min(sc, 1.0) : 1.0;
  const int64_t start = static_cast<int64_t>(std::floor(-support / e)) + 1;
  for (int64_t i = start; i < 2 - start; ++i) {
    idx.push_back(xi + i);
    const double d = e * (static_cast<double>(i) - r);
    c.push_back(s.mode == "linear" ? std::max(0.0, 1 - std::abs(d)) : keys(d, s.a));
  }
  if (s.exclude_outside)
    for (size_t k = 0; k < idx.size(); ++k)
      if (idx[k] < 0 || idx[k] >= in) c[k] = 0;
  if (s.antialias || s.exclude_outside) {
    double sum = 0;
    for (double v : c) sum += v;
    for (double& v : c) v /= sum;
  }
  return true;
}

double ref_element(const Tensor& x, const std::vector<RefAxis>& axes, const Spec& s, const Ints& o,
                   size_t d, int64_t offset) {
  if (d == axes.size()) return x.at_double(offset);
  Ints idx;
  std::vector<double> c;
  const int64_t in = x.shape()[d];
  if (!taps(s, in, axes[d], o[d], idx, c)) return s.extrapolation;
  int64_t stride = 1;
  for (size_t k = d + 1; k < axes.size(); ++k) stride *= x.shape()[k];
  double v = 0;
  for (size_t k = 0; k < idx.size(); ++k) {
    const int64_t i = std::clamp<int64_t>(idx[k], 0, in - 1);
    v += c[k] * ref_element(x, axes, s, o, d + 1, offset + i * stride);
  }
  return v;
}

Expected reference(const Tensor& x, const std::vector<RefAxis>& axes, const Spec& s) {
  Expected e;
  for (const RefAxis& a : axes) e.shape.push_back(a.out);
  for (int64_t i = 0; i < numel(e.shape); ++i)
    e.values.push_back(ref_element(x, axes, s, unravel(i, e.shape), 0, 0));
  return e;
}

Attributes attrs_of(const Spec& s) {
  return {{"mode", s.mode},
          {"coordinate_transformation_mode", s.coord},
          {"nearest_mode", s.rounding},
          {"cubic_coeff_a", s.a},
          {"exclude_outside", int64_t{s.exclude_outside}},
          {"extrapolation_value", s.extrapolation},
          {"antialias", int64_t{s.antialias}}};
}

}  // namespace

// ---- hand-computed cases ---------------------------------------------------------------------

TEST_CASE("Resize: nearest, half_pixel upsampling and downsampling") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  // half_pixel, scale 2: x_in = (x + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 -> 0, 0, 1, 1
  check_close(with_scales(x, {1, 1, 2, 2}), {1, 1, 4, 4},
              {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // width scale 3: (x + 0.5) / 3 - 0.5 = -1/3, 0, 1/3, 2/3, 1, 4/3 -> 0, 0, 0, 1, 1, 1
  check_close(with_scales(x, {1, 1, 2, 3}), {1, 1, 4, 6},
              {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  // 4x4 = 1..16, scale 0.5: (x + 0.5) * 2 - 0.5 = 0.5, 2.5 -> round_prefer_floor: 0, 2
  check_close(with_scales(iota<float>({1, 1, 4, 4}, 1), {1, 1, 0.5f, 0.5f}), {1, 1, 2, 2},
              {1, 3, 9, 11});
}

TEST_CASE("Resize: each nearest_mode, asymmetric") {
  // [10, 20] upsampled by 4: x_in = x / 4 = 0, .25, .5, .75, 1, 1.25, 1.5, 1.75 (clamped to 1)
  const Tensor x = f32({2}, {10, 20});
  check_close(with_scales(x, {4}, nearest("asymmetric", "floor")), {8},
              {10, 10, 10, 10, 20, 20, 20, 20});
  check_close(with_scales(x, {4}, nearest("asymmetric", "ceil")), {8},
              {10, 20, 20, 20, 20, 20, 20, 20});
  check_close(with_scales(x, {4}, nearest("asymmetric", "round_prefer_floor")), {8},
              {10, 10, 10, 20, 20, 20, 20, 20});
  check_close(with_scales(x, {4}, nearest("asymmetric", "round_prefer_ceil")), {8},
              {10, 10, 20, 20, 20, 20, 20, 20});
}

TEST_CASE("Resize: nearest with align_corners, pytorch_half_pixel and tf_half_pixel_for_nn") {
  // [0, 10, 20] to 5 with align_corners: x_in = x * 2 / 4 = 0, .5, 1, 1.5, 2
  const Tensor x = f32({3}, {0, 10, 20});
  check_close(with_sizes(x, {5}, nearest("align_corners", "round_prefer_floor")), {5},
              {0, 0, 10, 10, 20});
  check_close(with_sizes(x, {5}, nearest("align_corners", "round_prefer_ceil")), {5},
              {0, 10, 10, 20, 20});
  // pytorch_half_pixel to one element samples x_in = 0; half_pixel samples 3 / 2 - 0.5 = 1
  check_close(with_sizes(x, {1}, nearest("pytorch_half_pixel", "round_prefer_floor")), {1}, {0});
  check_close(with_sizes(x, {1}, nearest("half_pixel", "round_prefer_floor")), {1}, {10});
  // 4x4 = 1..16 to [3, 2]: rows (x + .5) / .75 = .67, 2, 3.33 -> 1, 2, 3; columns (x + .5) * 2
  // = 1, 3
  check_close(with_sizes(iota<float>({1, 1, 4, 4}, 1), {1, 1, 3, 2},
                         nearest("tf_half_pixel_for_nn", "round_prefer_floor")),
              {1, 1, 3, 2}, {6, 8, 10, 12, 14, 16});
}

TEST_CASE("Resize: linear with each coordinate mode, upsampling") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  // half_pixel: positions -.25, .25, .75, 1.25 clamp to 0, .25, .75, 1 on both axes;
  // rows [1, 1.25, 1.75, 2] and [3, 3.25, 3.75, 4], then mixed with weights .25 and .75
  check_close(with_scales(x, {1, 1, 2, 2}, linear()), {1, 1, 4, 4},
              {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  // align_corners: positions 0, 1/3, 2/3, 1
  check_close(with_scales(x, {1, 1, 2, 2}, linear("align_corners")), {1, 1, 4, 4},
              {1, 4. / 3, 5. / 3, 2, 5. / 3, 2, 7. / 3, 8. / 3, 7. / 3, 8. / 3, 3, 10. / 3, 3,
               10. / 3, 11. / 3, 4});
  // asymmetric (Upsample's linear): positions 0, .5, 1, 1.5 -> the last one clamps to 1
  check_close(with_scales(x, {1, 1, 2, 2}, linear("asymmetric")), {1, 1, 4, 4},
              {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4});
}

TEST_CASE("Resize: linear downsampling, pytorch_half_pixel and half_pixel_symmetric") {
  // 4x4 with v(h, w) = 1 + 4h + w, scale 0.5: half_pixel samples 0.5 and 2.5 on both axes
  const Tensor x = iota<float>({1, 1, 4, 4}, 1);
  check_close(with_scales(x, {1, 1, 0.5f, 0.5f}, linear()), {1, 1, 2, 2}, {3.5, 5.5, 11.5, 13.5});
  check_close(with_scales(x, {1, 1, 0.5f, 0.5f}, linear("align_corners")), {1, 1, 2, 2},
              {1, 4, 13, 16});
  check_close(with_scales(x, {1, 1, 0.5f, 0.5f}, linear("asymmetric")), {1, 1, 2, 2},
              {1, 3, 9, 11});
  // To [3, 1]: rows (x + .5) / .75 - .5 = 1/6, 1.5, 17/6. The single column samples 0 with
  // pytorch_half_pixel, 4 / 2 - .5 = 1.5 with half_pixel.
  check_close(with_sizes(x, {1, 1, 3, 1}, linear("pytorch_half_pixel")), {1, 1, 3, 1},
              {1 + 4. / 6, 7, 1 + 4 * 17. / 6});
  check_close(with_sizes(x, {1, 1, 3, 1}, linear()), {1, 1, 3, 1},
              {2.5 + 4. / 6, 8.5, 2.5 + 4 * 17. / 6});
  // [0, 10, 20, 30] by 0.6 -> 2 outputs. half_pixel: 1/3, 2. half_pixel_symmetric shifts by
  // (4 / 2) * (1 - 2 / 2.4) = 1/3: 2/3, 7/3.
  const Tensor r = f32({4}, {0, 10, 20, 30});
  check_close(with_scales(r, {0.6f}, linear()), {2}, {10. / 3, 20}, 1e-5);
  check_close(with_scales(r, {0.6f}, linear("half_pixel_symmetric")), {2}, {20. / 3, 70. / 3},
              1e-5);
}

TEST_CASE("Resize: cubic, default a and a = -0.5 with exclude_outside") {
  // [1, 2, 4, 8] by 2, asymmetric: x_in = 0, .5, 1, ..., 3.5. At t = .5 the a = -.75 weights
  // are c(1.5) = -0.09375 and c(.5) = 0.59375; indices below 0 or above 3 read the edge.
  // x_in = .5: -.09375 * 1 + .59375 * 1 + .59375 * 2 - .09375 * 4 = 1.3125
  // x_in = 1.5: -.09375 + 1.1875 + 2.375 - .75 = 2.71875
  // x_in = 2.5: -.1875 + 2.375 + 4.75 - .75 = 6.1875;  x_in = 3.5: -.375 + 4.75 + 4.75 - .75
  const Tensor x = f32({4}, {1, 2, 4, 8});
  const Attributes cubic{{"mode", "cubic"s}, {"coordinate_transformation_mode", "asymmetric"s}};
  check_close(with_scales(x, {2}, cubic), {8}, {1, 1.3125, 2, 2.71875, 4, 6.1875, 8, 8.375});
  // a = -0.5: c(.5) = 0.5625, c(1.5) = -0.0625; exclude_outside drops taps outside [0, 3] and
  // renormalises: x_in = .5: (.5625 * 1 + .5625 * 2 - .0625 * 4) / 1.0625 = 1.4375 / 1.0625;
  // 1.5: -.0625 + 1.125 + 2.25 - .5 = 2.8125; 2.5: (-.125 + 2.25 + 4.5) / 1.0625;
  // 3.5: (-.0625 * 4 + .5625 * 8) / .5 = 8.5
  Attributes excl = cubic;
  excl.set("cubic_coeff_a", -0.5);
  excl.set("exclude_outside", int64_t{1});
  check_close(with_scales(x, {2}, excl), {8},
              {1, 1.4375 / 1.0625, 2, 2.8125, 4, 6.625 / 1.0625, 8, 8.5});
}

TEST_CASE("Resize: antialias widens the linear filter when downsampling") {
  // [1, 2, 4, ..., 128] by 0.5, half_pixel: x_in = .5, 2.5, 4.5, 6.5. The filter is stretched to
  // 1 - |d| / 2: taps at distance -1.5, -.5, .5, 1.5 weigh .25, .75, .75, .25, normalised to
  // .125, .375, .375, .125. x_in = .5 reads [1, 1, 2, 4] (index -1 is the edge) -> 1.75.
  const Tensor x = f32({8}, {1, 2, 4, 8, 16, 32, 64, 128});
  Attributes aa = linear();
  aa.set("antialias", int64_t{1});
  check_close(with_scales(x, {0.5f}, aa), {4}, {1.75, 6.75, 27, 92});
  check_close(with_scales(x, {0.5f}, linear()), {4}, {1.5, 6, 24, 96});
  // Upsampling is unaffected.
  check_close(with_scales(f32({2}, {1, 3}), {2}, aa), {4}, {1, 1.5, 2.5, 3});
}

TEST_CASE("Resize: tf_crop_and_resize with roi and extrapolation_value") {
  // [0, 10, 20, 30, 40], roi [.25, 1.25]: x_in = .25 * 4 + x * 1 * 4 / 2 = 1, 3, 5 (outside)
  const Tensor x = f32({5}, {0, 10, 20, 30, 40});
  Attributes crop = linear("tf_crop_and_resize");
  crop.set("extrapolation_value", 99.0);
  check_close(run_op(OpKind::Resize, {x, f32({2}, {0.25f, 1.25f}), {}, ints({3})}, crop)[0], {3},
              {10, 30, 99});
  // One output samples the roi's centre: .5 * (0 + .5) * 4 = 1
  check_close(run_op(OpKind::Resize, {x, f32({2}, {0, 0.5f}), {}, ints({1})}, crop)[0], {1}, {10});
  // Nearest, roi [.1, .9]: x_in = .4, 2, 3.6 -> 0, 2, 4
  check_close(run_op(OpKind::Resize, {x, f32({2}, {0.1f, 0.9f}), {}, ints({3})},
                     nearest("tf_crop_and_resize", "round_prefer_floor"))[0],
              {3}, {0, 20, 40});
  // 2-D: rows inside, the second column outside -> that whole column is the extrapolation value
  const Tensor y = run_op(OpKind::Resize,
                          {iota<float>({2, 2}), f32({4}, {0, 0, 1, 2}), {}, ints({2, 2})}, crop)[0];
  check_close(y, {2, 2}, {0, 99, 2, 99});
  // Integer dtypes take the (saturated) value too.
  const Tensor u =
      run_op(OpKind::Resize, {Tensor::from<uint8_t>({2}, {7, 9}), f32({2}, {0, 3}), {}, ints({2})},
             {{"coordinate_transformation_mode", "tf_crop_and_resize"s},
              {"extrapolation_value", 300.0}})[0];
  check_close(u, {2}, {7, 255});
}

TEST_CASE("Resize: the scales decide the transform, sizes use out / in") {
  // [0, 10] to 3 elements, linear half_pixel. scale 1.7 -> floor(3.4) = 3, x_in = (x + .5) /
  // 1.7 - .5 = -0.2059, 0.3824, 0.9706; sizes 3 means scale 1.5: -1/6, .5, 7/6.
  const Tensor x = f32({2}, {0, 10});
  check_close(with_scales(x, {1.7f}, linear()), {3},
              {0, 10 * (1.5 / 1.7 - 0.5), 10 * (2.5 / 1.7 - 0.5)}, 1e-5);
  check_close(with_sizes(x, {3}, linear()), {3}, {0, 5, 10});
  // The same resize through either input when scale == out / in.
  const Tensor r = random_f32({1, 2, 3, 5}, 11);
  check_close(with_scales(r, {1, 1, 2, 0.6f}, linear()), with_sizes(r, {1, 2, 6, 3}, linear()));
  // An empty tensor counts as absent (opset 11 passes an empty scales with sizes).
  check_close(run_op(OpKind::Resize, {x, f32({0}, {}), f32({0}, {}), ints({3})}, linear())[0], {3},
              {0, 5, 10});
}

TEST_CASE("Resize: the Upsample / Resize-10 form: asymmetric with nearest_mode floor") {
  const Attributes up = nearest("asymmetric", "floor");
  // scales [2, 3]: rows x / 2 -> 0, 0, 1, 1; columns x / 3 -> 0, 0, 0, 1, 1, 1
  check_close(with_scales(f32({1, 1, 2, 2}, {1, 2, 3, 4}), {1, 1, 2, 3}, up), {1, 1, 4, 6},
              {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  // scale 1.5 on 2 -> 3: x / 1.5 = 0, .67, 1.33 -> 0, 0, 1; scale 2.5 on [5, 6, 7] -> 7 outputs
  // at x / 2.5 = 0, .4, .8, 1.2, 1.6, 2, 2.4
  check_close(with_scales(f32({2}, {5, 6}), {1.5f}, up), {3}, {5, 5, 6});
  check_close(with_scales(f32({3}, {5, 6, 7}), {2.5f}, up), {7}, {5, 5, 5, 6, 6, 7, 7});
  // Upsample-7 keeps its scales in an attribute.
  Attributes attr = up;
  attr.set("scales", Floats{1, 2});
  check_close(run_op(OpKind::Resize, {f32({1, 2}, {5, 6})}, attr)[0], {1, 4}, {5, 5, 6, 6});
}

TEST_CASE("Resize: N-d: a middle axis, 1-D, 3-D and the opset-18 axes") {
  // [2, 3, 2] with v = 6a + 2b + c; axis 1 from 3 to 5 with align_corners samples b = k / 2,
  // so out = 6a + k + c exactly.
  const Tensor x = iota<float>({2, 3, 2});
  const Tensor mid = with_sizes(x, {2, 5, 2}, linear("align_corners"));
  std::vector<double> want;
  for (int a = 0; a < 2; ++a)
    for (int k = 0; k < 5; ++k)
      for (int c = 0; c < 2; ++c) want.push_back(6 * a + k + c);
  check_close(mid, {2, 5, 2}, want);
  // The same through axes = [1] (and a negative axis).
  Attributes ax = linear("align_corners");
  ax.set("axes", Ints{-2});
  check_close(with_sizes(x, {5}, ax), mid);
  // 3-D trilinear, half_pixel by 2 on [2, 2, 2] with v = 4i + 2j + k: each axis samples
  // p = 0, .25, .75, 1 (clamped), so out(i, j, k) = 4 p(i) + 2 p(j) + p(k).
  const double p[] = {0, 0.25, 0.75, 1};
  want.clear();
  for (double i : p)
    for (double j : p)
      for (double k : p) want.push_back(4 * i + 2 * j + k);
  check_close(with_scales(iota<double>({2, 2, 2}), {2, 2, 2}, linear()), {4, 4, 4}, want, 1e-12);
}

TEST_CASE("Resize: keep_aspect_ratio_policy") {
  // [4, 6] with v = 6h + w, sizes [2, 2] on axes 2, 3.
  // not_larger: scale min(2/4, 2/6) = 1/3 -> [1, 2]; rows .5 * 3 - .5 = 1, columns 1, 4.
  // not_smaller: scale 1/2 -> [2, 3]; rows .5, 2.5 -> 0, 2; columns .5, 2.5, 4.5 -> 0, 2, 4.
  const Tensor x = iota<float>({1, 1, 4, 6});
  Attributes a{{"axes", Ints{2, 3}}, {"keep_aspect_ratio_policy", "not_larger"s}};
  check_close(with_sizes(x, {2, 2}, a), {1, 1, 1, 2}, {7, 10});
  a.set("keep_aspect_ratio_policy", "not_smaller"s);
  check_close(with_sizes(x, {2, 2}, a), {1, 1, 2, 3}, {0, 2, 4, 12, 14, 16});
  a.set("keep_aspect_ratio_policy", "stretch"s);
  check_close(with_sizes(x, {2, 2}, a), {1, 1, 2, 2}, {1, 4, 13, 16});
}

TEST_CASE("Resize: dtypes, identity, empty outputs and static shape inference") {
  // nearest copies any dtype
  const Tensor u = with_scales(Tensor::from<uint8_t>({1, 2}, {3, 250}), {1, 2});
  CHECK(u.dtype() == DType::u8);
  check_close(u, {1, 4}, {3, 3, 250, 250});
  const Tensor big = with_sizes(Tensor::from<int64_t>({2}, {int64_t{1} << 40, -7}), {3},
                                nearest("asymmetric", "floor"));
  CHECK(big.dtype() == DType::i64);
  CHECK(big.data<int64_t>()[0] == int64_t{1} << 40);
  CHECK(big.data<int64_t>()[2] == -7);
  check_close(with_scales(Tensor::from<bool>({2}, {true, false}), {2}), {4}, {1, 1, 0, 0});
  // scale 1 everywhere is a copy, in every mode
  const Tensor r = random_f64({2, 3, 4}, 3);
  for (const char* m : {"nearest", "linear", "cubic"})
    check_close(with_scales(r, {1, 1, 1}, {{"mode", std::string(m)}}), r);
  // floor(3 * 0.2) = 0
  check_close(with_scales(random_f32({2, 3}, 1), {1, 0.2f}, linear()), {2, 0}, {});
  // Constant sizes give the output a static shape when the graph is built.
  GraphBuilder b;
  const ValueId in = b.input("x", DType::f32, {1, 3, 5, 5});
  const ValueId y = b.resize(in, kNoValue, kNoValue, b.ints({1, 3, 7, 2}));
  CHECK(b.graph().value(y).shape == DimList{1, 3, 7, 2});
}

TEST_CASE("Resize: errors") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  CHECK(contains(op_error(OpKind::Resize, {x, {}, scales_of({1, 1, 2, 2}), ints({1, 1, 4, 4})}),
                 "not both"));
  CHECK(contains(op_error(OpKind::Resize, {x}), "needs scales or sizes"));
  CHECK(
      contains(op_error(OpKind::Resize, {x, {}, f32({0}, {}), ints({})}), "needs scales or sizes"));
  CHECK(contains(op_error(OpKind::Resize, {x, {}, scales_of({2, 2})}), "got 2 scales but needs 4"));
  CHECK(
      contains(op_error(OpKind::Resize, {x, {}, {}, ints({4, 4, 4})}), "got 3 sizes but needs 4"));
  CHECK(contains(op_error(OpKind::Resize, {x, {}, scales_of({1, 1, 0, 2})}),
                 "scales must be positive"));
  CHECK(contains(op_error(OpKind::Resize, {x, {}, scales_of({1, 1, -2, 2})}),
                 "scales must be positive"));
  CHECK(contains(op_error(OpKind::Resize, {x, {}, scales_of({1, 1, INFINITY, 2})}),
                 "scales must be positive and finite"));
  CHECK(contains(op_error(OpKind::Resize, {x, {}, {}, ints({1, 1, -1, 2})}),
                 "sizes must be non-negative"));
  CHECK(contains(op_error(OpKind::Resize, {f32({0}, {}), {}, {}, ints({2})}),
                 "cannot resize axis 0 of size 0"));
  const std::vector<Tensor> ok{x, {}, scales_of({1, 1, 2, 2})};
  CHECK(contains(op_error(OpKind::Resize, ok, {{"mode", "bicubic"s}}), "unknown Resize mode"));
  CHECK(contains(op_error(OpKind::Resize, ok, {{"coordinate_transformation_mode", "edge"s}}),
                 "unknown Resize coordinate_transformation_mode 'edge'"));
  CHECK(contains(op_error(OpKind::Resize, ok, {{"nearest_mode", "round"s}}),
                 "unknown Resize nearest_mode"));
  CHECK(contains(op_error(OpKind::Resize, {x, {}, {}, ints({2, 2})},
                          {{"axes", Ints{2, 3}}, {"keep_aspect_ratio_policy", "fit"s}}),
                 "unknown Resize keep_aspect_ratio_policy"));
  const Attributes crop{{"coordinate_transformation_mode", "tf_crop_and_resize"s}};
  CHECK(
      contains(op_error(OpKind::Resize, {x, f32({4}, {0, 0, 1, 1}), {}, ints({1, 1, 3, 3})}, crop),
               "needs a roi of 8 values"));
  CHECK(contains(op_error(OpKind::Resize, {x, {}, {}, ints({1, 1, 3, 3})}, crop),
                 "needs a roi of 8 values"));
  CHECK(contains(op_error(OpKind::Resize, {iota<int32_t>({2, 2}), {}, scales_of({2, 2})}, linear()),
                 "mode linear needs a float input, got i32"));
  CHECK(contains(op_error(OpKind::Resize, {x, {}, {}, ints({2, 2})}, {{"axes", Ints{3, -1}}}),
                 "axis 3 is repeated"));
  CHECK(contains(op_error(OpKind::Resize, {x, {}, {}, ints({2})}, {{"axes", Ints{4}}}),
                 "out of range"));
  CHECK(contains(op_error(OpKind::Resize, {Tensor::scalar(1.0f), {}, scales_of({})}), "rank >= 1"));
  CHECK(contains(op_error(OpKind::Resize, {x, {}, ints({1, 1, 2, 2})}), "must be a float tensor"));
  CHECK(
      contains(op_error(OpKind::Resize, {x, {}, {}, scales_of({1, 1, 2, 2})}), "expected one of"));
}

// ---- random inputs against the per-element reference -------------------------------------------

TEST_CASE("Resize: random inputs against the per-element reference") {
  std::mt19937 rng(2024);
  auto pick = [&](const auto& v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  const std::vector<std::string> modes{"nearest", "linear", "cubic"};
  const std::vector<std::string> coords{
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  const std::vector<std::string> roundings{"round_prefer_floor", "round_prefer_ceil", "floor",
                                           "ceil"};
  const std::vector<float> scale_set{0.3f, 0.5f, 0.6f, 0.8f, 1.0f, 1.3f, 1.5f, 2.0f, 2.5f, 3.0f};
  const std::vector<Shape> shapes{{7}, {2, 5, 3}, {1, 2, 6, 5}, {3, 4, 2}, {1, 1, 9, 4}};
  for (int it = 0; it < 300; ++it) {
    Spec s;
    s.mode = pick(modes);
    s.coord = pick(coords);
    s.rounding = pick(roundings);
    s.a = pick(std::vector<double>{-0.75, -0.5});
    s.exclude_outside = s.mode == "cubic" && rng() % 2;
    s.antialias = s.mode != "nearest" && rng() % 2;
    s.extrapolation = 5.5;
    const Shape shape = pick(shapes);
    const bool f64 = rng() % 2;
    const Tensor x = f64 ? random_f64(shape, rng()) : random_f32(shape, rng());
    const int64_t rank = static_cast<int64_t>(shape.size());
    std::vector<RefAxis> axes;
    std::vector<float> sc;
    Ints sizes;
    std::vector<float> roi(2 * rank);
    const bool use_sizes = rng() % 2;
    for (int64_t d = 0; d < rank; ++d) {
      // leading axes of 4-D inputs stay as they are, like N and C of an image
      const bool fixed = rank == 4 && d < 2;
      const float f = fixed ? 1.0f : pick(scale_set);
      const int64_t n = shape[d];
      const int64_t size = fixed ? n : std::uniform_int_distribution<int64_t>(1, 9)(rng);
      roi[d] = fixed ? 0.0f : std::uniform_real_distribution<float>(-0.2f, 0.6f)(rng);
      roi[rank + d] = fixed ? 1.0f : std::uniform_real_distribution<float>(0.4f, 1.2f)(rng);
      sc.push_back(f);
      sizes.push_back(size);
      RefAxis a;
      a.out = use_sizes ? size : static_cast<int64_t>(std::floor(static_cast<float>(n) * f));
      a.scale = use_sizes ? static_cast<double>(size) / static_cast<double>(n) : f;
      if (s.coord == "tf_crop_and_resize") {
        a.roi0 = roi[d];
        a.roi1 = roi[rank + d];
      }
      axes.push_back(a);
    }
    const Tensor roi_t = s.coord == "tf_crop_and_resize" ? scales_of(roi) : Tensor{};
    const Tensor got = use_sizes
                           ? run_op(OpKind::Resize, {x, roi_t, {}, ints(sizes)}, attrs_of(s))[0]
                           : run_op(OpKind::Resize, {x, roi_t, scales_of(sc)}, attrs_of(s))[0];
    const Expected want = reference(x, axes, s);
    INFO(it << ": " << s.mode << " " << s.coord << " " << s.rounding << " a=" << s.a
            << " exclude=" << s.exclude_outside << " antialias=" << s.antialias << " "
            << shape_str(shape) << (use_sizes ? " sizes" : " scales") << (f64 ? " f64" : " f32"));
    check_close(got, want.shape, want.values, f64 ? 1e-10 : 1e-5, f64 ? 1e-10 : 1e-5);
  }
}

TEST_CASE("Resize: random bilinear and bicubic images, scales and sizes, against the reference") {
  // The image case: N and C kept, H and W resized by different factors.
  for (const char* mode : {"linear", "cubic"}) {
    Spec s;
    s.mode = mode;
    const Tensor x = random_f32({2, 3, 7, 10}, 5);
    const std::vector<RefAxis> up{{2, 1}, {3, 1}, {16, 16. / 7}, {13, 1.3}};
    check_close(with_sizes(x, {2, 3, 16, 13}, attrs_of(s)), reference(x, up, s).shape,
                reference(x, up, s).values, 1e-5, 1e-5);
    const std::vector<RefAxis> down{{2, 1}, {3, 1}, {3, 0.5f}, {4, 0.4f}};
    const Expected want = reference(x, down, s);
    check_close(with_scales(x, {1, 1, 0.5f, 0.4f}, attrs_of(s)), want.shape, want.values, 1e-5,
                1e-5);
  }
}

// Samples for the generated JIT lowering test (tests/jit/test_op_lowerings.cpp).
SG_LOWERING_SAMPLE(Resize, nearest_up) {
  const ValueId x = s.input(DType::f32, {1, 2, n, 3});
  const ValueId scales = s.b.constant("", Tensor::from<float>({4}, {1, 1, 2, 1.5f}));
  s.output(s.b.node(OpKind::Resize, {x, kNoValue, scales}, {{"mode", std::string("nearest")}})[0]);
}

SG_LOWERING_SAMPLE(Resize, linear_by_sizes) {
  const ValueId x = s.input(DType::f32, {2, n, 4});
  const ValueId sizes = s.b.ints({2, std::max<int64_t>(1, n / 2), 7});
  s.output(s.b.node(OpKind::Resize, {x, kNoValue, kNoValue, sizes},
                    {{"mode", std::string("linear")},
                     {"coordinate_transformation_mode", std::string("align_corners")}})[0]);
}

TEST_CASE("Resize: an empty output with a huge other dim allocates nothing") {
  // Found by fuzz_onnx_run: sizes [0, 2^62] made the kernel build a 2^62-entry axis table.
  Tensor x(DType::f32, {1, 2});
  const Tensor y = run_op(OpKind::Resize, {x, {}, {}, ints({0, int64_t{1} << 62})}, {})[0];
  CHECK(y.shape() == Shape{0, int64_t{1} << 62});
}

// The empty-output case compiled: the kernel must not plan tables for the huge dim either.
SG_LOWERING_SAMPLE(Resize, empty_output_huge_dim) {
  const ValueId x = s.input(DType::f32, {n, 2});
  const ValueId sizes = s.b.ints({0, int64_t{1} << 62});
  s.output(s.b.node(OpKind::Resize, {x, kNoValue, kNoValue, sizes},
                    {{"mode", std::string("linear")}})[0]);
}
