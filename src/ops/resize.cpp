// Resize (ONNX 11-19; the importer maps Resize-10 and Upsample onto it): nearest, N-linear and
// N-cubic interpolation of any set of axes, every coordinate transformation mode, the opset-18
// axes / keep_aspect_ratio_policy / antialias attributes and tf_crop_and_resize extrapolation.
// The filter is separable, so each axis gets a table of (source index, weight) taps per output
// index, computed once. Nearest mode is then one N-d gather (any dtype); linear and cubic run one
// 1-D pass per resized axis, the most shrinking axis first.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/op.h"
#include "ops/resize.h"

namespace sgraph::ops {
namespace {

// Each enum lists its attribute's values in the order of its name table; the first is the default.
enum class Interpolation { nearest, linear, cubic };
enum class Coord {
  half_pixel,
  half_pixel_symmetric,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_nn,
  tf_crop_and_resize
};
enum class Rounding { round_prefer_floor, round_prefer_ceil, floor, ceil };
enum class Policy { stretch, not_larger, not_smaller };

constexpr std::array kInterpolations{"nearest", "linear", "cubic"};
constexpr std::array kCoords{"half_pixel",        "half_pixel_symmetric", "pytorch_half_pixel",
                             "align_corners",     "asymmetric",           "tf_half_pixel_for_nn",
                             "tf_crop_and_resize"};
constexpr std::array kRoundings{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
constexpr std::array kPolicies{"stretch", "not_larger", "not_smaller"};
static_assert(kInterpolations.size() == size_t(Interpolation::cubic) + 1 &&
              kCoords.size() == size_t(Coord::tf_crop_and_resize) + 1 &&
              kRoundings.size() == size_t(Rounding::ceil) + 1 &&
              kPolicies.size() == size_t(Policy::not_smaller) + 1);

struct Options {
  Interpolation mode;
  Coord coord;
  Rounding rounding;
  Policy policy;
  double cubic_a, extrapolation;
  bool exclude_outside, antialias;
};

Options options(const Attributes& a) {
  Options o;
  o.mode = attr_choice<Interpolation>(a, "Resize", "mode", kInterpolations);
  o.coord = attr_choice<Coord>(a, "Resize", "coordinate_transformation_mode", kCoords);
  o.rounding = attr_choice<Rounding>(a, "Resize", "nearest_mode", kRoundings);
  o.policy = attr_choice<Policy>(a, "Resize", "keep_aspect_ratio_policy", kPolicies);
  o.cubic_a = a.get_float("cubic_coeff_a", -0.75);
  o.extrapolation = a.get_float("extrapolation_value", 0.0);
  o.exclude_outside = a.get_int("exclude_outside", 0) != 0;
  o.antialias =
      a.get_int("antialias", 0) != 0 && o.mode != Interpolation::nearest;  // spec: ignored there
  return o;
}

// Per axis of X: the output size and the scale the coordinate transform uses. `axes` lists the
// resized axes (the opset-18 attribute, else all) in the order scales, sizes and roi give them.
struct InterpPlan {
  Shape out;
  std::vector<double> scale;
  std::vector<int64_t> axes;
};

// `scales` and `sizes` are null when absent or empty; Upsample-7's `scales` attribute is the
// fallback when both are.
InterpPlan make_plan(const Shape& in, const Options& o, const Attributes& a, const Tensor* scales,
                     const Tensor* sizes) {
  const int64_t rank = static_cast<int64_t>(in.size());
  SG_CHECK(rank >= 1) << "Resize needs an input of rank >= 1";
  InterpPlan p{in, std::vector<double>(rank, 1.0), {}};
  if (a.has("axes")) {
    std::vector<bool> seen(rank, false);
    for (int64_t ax : a.get_ints("axes")) {
      ax = normalize_axis(ax, rank, "Resize axis");
      SG_CHECK(!seen[ax]) << "Resize axis " << ax << " is repeated";
      seen[ax] = true;
      p.axes.push_back(ax);
    }
  } else {
    p.axes.resize(rank);
    std::iota(p.axes.begin(), p.axes.end(), 0);
  }
  const size_t k = p.axes.size();
  SG_CHECK(!(scales && sizes)) << "Resize takes scales or sizes, not both";
  SG_CHECK(scales || sizes || a.has("scales"))
      << "Resize needs scales or sizes (both are absent or empty)";
  if (sizes) {
    const std::vector<int64_t> s = sizes->to_int64();
    SG_CHECK(s.size() == k) << "Resize got " << s.size() << " sizes but needs " << k
                            << " (one per resized axis) for input " << shape_str(in);
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (size_t i = 0; i < k; ++i) {
      const int64_t d = p.axes[i];
      SG_CHECK(s[i] >= 0) << "Resize sizes must be non-negative, got " << s[i] << " for axis " << d;
      SG_CHECK(in[d] > 0 || s[i] == 0)
          << "Resize cannot resize axis " << d << " of size 0 to size " << s[i];
      p.out[d] = s[i];
      if (in[d] == 0) continue;
      p.scale[d] = static_cast<double>(s[i]) / static_cast<double>(in[d]);
      lo = std::min(lo, p.scale[d]);
      hi = std::max(hi, p.scale[d]);
    }
    if (o.policy != Policy::stretch && lo <= hi) {  // one scale for all axes, sizes as a bound
      const double r = o.policy == Policy::not_larger ? lo : hi;
      for (int64_t d : p.axes) {
        const double n = std::floor(r * static_cast<double>(in[d]) + 0.5);
        SG_CHECK(n < 0x1p62) << "Resize output axis " << d << " would be too large";
        p.scale[d] = r;
        p.out[d] = static_cast<int64_t>(n);
      }
    }
    return p;
  }
  std::vector<double> s;
  if (scales) {
    for (int64_t i = 0; i < scales->numel(); ++i) s.push_back(scales->at_double(i));
  } else {
    s = a.get_floats("scales");
  }
  SG_CHECK(s.size() == k) << "Resize got " << s.size() << " scales but needs " << k
                          << " (one per resized axis) for input " << shape_str(in);
  for (size_t i = 0; i < k; ++i) {
    const int64_t d = p.axes[i];
    SG_CHECK(s[i] > 0 && std::isfinite(s[i]))
        << "Resize scales must be positive and finite, got " << s[i] << " for axis " << d;
    // In float, as ONNX shape inference and onnxruntime compute it.
    const float n = static_cast<float>(in[d]) * static_cast<float>(s[i]);
    SG_CHECK(n < 0x1p62f) << "Resize output axis " << d << " would be too large";
    p.out[d] = static_cast<int64_t>(std::floor(n));
    p.scale[d] = s[i];
  }
  return p;
}

void check_roi(int64_t n, const InterpPlan& p) {
  const int64_t want = 2 * static_cast<int64_t>(p.axes.size());
  SG_CHECK(n == want) << "Resize with tf_crop_and_resize needs a roi of " << want
                      << " values (starts, then ends, of the resized axes), got " << n;
}

// The input coordinate that output index x of an axis samples.
double source_coord(Coord c, double x, int64_t in, int64_t out, double scale, double r0,
                    double r1) {
  const double n = static_cast<double>(in);
  switch (c) {
    case Coord::half_pixel:
      return (x + 0.5) / scale - 0.5;
    case Coord::half_pixel_symmetric: {
      const double adjustment = static_cast<double>(out) / (scale * n);
      return n / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    }
    case Coord::pytorch_half_pixel:
      return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case Coord::align_corners:
      return out > 1 ? x * (n - 1) / static_cast<double>(out - 1) : 0.0;
    case Coord::asymmetric:
      return x / scale;
    case Coord::tf_half_pixel_for_nn:
      return (x + 0.5) / scale;
    case Coord::tf_crop_and_resize:
      break;
  }
  return out > 1 ? x * (r1 - r0) * (n - 1) / static_cast<double>(out - 1) + r0 * (n - 1)
                 : 0.5 * (r0 + r1) * (n - 1);
}

// The nearest input index to x; ties and the floor/ceil modes decided on the fraction, as ONNX's
// reference does (std::round-style x + 0.5 would misround just below a half).
int64_t nearest_index(Rounding r, double x) {
  const double f = std::floor(x), frac = x - f;
  bool up = frac > 0;  // Rounding::ceil
  switch (r) {
    case Rounding::round_prefer_floor:
      up = frac > 0.5;
      break;
    case Rounding::round_prefer_ceil:
      up = frac >= 0.5;
      break;
    case Rounding::floor:
      up = false;
      break;
    case Rounding::ceil:
      break;
  }
  return static_cast<int64_t>(f) + (up ? 1 : 0);
}

// The linear (triangle) or cubic (Keys, coefficient a) filter at distance d.
double filter(const Options& o, double d) {
  if (o.mode == Interpolation::linear) return std::max(0.0, 1.0 - std::abs(d));
  return cubic_weight(o.cubic_a, d);
}

using AxisTable = ResizeTable;

AxisTable identity_table(int64_t n) {
  AxisTable t;
  for (int64_t o = 0; o < n; ++o) {
    t.idx.push_back(o);
    t.w.push_back(1.0);
    t.begin.push_back(o + 1);
  }
  t.outside.assign(n, 0);
  return t;
}

AxisTable axis_table(const Options& o, int64_t in, int64_t out, double scale, double r0,
                     double r1) {
  AxisTable t;
  t.outside.assign(out, 0);
  t.identity = in == out;
  // Antialiasing widens the filter by 1/scale when downscaling.
  const double stretch = o.antialias ? std::min(scale, 1.0) : 1.0;
  const double support = o.mode == Interpolation::linear ? 1.0 : 2.0;
  const int64_t half = static_cast<int64_t>(std::ceil(support / stretch));
  for (int64_t i = 0; i < out; ++i) {
    const double x = source_coord(o.coord, static_cast<double>(i), in, out, scale, r0, r1);
    const bool outside =
        o.coord == Coord::tf_crop_and_resize && !(x >= 0 && x <= static_cast<double>(in - 1));
    SG_ASSERT(outside || std::abs(x) < 0x1p52) << "source coordinate " << x;
    if (outside) {
      t.outside[i] = 1;  // a placeholder tap; the extrapolation value replaces it
      t.idx.push_back(0);
      t.w.push_back(0.0);
    } else if (o.mode == Interpolation::nearest) {
      t.idx.push_back(std::clamp<int64_t>(nearest_index(o.rounding, x), 0, in - 1));
      t.w.push_back(1.0);
    } else {
      const size_t first = t.idx.size();
      const int64_t base = static_cast<int64_t>(std::floor(x));
      double sum = 0;
      for (int64_t j = base + 1 - half; j <= base + half; ++j) {
        double w = filter(o, stretch * (static_cast<double>(j) - x));
        if (o.exclude_outside && (j < 0 || j >= in)) w = 0;
        if (w == 0) continue;
        sum += w;
        const int64_t src = std::clamp<int64_t>(j, 0, in - 1);  // the edge value beyond the ends
        if (t.idx.size() > first && t.idx.back() == src) {
          t.w.back() += w;
        } else {
          t.idx.push_back(src);
          t.w.push_back(w);
        }
      }
      if ((o.antialias || o.exclude_outside) && sum != 0)
        for (size_t k = first; k < t.w.size(); ++k) t.w[k] /= sum;
    }
    t.begin.push_back(static_cast<int64_t>(t.idx.size()));
    t.identity = t.identity && !t.outside[i] && t.begin[i + 1] - t.begin[i] == 1 &&
                 t.idx.back() == i && t.w.back() == 1.0;
  }
  return t;
}

std::vector<AxisTable> axis_tables(const Options& o, const Shape& in, const InterpPlan& p,
                                   const Tensor* roi) {
  const size_t k = p.axes.size();
  if (o.coord == Coord::tf_crop_and_resize) check_roi(roi ? roi->numel() : 0, p);
  std::vector<AxisTable> t(in.size());
  for (size_t d = 0; d < in.size(); ++d) t[d] = identity_table(in[d]);
  for (size_t i = 0; i < k; ++i) {
    const int64_t d = p.axes[i];
    const bool crop = o.coord == Coord::tf_crop_and_resize;
    t[d] = axis_table(o, in[d], p.out[d], p.scale[d], crop ? roi->at_double(i) : 0.0,
                      crop ? roi->at_double(k + i) : 1.0);
  }
  return t;
}

// Steps `pos`, a multi-index over the leading dims of `shape`, to the next row.
void next_row(std::vector<int64_t>& pos, const Shape& shape) {
  for (size_t d = pos.size(); d-- > 0;) {
    if (++pos[d] < shape[d]) return;
    pos[d] = 0;
  }
}

// Nearest mode: every output element copies one input element.
template <class T>
void gather(const T* src, T* dst, const Shape& in, const Shape& out,
            const std::vector<AxisTable>& t) {
  if (numel(out) == 0) return;
  const Shape st = strides_of(in);
  const int64_t width = out.back();
  const AxisTable& last = t.back();
  std::vector<int64_t> pos(out.size() - 1, 0);
  for (int64_t row = 0, rows = numel(out) / width; row < rows; ++row, dst += width) {
    const T* s = src;
    for (size_t d = 0; d < pos.size(); ++d) s += t[d].idx[pos[d]] * st[d];
    if (last.identity) {
      std::copy(s, s + width, dst);
    } else {
      for (int64_t j = 0; j < width; ++j) dst[j] = s[last.idx[j]];
    }
    next_row(pos, out);
  }
}

// One linear/cubic pass along `axis`: src has `shape`; dst the same but t's length on `axis`.
template <class T>
void resize_axis(const T* src, T* dst, const Shape& shape, int64_t axis, const AxisTable& t) {
  const AxisSplit s = split_at_axis(shape, axis);
  const int64_t out = static_cast<int64_t>(t.begin.size()) - 1;
  const std::vector<T> w(t.w.begin(), t.w.end());
  for (int64_t b = 0; b < s.outer; ++b, src += s.dim * s.inner) {
    for (int64_t o = 0; o < out; ++o, dst += s.inner) {
      const int64_t k0 = t.begin[o], k1 = t.begin[o + 1];
      if (s.inner == 1) {  // the last axis: a weighted gather
        T acc = 0;
        for (int64_t k = k0; k < k1; ++k) acc += w[k] * src[t.idx[k]];
        *dst = acc;
        continue;
      }
      std::fill(dst, dst + s.inner, T(0));
      for (int64_t k = k0; k < k1; ++k) {
        const T* __restrict row = src + t.idx[k] * s.inner;
        T* __restrict d = dst;
        const T wk = w[k];
        for (int64_t j = 0; j < s.inner; ++j) d[j] += wk * row[j];
      }
    }
  }
}

// Linear and cubic modes: one pass per resized axis, those that shrink the data most first.
template <class T>
void interpolate(const Tensor& x, Tensor& y, const std::vector<AxisTable>& t) {
  std::vector<int64_t> order;
  for (size_t d = 0; d < t.size(); ++d)
    if (!t[d].identity) order.push_back(static_cast<int64_t>(d));
  auto ratio = [&](int64_t d) {
    return static_cast<double>(y.shape()[d]) / static_cast<double>(x.shape()[d]);
  };
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return ratio(a) < ratio(b) || (ratio(a) == ratio(b) && a > b);
  });
  const T* src = x.data<T>();
  if (y.numel() == 0) return;
  if (order.empty()) {
    std::copy(src, src + x.numel(), y.data<T>());
    return;
  }
  Shape shape = x.shape();
  std::array<std::vector<T>, 2> buf;
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t d = order[i];
    Shape next = shape;
    next[d] = y.shape()[d];
    T* dst = y.data<T>();
    if (i + 1 < order.size()) {
      buf[i % 2].resize(numel(next));
      dst = buf[i % 2].data();
    }
    resize_axis(src, dst, shape, d, t[d]);
    src = dst;
    shape = std::move(next);
  }
}

// extrapolation_value as a T (saturated for integer dtypes).
template <class T>
T value_as(double v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using L = std::numeric_limits<T>;
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(L::lowest())) return L::lowest();
    if (v >= static_cast<double>(L::max())) return L::max();
  }
  return static_cast<T>(v);
}

// tf_crop_and_resize: outputs sampling outside the input along any axis take `value`.
template <class T>
void fill_outside(T* dst, const Shape& out, const std::vector<AxisTable>& t, T value) {
  if (numel(out) == 0) return;
  const int64_t width = out.back();
  std::vector<int64_t> pos(out.size() - 1, 0);
  for (int64_t row = 0, rows = numel(out) / width; row < rows; ++row, dst += width) {
    bool row_outside = false;
    for (size_t d = 0; d < pos.size(); ++d) row_outside = row_outside || t[d].outside[pos[d]];
    for (int64_t j = 0; j < width; ++j)
      if (row_outside || t.back().outside[j]) dst[j] = value;
    next_row(pos, out);
  }
}

}  // namespace

double cubic_weight(double a, double d) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0.0;
}

ResizeMode resize_mode(const Attributes& a) {
  const Options o = options(a);
  return {o.mode == Interpolation::nearest, o.antialias, o.coord == Coord::tf_crop_and_resize,
          o.extrapolation};
}

ResizeParams resize_params(const Attributes& a, const Shape& in, const Tensor* roi,
                           const Tensor* scales, const Tensor* sizes) {
  const auto given = [](const Tensor* t) { return t && t->numel() > 0 ? t : nullptr; };
  const Options o = options(a);
  const InterpPlan p = make_plan(in, o, a, given(scales), given(sizes));
  return {resize_mode(a), p.out, axis_tables(o, in, p, roi)};
}

// Resize(X, roi?, scales?, sizes?): exactly one of scales and sizes must be non-empty.
extern const Lowering kResizeLowering;  // resize_jit.cpp
extern const OpDef kResize;
const OpDef kResize = with_lowering(
    &kResizeLowering,
    OpDef{"Resize", 1, 4, 1, 1,
          [](TypeCtx& c) {
            const Options o = options(c.attrs());
            SG_CHECK(o.mode == Interpolation::nearest || (c.has(0) && is_float(c.in[0])))
                << "Resize mode " << kInterpolations[static_cast<size_t>(o.mode)]
                << " needs a float input, got " << dtype_name(c.has(0) ? c.in[0] : DType::undefined)
                << " (other dtypes support mode nearest only)";
            if (c.has(1)) c.expect_float(1);
            if (c.has(2)) c.expect_float(2);
            if (c.has(3)) c.expect_int_index(3);
            types_same_as_input0(c);
          },
          [](ShapeCtx& c) {
            const Options o = options(c.attrs());
            auto given = [&](size_t i) { return c.has(i) && numel(c.shape(i)) > 0; };
            const InterpPlan p =
                make_plan(c.shape(0), o, c.attrs(), given(2) ? &c.require_value(2) : nullptr,
                          given(3) ? &c.require_value(3) : nullptr);
            if (o.coord == Coord::tf_crop_and_resize)
              check_roi(c.has(1) ? numel(c.shape(1)) : 0, p);
            c.out[0] = p.out;
          },
          [](KernelCtx& c) {
            const Tensor& x = c.in[0];
            Tensor& y = c.out[0];
            // Nothing to write; the tables would follow the other dims, however large.
            if (y.numel() == 0) return;
            const ResizeParams p =
                resize_params(c.attrs(), x.shape(), c.has(1) ? &c.in[1] : nullptr,
                              c.has(2) ? &c.in[2] : nullptr, c.has(3) ? &c.in[3] : nullptr);
            const std::vector<AxisTable>& t = p.tables;
            visit_dtype(x.dtype(), [&]<class T>() {
              if (p.mode.nearest) {
                gather(x.data<T>(), y.data<T>(), x.shape(), y.shape(), t);
              } else if constexpr (std::is_floating_point_v<T>) {
                interpolate<T>(x, y, t);
              } else {
                SG_ASSERT(false) << "Resize interpolation on " << dtype_name(x.dtype());
              }
              if (p.mode.crop)
                fill_outside(y.data<T>(), y.shape(), t, value_as<T>(p.mode.extrapolation));
            });
          }});

}  // namespace sgraph::ops
