// And / Or / Xor and GreaterOrEqual / LessOrEqual: truth tables, broadcasting, NaN, errors.
#include <limits>

#include <xtensor/xarray.hpp>
#include <xtensor/xoperation.hpp>

#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
Tensor bools(Shape s, std::initializer_list<bool> v) { return Tensor::from<bool>(std::move(s), v); }
}  // namespace

TEST_CASE("And / Or / Xor: truth tables") {
  const Tensor a = bools({4}, {true, true, false, false});
  const Tensor b = bools({4}, {true, false, true, false});
  const Tensor y = run_op(OpKind::And, {a, b})[0];
  CHECK(y.dtype() == DType::boolean);
  check_close(y, {4}, {1, 0, 0, 0});
  check_close(run_op(OpKind::Or, {a, b})[0], {4}, {1, 1, 1, 0});
  check_close(run_op(OpKind::Xor, {a, b})[0], {4}, {0, 1, 1, 0});
}

TEST_CASE("And / Or / Xor: broadcasting, scalars and size-1 dims") {
  const Tensor col = bools({2, 1}, {true, false});
  const Tensor row = bools({3}, {true, false, true});
  check_close(run_op(OpKind::And, {col, row})[0], {2, 3}, {1, 0, 1, 0, 0, 0});
  check_close(run_op(OpKind::Or, {col, row})[0], {2, 3}, {1, 1, 1, 1, 0, 1});
  check_close(run_op(OpKind::Xor, {col, row})[0], {2, 3}, {0, 1, 0, 1, 0, 1});
  const Tensor t = Tensor::scalar(true);
  check_close(run_op(OpKind::Xor, {row, t})[0], {3}, {0, 1, 0});
  check_close(run_op(OpKind::And, {t, t})[0], {}, {1});
}

TEST_CASE("And / Or / Xor against xtensor on random 3-D broadcasts") {
  std::mt19937 rng(3);
  auto random_bools = [&](Shape s) {
    Tensor t(DType::boolean, std::move(s));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<bool>()[i] = (rng() & 1) != 0;
    return t;
  };
  const Tensor a = random_bools({4, 1, 7}), b = random_bools({3, 1});
  const xt::xarray<bool> xa = to_xt<bool>(a), xb = to_xt<bool>(b);
  check_xt(run_op(OpKind::And, {a, b})[0], xa && xb, 0, 0);
  check_xt(run_op(OpKind::Or, {a, b})[0], xa || xb, 0, 0);
  check_xt(run_op(OpKind::Xor, {a, b})[0], xt::not_equal(xa, xb), 0, 0);
}

TEST_CASE("GreaterOrEqual / LessOrEqual: floats with broadcasting, NaN compares false") {
  const Tensor a = f32({3}, {1, 2, 3});
  const Tensor b = f32({1}, {2});
  const Tensor ge = run_op(OpKind::GreaterOrEqual, {a, b})[0];
  CHECK(ge.dtype() == DType::boolean);
  check_close(ge, {3}, {0, 1, 1});
  check_close(run_op(OpKind::LessOrEqual, {a, b})[0], {3}, {1, 1, 0});
  const Tensor n = f32({2}, {NAN, 1});
  check_close(run_op(OpKind::GreaterOrEqual, {n, f32({2}, {1, NAN})})[0], {2}, {0, 0});
  check_close(run_op(OpKind::LessOrEqual, {n, n})[0], {2}, {0, 1});
  const Tensor inf = f32({1}, {std::numeric_limits<float>::infinity()});
  check_close(run_op(OpKind::GreaterOrEqual, {inf, a})[0], {3}, {1, 1, 1});
}

TEST_CASE("GreaterOrEqual / LessOrEqual: integer dtypes, 2-D broadcast") {
  const Tensor col = Tensor::from<int64_t>({2, 1}, {-1, 5});
  const Tensor row = Tensor::from<int64_t>({3}, {-1, 0, 5});
  check_close(run_op(OpKind::GreaterOrEqual, {col, row})[0], {2, 3}, {1, 0, 0, 1, 1, 1});
  check_close(run_op(OpKind::LessOrEqual, {col, row})[0], {2, 3}, {1, 1, 1, 0, 0, 1});
  check_close(run_op(OpKind::LessOrEqual, {Tensor::from<uint8_t>({2}, {0, 255}),
                                           Tensor::from<uint8_t>({2}, {1, 254})})[0],
              {2}, {1, 0});
  check_close(run_op(OpKind::GreaterOrEqual,
                     {Tensor::from<double>({2}, {0.5, -0.5}), Tensor::scalar<double>(0)})[0],
              {2}, {1, 0});
}

TEST_CASE("And / Or / Xor / GreaterOrEqual / LessOrEqual: user errors") {
  const Tensor x = f32({2}, {1, 0});
  const Tensor b = bools({2}, {true, false});
  CHECK(contains(op_error(OpKind::And, {x, x}), "input 0 has dtype f32, expected one of bool"));
  CHECK(contains(op_error(OpKind::Or, {b, Tensor::from<int32_t>({2}, {1, 0})}),
                 "input 1 has dtype i32, expected one of bool"));
  CHECK(contains(op_error(OpKind::Xor, {b, bools({3}, {true, true, true})}),
                 "shapes [2] and [3] cannot be broadcast"));
  CHECK(contains(op_error(OpKind::And, {b}), "takes 2 inputs, got 1"));
  CHECK(contains(op_error(OpKind::GreaterOrEqual, {b, b}), "must be numeric"));
  CHECK(contains(op_error(OpKind::LessOrEqual, {x, Tensor::from<double>({2}, {1, 0})}),
                 "same dtype"));
}
