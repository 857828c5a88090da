// ReduceSum / ReduceMean / ReduceMax against hand-computed values and against xtensor.
#include <limits>
#include <random>

#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xsort.hpp>

#include "jit/lowering_samples.h"
#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("ReduceSum: axes attribute, keepdims, negative axes, all axes") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  check_close(run_op(OpKind::ReduceSum, {x}, axes_attr({1}))[0], {2, 1}, {6, 15});
  check_close(run_op(OpKind::ReduceSum, {x}, axes_attr({1}, 0))[0], {2}, {6, 15});
  check_close(run_op(OpKind::ReduceSum, {x}, axes_attr({-1}, 0))[0], {2}, {6, 15});
  check_close(run_op(OpKind::ReduceSum, {x}, axes_attr({0}))[0], {1, 3}, {5, 7, 9});
  check_close(run_op(OpKind::ReduceSum, {x}, axes_attr({-2}, 0))[0], {3}, {5, 7, 9});
  check_close(run_op(OpKind::ReduceSum, {x}, axes_attr({0, 1}))[0], {1, 1}, {21});
  // no axes: reduce everything
  check_close(run_op(OpKind::ReduceSum, {x})[0], {1, 1}, {21});
  check_close(run_op(OpKind::ReduceSum, {x}, {{"keepdims", int64_t{0}}})[0], {}, {21});
}

TEST_CASE("ReduceSum: axes as input (graph input and constant), input wins over attribute") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  check_close(run_op(OpKind::ReduceSum, {x, ints({1})})[0], {2, 1}, {6, 15});
  check_close(run_op(OpKind::ReduceSum, {x, ints({-1})}, {}, 1, {false, true})[0], {2, 1}, {6, 15});
  check_close(run_op(OpKind::ReduceSum, {x, ints({0})}, axes_attr({1}, 0))[0], {3}, {5, 7, 9});
  // i32 axes are accepted too
  check_close(run_op(OpKind::ReduceSum, {x, Tensor::from<int32_t>({1}, {0})})[0], {1, 3},
              {5, 7, 9});
}

TEST_CASE("ReduceSum: noop_with_empty_axes") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Attributes noop{{"noop_with_empty_axes", int64_t{1}}};
  check_close(run_op(OpKind::ReduceSum, {x}, noop)[0], {2, 3}, {1, 2, 3, 4, 5, 6});
  check_close(run_op(OpKind::ReduceSum, {x, ints({})}, noop)[0], {2, 3}, {1, 2, 3, 4, 5, 6});
  check_close(run_op(OpKind::ReduceMax, {x, ints({})}, noop, 1, {false, true})[0], {2, 3},
              {1, 2, 3, 4, 5, 6});
  // empty axes input without noop: reduce everything
  check_close(run_op(OpKind::ReduceSum, {x, ints({})})[0], {1, 1}, {21});
  // noop only applies to empty axes
  const Attributes noop_axis{{"noop_with_empty_axes", int64_t{1}}, {"axes", Ints{0}}};
  check_close(run_op(OpKind::ReduceSum, {x}, noop_axis)[0], {1, 3}, {5, 7, 9});
}

TEST_CASE("ReduceSum / ReduceMean / ReduceMax: middle and non-adjacent axes of a 3-D tensor") {
  const Tensor x = iota<float>({2, 3, 2});  // x[i][j][k] = 6i + 2j + k
  // over j: 3(6i + k) + 2(0+1+2) = 18i + 3k + 6
  check_close(run_op(OpKind::ReduceSum, {x}, axes_attr({1}))[0], {2, 1, 2}, {6, 9, 24, 27});
  check_close(run_op(OpKind::ReduceMean, {x}, axes_attr({1}))[0], {2, 1, 2}, {2, 3, 8, 9});
  check_close(run_op(OpKind::ReduceMax, {x}, axes_attr({1}, 0))[0], {2, 2}, {4, 5, 10, 11});
  // over i and k: 8j + 14; mean /4; max at i = k = 1: 7 + 2j
  check_close(run_op(OpKind::ReduceSum, {x}, axes_attr({0, 2}))[0], {1, 3, 1}, {14, 22, 30});
  check_close(run_op(OpKind::ReduceMean, {x}, axes_attr({2, -3}, 0))[0], {3}, {3.5, 5.5, 7.5});
  check_close(run_op(OpKind::ReduceMax, {x}, axes_attr({0, 2}, 0))[0], {3}, {7, 9, 11});
}

TEST_CASE("ReduceSum: odd sizes, size-1 dims, f64 and integers") {
  const Tensor row = f32({1, 7}, {1, 2, 3, 4, 5, 6, 7});
  check_close(run_op(OpKind::ReduceSum, {row}, axes_attr({1}))[0], {1, 1}, {28});
  check_close(run_op(OpKind::ReduceSum, {row}, axes_attr({0}, 0))[0], {7}, {1, 2, 3, 4, 5, 6, 7});
  const Tensor col = Tensor::from<double>({7, 1}, {1, 2, 3, 4, 5, 6, 7.5});
  const Tensor s = run_op(OpKind::ReduceSum, {col}, axes_attr({0}))[0];
  CHECK(s.dtype() == DType::f64);
  check_close(s, {1, 1}, {28.5});
  const Tensor i = run_op(OpKind::ReduceSum, {Tensor::from<int32_t>({2, 2}, {1, -5, 7, 9})},
                          axes_attr({1}, 0))[0];
  CHECK(i.dtype() == DType::i32);
  check_close(i, {2}, {-4, 16});
  check_close(run_op(OpKind::ReduceSum, {Tensor::from<int64_t>({3}, {int64_t{1} << 40, 2, 3})})[0],
              {1}, {double(int64_t{1} << 40) + 5});
  // a scalar reduces to itself
  check_close(run_op(OpKind::ReduceSum, {Tensor::scalar<float>(2.5f)})[0], {}, {2.5});
}

TEST_CASE("ReduceSum: f32 accumulates in double") {
  // In f32, 1e8 + 1 == 1e8, so a float accumulator would return 0 here.
  const Tensor x = f32({6}, {1e8f, 1, 1, 1, 1, -1e8f});
  check_close(run_op(OpKind::ReduceSum, {x})[0], {1}, {4});
}

TEST_CASE("ReduceMean: floats, and integers truncate toward zero") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 7});
  check_close(run_op(OpKind::ReduceMean, {x}, axes_attr({1}))[0], {2, 1}, {2, 16.0 / 3});
  check_close(run_op(OpKind::ReduceMean, {x})[0], {1, 1}, {22.0 / 6});
  // (1+2)/2 = 1.5 -> 1; (-1-2)/2 = -1.5 -> -1; (4+4)/2 = 4
  const Tensor i = Tensor::from<int32_t>({3, 2}, {1, 2, -1, -2, 4, 4});
  const Tensor m = run_op(OpKind::ReduceMean, {i}, axes_attr({1}, 0))[0];
  CHECK(m.dtype() == DType::i32);
  check_close(m, {3}, {1, -1, 4});
  check_close(run_op(OpKind::ReduceMean, {Tensor::from<int64_t>({2}, {7, 8})})[0], {1}, {7});
}

TEST_CASE("ReduceMax: floats, every integer dtype, NaN propagates") {
  const Tensor x = f32({2, 3}, {1, -5, 3, -4, -2, -6});
  check_close(run_op(OpKind::ReduceMax, {x}, axes_attr({1}))[0], {2, 1}, {3, -2});
  check_close(run_op(OpKind::ReduceMax, {x}, axes_attr({0}, 0))[0], {3}, {1, -2, 3});
  check_close(run_op(OpKind::ReduceMax, {Tensor::from<double>({3}, {-1.5, -0.5, -2})})[0], {1},
              {-0.5});
  const Tensor u = run_op(OpKind::ReduceMax, {Tensor::from<uint8_t>({3}, {7, 200, 5})})[0];
  CHECK(u.dtype() == DType::u8);
  check_close(u, {1}, {200});
  check_close(run_op(OpKind::ReduceMax, {Tensor::from<int8_t>({3}, {-7, -100, -5})})[0], {1}, {-5});
  check_close(run_op(OpKind::ReduceMax, {Tensor::from<int32_t>({2}, {-7, 3})})[0], {1}, {3});
  check_close(run_op(OpKind::ReduceMax, {Tensor::from<int64_t>({2}, {-7, -3})})[0], {1}, {-3});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  check_close(run_op(OpKind::ReduceMax, {f32({2, 3}, {1, NAN, 3, 4, 5, 6})}, axes_attr({1}))[0],
              {2, 1}, {nan, 6});
}

TEST_CASE("ReduceSum / ReduceMax: zero-size reduced axes follow ONNX 18") {
  const Tensor x(DType::f32, {2, 0});
  check_close(run_op(OpKind::ReduceSum, {x}, axes_attr({1}))[0], {2, 1}, {0, 0});
  check_close(run_op(OpKind::ReduceMax, {x}, axes_attr({1}, 0))[0], {2}, {-kInf, -kInf});
  const Tensor i = run_op(OpKind::ReduceMax, {Tensor(DType::i32, {0, 3})}, axes_attr({0}, 0))[0];
  check_close(i, {3}, std::vector<double>(3, std::numeric_limits<int32_t>::lowest()));
  // an empty output needs no reduction at all, even for ReduceMean
  check_close(run_op(OpKind::ReduceMean, {x}, axes_attr({0}, 0))[0], {0}, {});
}

namespace {
std::vector<double> values(const xt::xarray<double>& a) { return {a.begin(), a.end()}; }
}  // namespace

TEST_CASE("ReduceSum / ReduceMean / ReduceMax: random inputs against xtensor") {
  const Tensor x = test::random_f32({3, 7, 1, 5}, 42, -10.0f, 10.0f);
  const xt::xarray<double> a = to_xt<double>(x);
  const std::vector<std::vector<size_t>> axes_sets = {{0},    {1},          {3},      {1, 3},
                                                      {0, 2}, {0, 1, 2, 3}, {0, 1, 3}};
  for (const auto& axes : axes_sets) {
    CAPTURE(axes.size());
    CAPTURE(axes.back());
    Ints ax(axes.begin(), axes.end());
    Ints neg;
    for (size_t d : axes) neg.push_back(static_cast<int64_t>(d) - 4);
    Shape kept;
    for (size_t d = 0; d < 4; ++d)
      if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(x.shape()[d]);
    check_close(run_op(OpKind::ReduceSum, {x}, axes_attr(ax, 0))[0], kept, values(xt::sum(a, axes)),
                1e-6, 1e-5);
    check_close(run_op(OpKind::ReduceMean, {x, ints(neg)}, {{"keepdims", int64_t{0}}})[0], kept,
                values(xt::mean(a, axes)), 1e-6, 1e-5);
    check_close(run_op(OpKind::ReduceMax, {x}, axes_attr(neg, 0))[0], kept,
                values(xt::amax(a, axes)), 0, 0);
  }
  // integers: exact
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> d(-1000, 1000);
  std::vector<int64_t> iv(4 * 7 * 3);
  for (auto& v : iv) v = d(rng);
  const Tensor xi = Tensor::from<int64_t>({4, 7, 3}, iv);
  const xt::xarray<double> ai = to_xt<double>(xi);
  check_close(run_op(OpKind::ReduceSum, {xi}, axes_attr({0, 2}, 0))[0], {7},
              values(xt::sum(ai, std::vector<size_t>{0, 2})), 0, 0);
  check_close(run_op(OpKind::ReduceMax, {xi}, axes_attr({1}, 0))[0], {4, 3},
              values(xt::amax(ai, std::vector<size_t>{1})), 0, 0);
}

TEST_CASE("ReduceSum / ReduceMean / ReduceMax: user errors") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(contains(op_error(OpKind::ReduceSum, {x}, axes_attr({2})),
                 "axis 2 is out of range for rank 2"));
  CHECK(contains(op_error(OpKind::ReduceMax, {x}, axes_attr({-3})), "out of range"));
  CHECK(contains(op_error(OpKind::ReduceMean, {x, ints({5})}), "out of range"));
  CHECK(contains(op_error(OpKind::ReduceSum, {x}, axes_attr({1, -1})), "appears twice"));
  CHECK(contains(op_error(OpKind::ReduceSum, {x, ints({0, 0})}, {}, 1, {false, true}),
                 "appears twice"));
  CHECK(contains(op_error(OpKind::ReduceSum, {Tensor::scalar<float>(1)}, axes_attr({0})),
                 "out of range for rank 0"));
  CHECK(contains(op_error(OpKind::ReduceSum, {x, f32({1}, {1})}), "expected one of i32 i64"));
  CHECK(contains(op_error(OpKind::ReduceSum, {x, Tensor::from<int64_t>({1, 1}, {1})}),
                 "must be 1-D"));
  CHECK(
      contains(op_error(OpKind::ReduceSum, {Tensor::from<uint8_t>({2}, {1, 2})}), "has dtype u8"));
  CHECK(
      contains(op_error(OpKind::ReduceMean, {Tensor::from<int8_t>({2}, {1, 2})}), "has dtype i8"));
  CHECK(contains(op_error(OpKind::ReduceMax, {Tensor::from<bool>({2}, {true, false})}),
                 "has dtype bool"));
  CHECK(contains(op_error(OpKind::ReduceMean, {Tensor(DType::f32, {2, 0})}, axes_attr({1})),
                 "empty set is undefined"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(ReduceSum, first_axis) {
  s.rtol = 1e-4, s.atol = 1e-5;
  s.output(s.b.reduce_sum(s.input(DType::f32, {n, 3}), axes_attr({0}, 0)));
}

SG_LOWERING_SAMPLE(ReduceSum, i32) {
  s.output(s.b.reduce_sum(s.input(DType::i32, {3, n}, -100, 100), axes_attr({1}, 1)));
}

SG_LOWERING_SAMPLE(ReduceMean, last_axis) {
  s.rtol = 1e-4, s.atol = 1e-5;
  s.output(s.b.reduce_mean(s.input(DType::f32, {3, n}), axes_attr({-1}, 1)));
}

SG_LOWERING_SAMPLE(ReduceMax, two_axes) {
  s.output(s.b.reduce_max(s.input(DType::f32, {2, n, 3}), axes_attr({0, 2}, 0)));
}

SG_LOWERING_SAMPLE(ReduceMin, two_axes) {
  s.output(s.b.reduce_min(s.input(DType::f32, {2, n, 3}), axes_attr({0, 2}, 0)));
  s.output(s.b.reduce_min(s.input(DType::i32, {n, 3}, -100, 100), axes_attr({1}, 1)));
  s.output(s.b.reduce_min(s.input(DType::u8, {3, n}, 0, 255), axes_attr({1}, 0)));
}

// Products of numbers near 1 (they stay finite at n = 1023), and of small integers.
SG_LOWERING_SAMPLE(ReduceProd, rows) {
  s.rtol = 1e-4, s.atol = 1e-5;
  s.output(s.b.reduce_prod(s.input(DType::f32, {n, 3}, 0.99f, 1.01f), axes_attr({0}, 0)));
  s.output(s.b.reduce_prod(s.input(DType::i64, {3, n}, -1, 1), axes_attr({1}, 1)));
}

SG_LOWERING_SAMPLE(ReduceL1, last_axis) {
  s.rtol = 1e-4, s.atol = 1e-5;
  s.output(s.b.reduce_l1(s.input(DType::f32, {3, n}), axes_attr({-1}, 1)));
  s.output(s.b.reduce_l1(s.input(DType::i32, {n, 2}, -100, 100), axes_attr({0}, 0)));
}

SG_LOWERING_SAMPLE(ReduceL2, last_axis) {
  s.rtol = 1e-4, s.atol = 1e-5;
  s.output(s.b.reduce_l2(s.input(DType::f32, {3, n}), axes_attr({-1}, 0)));
}

SG_LOWERING_SAMPLE(ReduceSumSquare, first_axis) {
  s.rtol = 1e-4, s.atol = 1e-5;
  s.output(s.b.reduce_sum_square(s.input(DType::f32, {n, 3}), axes_attr({0}, 1)));
  s.output(s.b.reduce_sum_square(s.input(DType::i64, {n, 3}, -10, 10), axes_attr({0}, 0)));
}

SG_LOWERING_SAMPLE(ReduceLogSum, positive) {
  s.rtol = 1e-4, s.atol = 1e-5;
  s.output(s.b.reduce_log_sum(s.input(DType::f32, {3, n}, 0.1f, 2.0f), axes_attr({1}, 1)));
}
