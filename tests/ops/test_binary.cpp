// Elementwise binary ops: hand-computed values and an xtensor broadcasting reference.
#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>

#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("Add/Sub/Mul/Div broadcasting: hand-computed") {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor row = f32({3}, {10, 20, 30});
  const Tensor col = f32({2, 1}, {100, 200});
  check_close(run_op(OpKind::Add, {a, row})[0], {2, 3}, {11, 22, 33, 14, 25, 36});
  check_close(run_op(OpKind::Sub, {a, col})[0], {2, 3}, {-99, -98, -97, -196, -195, -194});
  check_close(run_op(OpKind::Mul, {col, row})[0], {2, 3}, {1000, 2000, 3000, 2000, 4000, 6000});
  check_close(run_op(OpKind::Div, {a, Tensor::scalar(2.0f)})[0], {2, 3}, {0.5, 1, 1.5, 2, 2.5, 3});
  check_close(run_op(OpKind::Add, {Tensor::scalar(1.0f), Tensor::scalar(2.0f)})[0], {}, {3});
}

TEST_CASE("Integer arithmetic: truncating division, division by zero is an error") {
  const Tensor a = Tensor::from<int32_t>({4}, {7, -7, 6, 0});
  const Tensor b = Tensor::from<int32_t>({4}, {2, 2, -4, 5});
  check_close(run_op(OpKind::Div, {a, b})[0], {4}, {3, -3, -1, 0});
  check_close(run_op(OpKind::Mul, {a, b})[0], {4}, {14, -14, -24, 0});
  CHECK(contains(op_error(OpKind::Div, {a, Tensor::from<int32_t>({4}, {1, 0, 1, 1})}),
                 "integer division by zero"));
}

TEST_CASE("Pow: float, integer, and mixed exponent dtype") {
  check_close(run_op(OpKind::Pow, {f32({3}, {2, 4, 9}), f32({3}, {3, 0.5f, -1})})[0], {3},
              {8, 2, 1.0 / 9});
  check_close(run_op(OpKind::Pow,
                     {Tensor::from<int64_t>({3}, {2, -3, 5}), Tensor::from<int64_t>({1}, {3})})[0],
              {3}, {8, -27, 125});
  const Tensor y = run_op(OpKind::Pow, {f32({2}, {3, 2}), Tensor::from<int64_t>({}, {2})})[0];
  CHECK(y.dtype() == DType::f32);
  check_close(y, {2}, {9, 4});
}

TEST_CASE("Max/Min: variadic with broadcasting, NaN propagates") {
  const Tensor a = f32({2, 2}, {1, 5, 3, 0});
  const Tensor b = f32({2}, {2, 2});
  const Tensor c = f32({2, 1}, {4, -1});
  check_close(run_op(OpKind::Max, {a, b, c})[0], {2, 2}, {4, 5, 3, 2});
  check_close(run_op(OpKind::Min, {a, b, c})[0], {2, 2}, {1, 2, -1, -1});
  check_close(run_op(OpKind::Max, {a})[0], {2, 2}, {1, 5, 3, 0});
  check_close(run_op(OpKind::Min, {f32({2}, {NAN, 1}), f32({2}, {0, 2})})[0], {2}, {NAN, 1});
}

TEST_CASE("Equal/Greater/Less give bool, Equal accepts bool") {
  const Tensor a = f32({3}, {1, 2, 3});
  const Tensor b = f32({1}, {2});
  const Tensor eq = run_op(OpKind::Equal, {a, b})[0];
  CHECK(eq.dtype() == DType::boolean);
  check_close(eq, {3}, {0, 1, 0});
  check_close(run_op(OpKind::Greater, {a, b})[0], {3}, {0, 0, 1});
  check_close(run_op(OpKind::Less, {a, b})[0], {3}, {1, 0, 0});
  check_close(run_op(OpKind::Equal, {Tensor::from<bool>({2}, {true, false}),
                                     Tensor::from<bool>({2}, {true, true})})[0],
              {2}, {1, 0});
}

TEST_CASE("Where: three-way broadcast") {
  const Tensor cond = Tensor::from<bool>({2, 1}, {true, false});
  const Tensor x = Tensor::from<int64_t>({3}, {1, 2, 3});
  const Tensor y = Tensor::from<int64_t>({}, {-1});
  check_close(run_op(OpKind::Where, {cond, x, y})[0], {2, 3}, {1, 2, 3, -1, -1, -1});
}

TEST_CASE("Binary broadcasting against xtensor on random shapes") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{7}, {7}},    {{7, 1}, {1, 13}},      {{1}, {3, 7}},    {{2, 1, 7}, {3, 1}},
      {{1023}, {1}}, {{4, 1, 1, 5}, {3, 5}}, {{1, 1}, {1, 1}}, {{5, 0}, {1, 1}},
  };
  uint32_t seed = 1;
  for (const auto& [sa, sb] : cases) {
    CAPTURE(shape_str(sa));
    CAPTURE(shape_str(sb));
    const Tensor a = test::random_f32(sa, seed++), b = test::random_f32(sb, seed++, 0.5f, 2.0f);
    const auto xa = to_xt<float>(a), xb = to_xt<float>(b);
    check_xt(run_op(OpKind::Add, {a, b})[0], xa + xb);
    check_xt(run_op(OpKind::Sub, {a, b})[0], xa - xb);
    check_xt(run_op(OpKind::Mul, {a, b})[0], xa * xb);
    check_xt(run_op(OpKind::Div, {a, b})[0], xa / xb);
    check_xt(run_op(OpKind::Max, {a, b})[0], xt::maximum(xa, xb));
  }
}

TEST_CASE("Binary op errors") {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  std::string e = op_error(OpKind::Add, {a, f32({2}, {1, 2})});
  CHECK(contains(e, "(Add)"));
  CHECK(contains(e, "shapes [2,3] and [2] cannot be broadcast"));
  CHECK(contains(op_error(OpKind::Mul, {a, Tensor::from<double>({3}, {1, 2, 3})}), "same dtype"));
  CHECK(contains(
      op_error(OpKind::Greater, {Tensor::from<bool>({1}, {true}), Tensor::from<bool>({1}, {true})}),
      "must be numeric"));
  CHECK(contains(op_error(OpKind::Where, {a, a, a}), "expected one of bool"));
  CHECK(contains(op_error(OpKind::Sub, {a}), "takes 2 inputs, got 1"));
}
