// ReduceMin / ReduceProd / ReduceL1 / ReduceL2 / ReduceLogSum / ReduceLogSumExp / ReduceSumSquare:
// hand-computed values, axes as input or attribute, empty sets, NaN/inf, integers, xtensor.
#include <cmath>
#include <limits>

#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xsort.hpp>

#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("ReduceMin / ReduceProd / ReduceL1 / ReduceL2 / ReduceSumSquare: hand-computed") {
  const Tensor x = f32({2, 3}, {1, -2, 3, -4, 5, -6});
  check_close(run_op(OpKind::ReduceMin, {x}, axes_attr({1}))[0], {2, 1}, {-2, -6});
  check_close(run_op(OpKind::ReduceMin, {x}, axes_attr({0}, 0))[0], {3}, {-4, -2, -6});
  check_close(run_op(OpKind::ReduceMin, {x})[0], {1, 1}, {-6});
  // 1 * -2 * 3 = -6, -4 * 5 * -6 = 120; columns -4, -10, -18
  check_close(run_op(OpKind::ReduceProd, {x}, axes_attr({1}))[0], {2, 1}, {-6, 120});
  check_close(run_op(OpKind::ReduceProd, {x}, axes_attr({-2}, 0))[0], {3}, {-4, -10, -18});
  check_close(run_op(OpKind::ReduceProd, {x}, {{"keepdims", int64_t{0}}})[0], {}, {-720});
  check_close(run_op(OpKind::ReduceL1, {x}, axes_attr({1}))[0], {2, 1}, {6, 15});
  check_close(run_op(OpKind::ReduceL1, {x})[0], {1, 1}, {21});
  // sqrt(1 + 4 + 9), sqrt(16 + 25 + 36)
  check_close(run_op(OpKind::ReduceL2, {x}, axes_attr({-1}, 0))[0], {2},
              {3.7416573868, 8.7749643874});
  check_close(run_op(OpKind::ReduceSumSquare, {x}, axes_attr({1}))[0], {2, 1}, {14, 77});
  check_close(run_op(OpKind::ReduceSumSquare, {x}, axes_attr({0}, 0))[0], {3}, {17, 29, 45});
}

TEST_CASE("ReduceLogSum / ReduceLogSumExp: hand-computed") {
  const Tensor p = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  // log 6, log 15
  check_close(run_op(OpKind::ReduceLogSum, {p}, axes_attr({1}))[0], {2, 1},
              {1.7917594692, 2.7080502011});
  check_close(run_op(OpKind::ReduceLogSum, {p})[0], {1, 1}, {std::log(21.0)});
  // log(e + e^2 + e^3) = 3 + log(1 + e^-1 + e^-2) = 3.4076059644
  check_close(run_op(OpKind::ReduceLogSumExp, {p}, axes_attr({1}, 0))[0], {2},
              {3.4076059644, 6.4076059644});
  check_close(run_op(OpKind::ReduceLogSumExp, {p}, axes_attr({0}, 0))[0], {3},
              {4.0485873516, 5.0485873516, 6.0485873516});
  // the log of a negative sum is NaN
  check_close(run_op(OpKind::ReduceLogSum, {f32({2}, {-1, -2})})[0], {1}, {kNaN});
}

TEST_CASE("ReduceLogSumExp: no overflow, infinities and NaN") {
  check_close(run_op(OpKind::ReduceLogSumExp, {f32({2}, {1000, 1000})})[0], {1}, {1000.6931471806});
  check_close(
      run_op(OpKind::ReduceLogSumExp, {Tensor::from<double>({3}, {-1000, -1000, -kInf})})[0], {1},
      {-999.3068528194}, 1e-12);
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = f32({5, 2}, {inf, 1, -inf, -inf, -inf, 0, inf, inf, NAN, 1});
  check_close(run_op(OpKind::ReduceLogSumExp, {x}, axes_attr({1}, 0))[0], {5},
              {kInf, -kInf, 0, kInf, kNaN});
  // one long row exercises the four partial accumulators and their merge
  const Tensor row = iota<double>({1, 9}, -4);  // -4 .. 4
  double s = 0;
  for (int k = -4; k <= 4; ++k) s += std::exp(k);
  check_close(run_op(OpKind::ReduceLogSumExp, {row}, axes_attr({1}, 0))[0], {1}, {std::log(s)},
              1e-12);
}

TEST_CASE("ReduceMin: NaN propagates, every integer dtype") {
  check_close(run_op(OpKind::ReduceMin, {f32({2, 3}, {1, NAN, 3, 4, 5, 6})}, axes_attr({1}))[0],
              {2, 1}, {kNaN, 4});
  const Tensor u = run_op(OpKind::ReduceMin, {Tensor::from<uint8_t>({3}, {9, 3, 200})})[0];
  CHECK(u.dtype() == DType::u8);
  check_close(u, {1}, {3});
  check_close(run_op(OpKind::ReduceMin, {Tensor::from<int8_t>({3}, {-7, -100, 5})})[0], {1},
              {-100});
  check_close(run_op(OpKind::ReduceMin, {Tensor::from<int32_t>({2}, {-7, 3})})[0], {1}, {-7});
  check_close(run_op(OpKind::ReduceMin, {Tensor::from<int64_t>({3}, {5, -3, 7})})[0], {1}, {-3});
  check_close(run_op(OpKind::ReduceMin, {Tensor::from<double>({2}, {-0.5, 1.5})})[0], {1}, {-0.5});
}

TEST_CASE("ReduceProd / ReduceL1 / ReduceSumSquare on integers: exact, products wrap") {
  const Tensor p = run_op(OpKind::ReduceProd, {Tensor::from<int32_t>({3}, {2, 3, -4})})[0];
  CHECK(p.dtype() == DType::i32);
  check_close(p, {1}, {-24});
  // 2^16 * 2^16 = 2^32 wraps to 0 in int32
  check_close(run_op(OpKind::ReduceProd, {Tensor::from<int32_t>({2}, {65536, 65536})})[0], {1},
              {0});
  check_close(run_op(OpKind::ReduceProd, {Tensor::from<int64_t>({2}, {int64_t{1} << 62, 4})})[0],
              {1}, {0});
  check_close(run_op(OpKind::ReduceL1, {Tensor::from<int32_t>({2, 2}, {-3, 4, 5, -6})},
                     axes_attr({1}, 0))[0],
              {2}, {7, 11});
  const Tensor ss = run_op(OpKind::ReduceSumSquare, {Tensor::from<int64_t>({2}, {-3, 4})})[0];
  CHECK(ss.dtype() == DType::i64);
  check_close(ss, {1}, {25});
}

TEST_CASE("ReduceProd accumulates f32 in double") {
  // in f32 the partial products 1e-40 and 1e40 would underflow and overflow; in double the product
  // is 1
  const Tensor x = f32({4}, {1e-20f, 1e-20f, 1e20f, 1e20f});
  check_close(run_op(OpKind::ReduceProd, {x})[0], {1}, {1}, 1e-6);
}

TEST_CASE("New reductions: axes as input, noop_with_empty_axes, 3-D middle axes, f64") {
  const Tensor x = iota<float>({2, 3, 2}, 1);  // x[i][j][k] = 6i + 2j + k + 1
  // over j: min at j = 0: 6i + k + 1
  check_close(run_op(OpKind::ReduceMin, {x, ints({1})})[0], {2, 1, 2}, {1, 2, 7, 8});
  check_close(
      run_op(OpKind::ReduceMin, {x, ints({-2})}, {{"keepdims", int64_t{0}}}, 1, {false, true})[0],
      {2, 2}, {1, 2, 7, 8});
  // over i and k of j = 0: 1 * 2 * 7 * 8
  check_close(run_op(OpKind::ReduceProd, {x, ints({0, 2})})[0], {1, 3, 1},
              {112, 3 * 4 * 9 * 10, 5 * 6 * 11 * 12});
  const Attributes noop{{"noop_with_empty_axes", int64_t{1}}};
  check_close(run_op(OpKind::ReduceL1, {x, ints({})}, noop)[0], x.shape(), values(x));
  check_close(run_op(OpKind::ReduceLogSumExp, {x}, noop)[0], x.shape(), values(x));
  // an axes input wins over the attribute
  check_close(run_op(OpKind::ReduceSumSquare, {x, ints({2})}, axes_attr({0}, 0))[0], {2, 3},
              {5, 25, 61, 113, 181, 265});
  const Tensor d =
      run_op(OpKind::ReduceL2, {Tensor::from<double>({1, 2}, {3, 4})}, axes_attr({1}, 0))[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {1}, {5});
}

TEST_CASE("New reductions: zero-size reduced axes give the ONNX 18 identities") {
  const Tensor x(DType::f32, {2, 0});
  check_close(run_op(OpKind::ReduceMin, {x}, axes_attr({1}, 0))[0], {2}, {kInf, kInf});
  check_close(run_op(OpKind::ReduceProd, {x}, axes_attr({1}, 0))[0], {2}, {1, 1});
  check_close(run_op(OpKind::ReduceL1, {x}, axes_attr({1}, 0))[0], {2}, {0, 0});
  check_close(run_op(OpKind::ReduceL2, {x}, axes_attr({1}, 0))[0], {2}, {0, 0});
  check_close(run_op(OpKind::ReduceSumSquare, {x}, axes_attr({1}, 0))[0], {2}, {0, 0});
  check_close(run_op(OpKind::ReduceLogSum, {x}, axes_attr({1}, 0))[0], {2}, {-kInf, -kInf});
  check_close(run_op(OpKind::ReduceLogSumExp, {x}, axes_attr({1}, 0))[0], {2}, {-kInf, -kInf});
  check_close(run_op(OpKind::ReduceMin, {Tensor(DType::i32, {0, 2})}, axes_attr({0}, 0))[0], {2},
              std::vector<double>(2, std::numeric_limits<int32_t>::max()));
  check_close(run_op(OpKind::ReduceProd, {Tensor(DType::i64, {3, 0})}, axes_attr({0}, 0))[0], {0},
              {});
}

namespace {
std::vector<double> values_of(const xt::xarray<double>& a) { return {a.begin(), a.end()}; }
}  // namespace

TEST_CASE("New reductions: random inputs against xtensor") {
  const Tensor x = random_f32({3, 7, 1, 5}, 77, -2.0f, 2.0f);
  const Tensor pos = random_f32({3, 7, 1, 5}, 78, 0.1f, 3.0f);
  const xt::xarray<double> a = to_xt<double>(x), b = to_xt<double>(pos);
  const std::vector<std::vector<size_t>> axes_sets = {{0}, {1}, {3}, {1, 3}, {0, 2}, {0, 1, 2, 3}};
  for (const auto& axes : axes_sets) {
    CAPTURE(axes.size());
    CAPTURE(axes.back());
    const Ints ax(axes.begin(), axes.end());
    Shape kept;
    for (size_t d = 0; d < 4; ++d)
      if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(x.shape()[d]);
    auto check = [&](OpKind op, const Tensor& in, const xt::xarray<double>& want) {
      check_close(run_op(op, {in}, axes_attr(ax, 0))[0], kept, values_of(want), 1e-5, 1e-5);
    };
    check(OpKind::ReduceMin, x, xt::amin(a, axes));
    check(OpKind::ReduceProd, x, xt::prod(a, axes));
    check(OpKind::ReduceL1, x, xt::sum(xt::abs(a), axes));
    check(OpKind::ReduceL2, x, xt::sqrt(xt::sum(a * a, axes)));
    check(OpKind::ReduceSumSquare, x, xt::sum(a * a, axes));
    check(OpKind::ReduceLogSumExp, x, xt::log(xt::sum(xt::exp(a), axes)));
    check(OpKind::ReduceLogSum, pos, xt::log(xt::sum(b, axes)));
  }
}

TEST_CASE("New reductions: user errors") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor i = Tensor::from<int32_t>({2}, {1, 2});
  CHECK(contains(op_error(OpKind::ReduceL2, {i}), "input 0 must be a float tensor, got i32"));
  CHECK(contains(op_error(OpKind::ReduceLogSum, {i}), "must be a float tensor"));
  CHECK(contains(op_error(OpKind::ReduceLogSumExp, {i}), "must be a float tensor"));
  CHECK(contains(op_error(OpKind::ReduceProd, {Tensor::from<uint8_t>({1}, {1})}), "has dtype u8"));
  CHECK(contains(op_error(OpKind::ReduceMin, {Tensor::from<bool>({1}, {true})}), "has dtype bool"));
  CHECK(contains(op_error(OpKind::ReduceL1, {x}, axes_attr({2})),
                 "axis 2 is out of range for rank 2"));
  CHECK(contains(op_error(OpKind::ReduceSumSquare, {x, ints({1, -1})}), "appears twice"));
  CHECK(contains(op_error(OpKind::ReduceLogSumExp, {x, f32({1}, {0})}), "expected one of i32 i64"));
}
