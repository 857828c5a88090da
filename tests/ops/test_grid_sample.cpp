// GridSample: hand-computed samples for each mode, padding mode and align_corners setting
// (points inside, on and beyond the edges; x and y in the right order; several images and
// channels), and user errors (attributes, shapes, dtypes).
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;
using namespace std::string_literals;

namespace {

Attributes opts(const std::string& mode, const std::string& padding, int64_t align) {
  return {{"mode", mode}, {"padding_mode", padding}, {"align_corners", align}};
}

// One row of pixels X [1, 1, 1, W] sampled at points (gx, 0): with H = 1 and align_corners 0 the
// y coordinate is 0 exactly, so each sample interpolates along x only.
Tensor sample_row(const std::vector<float>& row, const std::vector<float>& gx, Attributes a) {
  const Tensor x = Tensor::from<float>({1, 1, 1, static_cast<int64_t>(row.size())}, row);
  std::vector<float> g;
  for (float v : gx) g.insert(g.end(), {v, 0.0f});
  const Tensor grid = Tensor::from<float>({1, 1, static_cast<int64_t>(gx.size()), 2}, g);
  return run_op(OpKind::GridSample, {x, grid}, std::move(a))[0];
}

const Tensor kX22 = f32({1, 1, 2, 2}, {1, 2, 3, 4});

}  // namespace

TEST_CASE("GridSample: bilinear with align_corners 1 maps -1 and 1 to the corner pixels") {
  // (x, y) pixel = (g + 1) / 2 * (size - 1): (0, 0) is the centre (0.5, 0.5): the mean 2.5;
  // (1, -1) is pixel x 1, y 0: 2; (0, -1) is x 0.5 on row 0: 1.5; (-1, 1) is x 0, y 1: 3.
  const Tensor grid = f32({1, 1, 4, 2}, {0, 0, 1, -1, 0, -1, -1, 1});
  check_close(run_op(OpKind::GridSample, {kX22, grid}, opts("bilinear", "zeros", 1))[0],
              {1, 1, 1, 4}, {2.5, 2, 1.5, 3});
}

TEST_CASE("GridSample: several images and channels, the output's grid shape") {
  // Image 0: channel 1 is channel 0 times 10; image 1: [[5, 6], [7, 8]] and times 10.
  const Tensor x = f32({2, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40, 5, 6, 7, 8, 50, 60, 70, 80});
  // Image 0 at (0, 0) and (1, -1); image 1 at (-1, 1) (x 0, y 1: 7) and (0.5, 0): x 0.75,
  // y 0.5: rows [5, 6] and [7, 8] average to [6, 7], then 6 + 0.75 = 6.75.
  const Tensor grid = f32({2, 2, 1, 2}, {0, 0, 1, -1, -1, 1, 0.5, 0});
  check_close(run_op(OpKind::GridSample, {x, grid}, opts("bilinear", "zeros", 1))[0], {2, 2, 2, 1},
              {2.5, 2, 25, 20, 7, 6.75, 70, 67.5});
}

TEST_CASE("GridSample: align_corners 0 and the three padding modes, bilinear") {
  // W = 4, align_corners 0: x = ((g + 1) * 4 - 1) / 2 = 2g + 1.5.
  const std::vector<float> row{1, 2, 3, 4};
  // zeros: g 0 -> 1.5: 2.5; g 1 -> 3.5: half of pixel 3 (4) and half of a 0: 2; g -1 -> -0.5:
  // half of pixel 0: 0.5; g 3 -> 7.5: all outside.
  check_close(sample_row(row, {0, 1, -1, 3}, opts("bilinear", "zeros", 0)), {1, 1, 1, 4},
              {2.5, 2, 0.5, 0});
  // border: clamped into [0, 3]: 3.5 -> 3 (4), -0.5 -> 0 (1), 7.5 -> 3 (4).
  check_close(sample_row(row, {0, 1, -1, 3}, opts("bilinear", "border", 0)), {1, 1, 1, 4},
              {2.5, 4, 1, 4});
  // reflection at -0.5 and 3.5: g -1.5 -> -1.5 mirrors to 0.5 (1.5); g 2 -> 5.5 mirrors to 1.5
  // (2.5); g 1.25 -> 4 mirrors to 3 (4); g -1.125 -> -0.75 mirrors to -0.25, clamped to 0 (1).
  check_close(sample_row(row, {-1.5f, 2, 1.25f, -1.125f}, opts("bilinear", "reflection", 0)),
              {1, 1, 1, 4}, {1.5, 2.5, 4, 1});
}

TEST_CASE("GridSample: reflection with align_corners 1 mirrors at the corner pixels' centres") {
  // The 2x2 image: x = y = (g + 1) / 2 is inside [0, 1] for g in [-1, 1]. g 2 -> 1.5 mirrors
  // to 0.5; g -2 -> -0.5 mirrors to 0.5; g 4 -> 2.5 mirrors at 1 to -0.5, then at 0 to 0.5.
  const Tensor grid = f32({1, 1, 3, 2}, {2, -1, -2, 1, 4, 4});
  // (x 0.5, y 0): 1.5; (x 0.5, y 1): 3.5; (0.5, 0.5): 2.5.
  check_close(run_op(OpKind::GridSample, {kX22, grid}, opts("bilinear", "reflection", 1))[0],
              {1, 1, 1, 3}, {1.5, 3.5, 2.5});
}

TEST_CASE("GridSample: nearest rounds halves to even, pads like bilinear") {
  // align_corners 1 on 2x2: (0.2, -0.2) -> x 0.6, y 0.4 -> pixel (x 1, y 0): 2; (0, 0) -> 0.5
  // rounds to 0 on both axes: 1.
  const Tensor grid = f32({1, 1, 2, 2}, {0.2f, -0.2f, 0, 0});
  check_close(run_op(OpKind::GridSample, {kX22, grid}, opts("nearest", "zeros", 1))[0],
              {1, 1, 1, 2}, {2, 1});
  // W = 4, align_corners 0: g 0 -> 1.5 rounds to 2 (3); g 1 -> 3.5 rounds to 4, outside: 0;
  // g -1 -> -0.5 rounds to 0 (1). With border 3.5 is clamped to 3 first (4).
  const std::vector<float> row{1, 2, 3, 4};
  check_close(sample_row(row, {0, 1, -1}, opts("nearest", "zeros", 0)), {1, 1, 1, 3}, {3, 0, 1});
  check_close(sample_row(row, {0, 1, -1}, opts("nearest", "border", 0)), {1, 1, 1, 3}, {3, 4, 1});
}

TEST_CASE("GridSample: bicubic uses Keys' kernel with a = -0.75 over 4x4 taps") {
  // Halfway between taps (t = 0.5) the weights of taps -1, 0, 1, 2 are
  // -0.09375, 0.59375, 0.59375, -0.09375 (a = -0.75). With H = 1 the y weights are 0, 1, 0, 0.
  const std::vector<float> row{1, 2, 4, 8};
  // g 0 -> x 1.5: taps 0..3: -0.09375 * (1 + 8) + 0.59375 * (2 + 4) = 2.71875.
  // g -0.5 -> x 0.5: taps -1..2; zeros reads tap -1 as 0: 0.59375 * 3 - 0.09375 * 4 = 1.40625.
  check_close(sample_row(row, {0, -0.5f}, opts("bicubic", "zeros", 0)), {1, 1, 1, 2},
              {2.71875, 1.40625});
  // border reads tap -1 as pixel 0 (1): 1.40625 - 0.09375 = 1.3125; so does reflection with
  // align_corners 0 (-1 mirrors at -0.5 to 0).
  check_close(sample_row(row, {-0.5f}, opts("bicubic", "border", 0)), {1, 1, 1, 1}, {1.3125});
  check_close(sample_row(row, {-0.5f}, opts("bicubic", "reflection", 0)), {1, 1, 1, 1}, {1.3125});
  // A linear ramp is reproduced exactly: 1, 2, 3, 4 at x 1.5 gives 2.5.
  check_close(sample_row({1, 2, 3, 4}, {0}, opts("bicubic", "zeros", 0)), {1, 1, 1, 1}, {2.5});
}

TEST_CASE("GridSample: f64 data, a grid of the other float type, NaN points read 0") {
  const Tensor x = Tensor::from<double>({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor grid = Tensor::from<double>({1, 1, 2, 2}, {0, 0, kNaN, 0});
  const Tensor y = run_op(OpKind::GridSample, {x, grid}, opts("bilinear", "border", 1))[0];
  CHECK(y.dtype() == DType::f64);
  check_close(y, {1, 1, 1, 2}, {2.5, 0});
  const Tensor yf = run_op(OpKind::GridSample, {kX22, grid}, opts("bilinear", "zeros", 1))[0];
  CHECK(yf.dtype() == DType::f32);
  check_close(yf, {1, 1, 1, 2}, {2.5, 0});
}

TEST_CASE("GridSample: defaults are bilinear, zeros, align_corners 0") {
  // 2x2, align_corners 0: g 0 -> 0.5 (the centre, 2.5); g -1 -> -0.5 on both axes: a quarter of
  // pixel (0, 0): 0.25.
  const Tensor grid = f32({1, 1, 2, 2}, {0, 0, -1, -1});
  check_close(run_op(OpKind::GridSample, {kX22, grid})[0], {1, 1, 1, 2}, {2.5, 0.25});
}

TEST_CASE("GridSample: user errors") {
  const Tensor grid = f32({1, 1, 1, 2}, {0, 0});
  CHECK(contains(op_error(OpKind::GridSample, {kX22, grid}, {{"mode", "linear"s}}),
                 "unknown GridSample mode 'linear' (expected one of bilinear nearest bicubic)"));
  CHECK(contains(op_error(OpKind::GridSample, {kX22, grid}, {{"padding_mode", "edge"s}}),
                 "unknown GridSample padding_mode 'edge'"));
  CHECK(contains(op_error(OpKind::GridSample, {kX22, grid}, {{"align_corners", int64_t{2}}}),
                 "align_corners must be 0 or 1, got 2"));
  CHECK(contains(op_error(OpKind::GridSample, {f32({1, 2, 2}, {1, 2, 3, 4}), grid}),
                 "X must have shape [N, C, H, W] (rank 4), got [1,2,2]"));
  CHECK(contains(op_error(OpKind::GridSample, {kX22, f32({1, 1, 1, 3}, {0, 0, 0})}),
                 "grid must have shape [N, H_out, W_out, 2], got [1,1,1,3]"));
  CHECK(contains(op_error(OpKind::GridSample, {kX22, f32({2, 1, 1, 2}, {0, 0, 0, 0})}),
                 "grid's N (2) must be X's (1)"));
  CHECK(contains(op_error(OpKind::GridSample, {Tensor(DType::f32, {1, 1, 0, 2}), grid}),
                 "X's H and W must be at least 1, got [1,1,0,2]"));
  CHECK(contains(op_error(OpKind::GridSample, {iota<int32_t>({1, 1, 2, 2}), grid}),
                 "(GridSample): input 0 has dtype i32"));
  CHECK(contains(op_error(OpKind::GridSample, {kX22, iota<int64_t>({1, 1, 1, 2})}),
                 "(GridSample): input 1 has dtype i64"));
}
