// Softmax / LogSoftmax against hand-computed values and an xtensor reference.
#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xsort.hpp>

#include "jit/lowering_samples.h"
#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
// softmax({0,1,2}) = {e^-2, e^-1, 1} / (e^-2 + e^-1 + 1), and its log
const std::vector<double> kSm012 = {0.0900305732, 0.2447284711, 0.6652409558};
const std::vector<double> kLsm012 = {-2.4076059645, -1.4076059645, -0.4076059645};
const double kLog3 = 1.0986122887;
std::vector<double> cat(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
}  // namespace

TEST_CASE("Softmax / LogSoftmax: last axis by default") {
  const Tensor x = f32({2, 3}, {0, 1, 2, 5, 5, 5});
  check_close(run_op(OpKind::Softmax, {x})[0], {2, 3}, cat(kSm012, {1. / 3, 1. / 3, 1. / 3}));
  check_close(run_op(OpKind::LogSoftmax, {x})[0], {2, 3}, cat(kLsm012, {-kLog3, -kLog3, -kLog3}));
  check_close(run_op(OpKind::Softmax, {x}, axis(1))[0], {2, 3},
              cat(kSm012, {1. / 3, 1. / 3, 1. / 3}));
}

TEST_CASE("Softmax / LogSoftmax: first and middle axes") {
  // axis 0 of [3,2]: each column is {0,1,2} (col 0) or {5,5,5} (col 1)
  const Tensor x = f32({3, 2}, {0, 5, 1, 5, 2, 5});
  check_close(run_op(OpKind::Softmax, {x}, axis(0))[0], {3, 2},
              {kSm012[0], 1. / 3, kSm012[1], 1. / 3, kSm012[2], 1. / 3});
  check_close(run_op(OpKind::LogSoftmax, {x}, axis(-2))[0], {3, 2},
              {kLsm012[0], -kLog3, kLsm012[1], -kLog3, kLsm012[2], -kLog3});
  // [2,2,2], x = 4i + 2j + k: along j each pair is (a, a+2) -> {1, e^2} / (1 + e^2)
  std::vector<float> v(8);
  for (int i = 0; i < 8; ++i) v[i] = static_cast<float>(i);
  const Tensor y = Tensor::from<float>({2, 2, 2}, v);
  const double lo = 0.1192029220, hi = 0.8807970780;
  check_close(run_op(OpKind::Softmax, {y}, axis(1))[0], {2, 2, 2},
              {lo, lo, hi, hi, lo, lo, hi, hi});
  const double llo = -2.1269280110, lhi = -0.1269280110;
  check_close(run_op(OpKind::LogSoftmax, {y}, axis(-2))[0], {2, 2, 2},
              {llo, llo, lhi, lhi, llo, llo, lhi, lhi});
}

TEST_CASE("Softmax / LogSoftmax: large magnitudes stay finite") {
  const Tensor x = f32({2, 3}, {1000, 1001, 1002, -1002, -1001, -1000});
  check_close(run_op(OpKind::Softmax, {x})[0], {2, 3}, cat(kSm012, kSm012));
  check_close(run_op(OpKind::LogSoftmax, {x})[0], {2, 3}, cat(kLsm012, kLsm012));
  // the same along a non-last axis
  const Tensor xc = f32({3, 2}, {1000, -1002, 1001, -1001, 1002, -1000});
  check_close(run_op(OpKind::Softmax, {xc}, axis(0))[0], {3, 2},
              {kSm012[0], kSm012[0], kSm012[1], kSm012[1], kSm012[2], kSm012[2]});
  check_close(run_op(OpKind::LogSoftmax, {xc}, axis(0))[0], {3, 2},
              {kLsm012[0], kLsm012[0], kLsm012[1], kLsm012[1], kLsm012[2], kLsm012[2]});
}

TEST_CASE("Softmax / LogSoftmax: size-1 axis, f64, 1-D") {
  const Tensor x = f32({3, 1}, {-4, 0, 9});
  check_close(run_op(OpKind::Softmax, {x})[0], {3, 1}, {1, 1, 1});
  check_close(run_op(OpKind::LogSoftmax, {x})[0], {3, 1}, {0, 0, 0});
  const Tensor d = run_op(OpKind::Softmax, {Tensor::from<double>({3}, {0, 1, 2})})[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {3}, kSm012, 1e-9, 1e-12);
  check_close(run_op(OpKind::LogSoftmax, {Tensor::from<double>({3}, {10, 11, 12})})[0], {3},
              kLsm012, 1e-9, 1e-12);
}

namespace {
// Stable softmax along `ax` written with xtensor reductions.
xt::xarray<double> xt_softmax(const xt::xarray<double>& a, size_t ax, bool log) {
  const std::vector<size_t> axes{ax};
  // (reductions are evaluated before broadcasting: xtensor 0.24 mis-broadcasts a lazy keep_dims
  // one)
  const xt::xarray<double> m = xt::amax(a, axes, xt::keep_dims);
  const xt::xarray<double> z = a - m;
  const xt::xarray<double> s = xt::sum(xt::exp(z), axes, xt::keep_dims);
  if (log) return z - xt::log(s);
  return xt::exp(z) / s;
}
}  // namespace

TEST_CASE("Softmax / LogSoftmax: random inputs against xtensor, every axis, odd sizes") {
  for (const Shape& shape : {Shape{3, 7, 5}, Shape{7}, Shape{1, 7, 1}}) {
    const Tensor x = test::random_f32(shape, 11, -20.0f, 20.0f);
    const xt::xarray<double> a = to_xt<double>(x);
    for (int64_t ax = 0; ax < x.rank(); ++ax) {
      CAPTURE(ax);
      for (bool log : {false, true}) {
        const xt::xarray<double> want = xt_softmax(a, static_cast<size_t>(ax), log);
        const Tensor got = run_op(log ? OpKind::LogSoftmax : OpKind::Softmax, {x},
                                  axis(ax - (ax % 2) * x.rank()))[0];  // odd axes given negative
        check_close(got, shape, {want.begin(), want.end()}, 1e-5, 1e-6);
      }
    }
  }
}

TEST_CASE("Softmax / LogSoftmax: user errors") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(contains(op_error(OpKind::Softmax, {x}, axis(2)), "axis 2 is out of range for rank 2"));
  CHECK(contains(op_error(OpKind::LogSoftmax, {x}, axis(-3)), "out of range"));
  CHECK(contains(op_error(OpKind::Softmax, {Tensor::from<int32_t>({2}, {1, 2})}),
                 "must be a float tensor"));
  CHECK(contains(op_error(OpKind::LogSoftmax, {Tensor::from<int64_t>({2}, {1, 2})}),
                 "must be a float"));
  CHECK(contains(op_error(OpKind::Softmax, {Tensor::scalar<float>(1)}), "rank >= 1"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(Softmax, last_axis) {
  s.rtol = 1e-4, s.atol = 1e-5;
  s.output(s.b.softmax(s.input(DType::f32, {3, n}, -5, 5)));
}

SG_LOWERING_SAMPLE(LogSoftmax, first_axis) {
  s.rtol = 1e-4, s.atol = 1e-5;
  s.output(s.b.log_softmax(s.input(DType::f32, {n, 4}, -5, 5), Attributes{{"axis", int64_t{0}}}));
}
