// GridSample(X [N, C, H, W], grid [N, Hout, Wout, 2]) {mode, padding_mode, align_corners}
// -> Y [N, C, Hout, Wout] (opset 16): Y[n, c, i, j] samples X[n, c] at the normalised position
// grid[n, i, j] = (x, y), x along W and y along H, -1 and 1 being the edges of the image
// (align_corners 0: the outer edges of the corner pixels; 1: the corner pixels' centres).
//   mode: bilinear (the four pixels around the point), nearest (the nearest pixel, halves rounded
//         to even), bicubic (the 4x4 pixels around it, Keys' kernel with a = -0.75)
//   padding_mode: how pixels outside X are read: zeros (as 0), border (as the nearest edge
//         pixel: the point is clamped into the image), reflection (the point is mirrored at the
//         edges, align_corners 0: at the outer pixel edges, 1: at the corner pixels' centres,
//         until inside, then clamped). Bicubic pads each of its 16 taps rather than the point.
// X and grid are f32 or f64 (each its own); Y has X's dtype. A point with a NaN coordinate, or an
// infinite one that padding does not bring inside (zeros, reflection; any under bicubic), reads
// as 0. X's H and W must be at least 1.
#include <array>
#include <cmath>

#include "ops/op.h"
#include "ops/resize.h"

namespace sgraph::ops {
namespace {

enum class SampleMode { bilinear, nearest, bicubic };
enum class Padding { zeros, border, reflection };
constexpr std::array kGridSampleModes{"bilinear", "nearest", "bicubic"};
constexpr std::array kPaddings{"zeros", "border", "reflection"};
static_assert(kGridSampleModes.size() == size_t(SampleMode::bicubic) + 1 &&
              kPaddings.size() == size_t(Padding::reflection) + 1);

struct Params {
  SampleMode mode;
  Padding padding;
  bool align_corners;
};

Params grid_sample_params(const Attributes& a) {
  Params p;
  p.mode = attr_choice<SampleMode>(a, "GridSample", "mode", kGridSampleModes);
  p.padding = attr_choice<Padding>(a, "GridSample", "padding_mode", kPaddings);
  const int64_t align = a.get_int("align_corners", 0);
  SG_CHECK(align == 0 || align == 1) << "align_corners must be 0 or 1, got " << align;
  p.align_corners = align == 1;
  return p;
}

void types_grid_sample(TypeCtx& c) {
  c.expect_one_of(0, {DType::f32, DType::f64});
  c.expect_one_of(1, {DType::f32, DType::f64});
  c.out[0] = c.in[0];
}

void shapes_grid_sample(ShapeCtx& c) {
  grid_sample_params(c.attrs());
  const Shape& x = c.shape(0);
  const Shape& grid = c.shape(1);
  SG_CHECK(x.size() == 4) << "X must have shape [N, C, H, W] (rank 4), got " << shape_str(x);
  SG_CHECK(grid.size() == 4 && grid[3] == 2)
      << "grid must have shape [N, H_out, W_out, 2], got " << shape_str(grid);
  SG_CHECK(grid[0] == x[0]) << "grid's N (" << grid[0] << ") must be X's (" << x[0] << ")";
  SG_CHECK(x[2] >= 1 && x[3] >= 1) << "X's H and W must be at least 1, got " << shape_str(x);
  c.out[0] = {x[0], x[1], grid[1], grid[2]};
}

// The pixel coordinate of normalised position g along a dim of `size` pixels.
double unnormalize(double g, int64_t size, bool align_corners) {
  return align_corners ? (g + 1) / 2 * static_cast<double>(size - 1)
                       : ((g + 1) * static_cast<double>(size) - 1) / 2;
}

// x mirrored at lo and hi until inside [lo, hi].
double reflect(double x, double lo, double hi) {
  const double span = hi - lo;
  if (span <= 0) return lo;
  const double d = std::abs(x - lo);
  const double flips = std::floor(d / span);
  const double rest = d - flips * span;
  return std::fmod(flips, 2.0) == 0 ? lo + rest : hi - rest;
}

// Pixel coordinate x along a dim of `size` pixels as padding_mode reads it: unchanged (zeros),
// clamped into [0, size - 1] (border), or mirrored and clamped (reflection). NaN stays NaN (and
// an infinity mirrors to NaN).
double pad_coordinate(double x, int64_t size, const Params& p) {
  const double last = static_cast<double>(size - 1);
  if (p.padding == Padding::zeros || std::isnan(x)) return x;
  if (p.padding == Padding::reflection)
    x = p.align_corners ? reflect(x, 0, last) : reflect(x, -0.5, last + 0.5);
  return std::isnan(x) ? x : std::min(std::max(x, 0.0), last);
}

// Reads one channel image (h x w, row-major) at integer-valued pixel coordinates, 0 outside.
template <class T>
struct Image {
  const T* px;
  int64_t h, w;
  double at(double y, double x) const {
    if (!(y >= 0 && y <= static_cast<double>(h - 1) && x >= 0 && x <= static_cast<double>(w - 1)))
      return 0;  // (also NaN)
    return static_cast<double>(px[static_cast<int64_t>(y) * w + static_cast<int64_t>(x)]);
  }
};

// The sample of `img` at pixel coordinates (y, x) (unnormalised, not yet padded).
template <class T>
double sample(const Image<T>& img, double y, double x, const Params& p) {
  if (p.mode == SampleMode::bicubic) {
    if (!std::isfinite(y) || !std::isfinite(x)) return 0;
    const double y0 = std::floor(y), x0 = std::floor(x);
    double sum = 0;
    for (int i = -1; i <= 2; ++i) {
      const double wy = cubic_weight(-0.75, y - (y0 + i));
      const double ty = pad_coordinate(y0 + i, img.h, p);
      for (int j = -1; j <= 2; ++j)
        sum +=
            wy * cubic_weight(-0.75, x - (x0 + j)) * img.at(ty, pad_coordinate(x0 + j, img.w, p));
    }
    return sum;
  }
  y = pad_coordinate(y, img.h, p);
  x = pad_coordinate(x, img.w, p);
  if (!std::isfinite(y) || !std::isfinite(x)) return 0;  // (NaN weights would spread)
  if (p.mode == SampleMode::nearest) return img.at(std::nearbyint(y), std::nearbyint(x));
  const double y0 = std::floor(y), x0 = std::floor(x);
  const double fy = y - y0, fx = x - x0;
  return (1 - fy) * ((1 - fx) * img.at(y0, x0) + fx * img.at(y0, x0 + 1)) +
         fy * ((1 - fx) * img.at(y0 + 1, x0) + fx * img.at(y0 + 1, x0 + 1));
}

void run_grid_sample(KernelCtx& c) {
  const Params p = grid_sample_params(c.attrs());
  const Tensor& x = c.in[0];
  const int64_t n = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t points = c.out[0].dim(2) * c.out[0].dim(3);
  visit_float(x.dtype(), [&]<class T>() {
    visit_float(c.in[1].dtype(), [&]<class G>() {
      const G* grid = c.in[1].data<G>();
      T* y = c.out[0].data<T>();
      for (int64_t b = 0; b < n; ++b)
        for (int64_t k = 0; k < ch; ++k) {
          const Image<T> img{x.data<T>() + (b * ch + k) * h * w, h, w};
          const G* g = grid + b * points * 2;
          T* dst = y + (b * ch + k) * points;
          for (int64_t i = 0; i < points; ++i)
            dst[i] = static_cast<T>(sample(img, unnormalize(g[2 * i + 1], h, p.align_corners),
                                           unnormalize(g[2 * i], w, p.align_corners), p));
        }
    });
  });
}

}  // namespace

extern const OpDef kGridSample;
const OpDef kGridSample{"GridSample",   2, 2, 1, 1, types_grid_sample, shapes_grid_sample,
                        run_grid_sample};

}  // namespace sgraph::ops
