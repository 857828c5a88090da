// Mod, variadic Sum / Mean and PRelu: hand-computed values, broadcasting, integer dtypes, and
// xtensor on random broadcast shapes.
#include <cstdint>
#include <limits>

#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>

#include "jit/lowering_samples.h"
#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
Attributes fmod_attr(int64_t f) { return {{"fmod", f}}; }
}  // namespace

TEST_CASE("Mod: integers, fmod=0 takes the divisor's sign, fmod=1 the dividend's") {
  const Tensor a = Tensor::from<int32_t>({6}, {5, -5, 5, -5, 7, 0});
  const Tensor b = Tensor::from<int32_t>({6}, {3, 3, -3, -3, 7, 4});
  // Python's %: 5 % 3 = 2, -5 % 3 = 1, 5 % -3 = -1, -5 % -3 = -2
  const Tensor m = run_op(OpKind::Mod, {a, b})[0];
  CHECK(m.dtype() == DType::i32);
  check_close(m, {6}, {2, 1, -1, -2, 0, 0});
  // C's %: the sign of the dividend
  check_close(run_op(OpKind::Mod, {a, b}, fmod_attr(1))[0], {6}, {2, -2, 2, -2, 0, 0});
  check_close(run_op(OpKind::Mod, {a, b}, fmod_attr(0))[0], {6}, {2, 1, -1, -2, 0, 0});
}

TEST_CASE("Mod: broadcasting, every integer dtype, lowest % -1") {
  const Tensor a = iota<int64_t>({2, 3}, -3);  // -3 -2 -1 / 0 1 2
  check_close(run_op(OpKind::Mod, {a, Tensor::from<int64_t>({1}, {2})})[0], {2, 3},
              {1, 0, 1, 0, 1, 0});
  check_close(run_op(OpKind::Mod, {a, Tensor::from<int64_t>({1}, {2})}, fmod_attr(1))[0], {2, 3},
              {-1, 0, -1, 0, 1, 0});
  // column divisor [2, 1]: row 0 mod 4, row 1 mod -4
  check_close(run_op(OpKind::Mod, {a, Tensor::from<int64_t>({2, 1}, {4, -4})})[0], {2, 3},
              {1, 2, 3, 0, -3, -2});
  check_close(run_op(OpKind::Mod, {Tensor::from<uint8_t>({2}, {200, 7}),
                                   Tensor::from<uint8_t>({2}, {7, 200})})[0],
              {2}, {4, 7});
  check_close(run_op(OpKind::Mod, {Tensor::from<int8_t>({3}, {-128, -7, 100}),
                                   Tensor::from<int8_t>({3}, {-1, 3, -30})})[0],
              {3}, {0, 2, -20});
  const int32_t lo = std::numeric_limits<int32_t>::lowest();
  check_close(
      run_op(OpKind::Mod, {Tensor::from<int32_t>({1}, {lo}), Tensor::from<int32_t>({1}, {-1})},
             fmod_attr(1))[0],
      {1}, {0});
  const int64_t lo64 = std::numeric_limits<int64_t>::lowest();
  check_close(run_op(OpKind::Mod,
                     {Tensor::from<int64_t>({1}, {lo64}), Tensor::from<int64_t>({1}, {-1})})[0],
              {1}, {0});
}

TEST_CASE("Mod: floats with fmod=1 are C fmod, a zero divisor gives NaN") {
  const Tensor a = f32({5}, {5.5f, -5.5f, 5.5f, -5.5f, 1});
  const Tensor b = f32({5}, {2, 2, -2, -2, 0});
  check_close(run_op(OpKind::Mod, {a, b}, fmod_attr(1))[0], {5},
              {1.5, -1.5, 1.5, -1.5, std::numeric_limits<double>::quiet_NaN()});
  const Tensor d =
      run_op(OpKind::Mod, {Tensor::from<double>({2}, {7.25, -0.5}), Tensor::scalar<double>(2)},
             fmod_attr(1))[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {2}, {1.25, -0.5});
}

TEST_CASE("Sum / Mean: variadic with broadcasting, one input, f64") {
  const Tensor a = f32({2, 2}, {1, 5, 3, 0});
  const Tensor b = f32({2}, {2, 2});
  const Tensor c = f32({2, 1}, {4, -1});
  check_close(run_op(OpKind::Sum, {a, b, c})[0], {2, 2}, {7, 11, 4, 1});
  check_close(run_op(OpKind::Mean, {a, b, c})[0], {2, 2}, {7.0 / 3, 11.0 / 3, 4.0 / 3, 1.0 / 3});
  check_close(run_op(OpKind::Sum, {a})[0], {2, 2}, {1, 5, 3, 0});
  check_close(run_op(OpKind::Mean, {a})[0], {2, 2}, {1, 5, 3, 0});
  check_close(run_op(OpKind::Mean, {b, c})[0], {2, 2}, {3, 3, 0.5, 0.5});
  const Tensor d = run_op(
      OpKind::Mean, {Tensor::from<double>({1}, {1}), Tensor::from<double>({3}, {2, 3, 4})})[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {3}, {1.5, 2, 2.5});
  check_close(run_op(OpKind::Sum, {Tensor::scalar(1.5f), Tensor::scalar(2.0f)})[0], {}, {3.5});
}

TEST_CASE("Sum / Mean against xtensor on random broadcast shapes") {
  const std::vector<std::array<Shape, 3>> cases = {
      {Shape{7}, Shape{7}, Shape{7}},
      {Shape{3, 1, 5}, Shape{4, 1}, Shape{5}},
      {Shape{1}, Shape{2, 7}, Shape{1, 1}},
      {Shape{5, 0}, Shape{1}, Shape{1, 1}},
  };
  uint32_t seed = 20;
  for (const auto& shapes : cases) {
    CAPTURE(shape_str(shapes[1]));
    const Tensor a = random_f32(shapes[0], seed++), b = random_f32(shapes[1], seed++),
                 c = random_f32(shapes[2], seed++);
    const auto xa = to_xt<float>(a), xb = to_xt<float>(b), xc = to_xt<float>(c);
    check_xt(run_op(OpKind::Sum, {a, b, c})[0], xa + xb + xc);
    check_xt(run_op(OpKind::Mean, {a, b, c})[0], (xa + xb + xc) / 3.0f);
  }
}

TEST_CASE("PRelu: slope broadcasts to x, floats and integers") {
  const Tensor x = f32({2, 3}, {-2, -1, 0, 1, 2, -3});
  check_close(run_op(OpKind::PRelu, {x, f32({3}, {0.1f, 0.2f, 0.3f})})[0], {2, 3},
              {-0.2, -0.2, 0, 1, 2, -0.9});
  check_close(run_op(OpKind::PRelu, {x, f32({1}, {0.5f})})[0], {2, 3}, {-1, -0.5, 0, 1, 2, -1.5});
  check_close(run_op(OpKind::PRelu, {x, f32({2, 1}, {0.5f, 2})})[0], {2, 3},
              {-1, -0.5, 0, 1, 2, -6});
  check_close(run_op(OpKind::PRelu, {x, Tensor::scalar(0.0f)})[0], {2, 3}, {0, 0, 0, 1, 2, 0});
  const Tensor i = run_op(
      OpKind::PRelu, {Tensor::from<int32_t>({3}, {-3, 4, 0}), Tensor::from<int32_t>({1}, {2})})[0];
  CHECK(i.dtype() == DType::i32);
  check_close(i, {3}, {-6, 4, 0});
  check_close(run_op(OpKind::PRelu,
                     {Tensor::from<double>({2}, {-4, 4}), Tensor::from<double>({2}, {0.25, 9})})[0],
              {2}, {-1, 4});
}

TEST_CASE("Mod / Sum / Mean / PRelu: user errors") {
  const Tensor x = f32({2}, {1, 2});
  const Tensor i = Tensor::from<int32_t>({2}, {5, 6});
  CHECK(contains(op_error(OpKind::Mod, {x, x}), "Mod of f32 needs fmod=1"));
  CHECK(contains(op_error(OpKind::Mod, {i, i}, fmod_attr(2)), "fmod must be 0 or 1, got 2"));
  CHECK(contains(op_error(OpKind::Mod, {i, Tensor::from<int32_t>({2}, {1, 0})}),
                 "integer modulo by zero"));
  CHECK(contains(op_error(OpKind::Mod, {i, Tensor::from<int64_t>({2}, {1, 1})}), "same dtype"));
  CHECK(contains(
      op_error(OpKind::Mod, {Tensor::from<bool>({1}, {true}), Tensor::from<bool>({1}, {true})}),
      "must be numeric"));
  CHECK(contains(op_error(OpKind::Sum, {i, i}), "input 0 must be a float tensor, got i32"));
  CHECK(contains(op_error(OpKind::Mean, {x, Tensor::from<int64_t>({2}, {1, 2})}),
                 "input 1 must be a float tensor, got i64"));
  CHECK(contains(op_error(OpKind::Mean, {x, Tensor::from<double>({2}, {1, 2})}), "same dtype"));
  CHECK(contains(op_error(OpKind::Sum, {x, f32({3}, {1, 2, 3})}), "cannot be broadcast"));
  CHECK(contains(op_error(OpKind::Mean, {}), "inputs"));
  CHECK(contains(op_error(OpKind::PRelu, {x, f32({2, 2}, {1, 2, 3, 4})}),
                 "slope of shape [2,2] does not broadcast to x's shape [2]"));
  CHECK(contains(op_error(OpKind::PRelu, {x, f32({3}, {1, 2, 3})}), "cannot be broadcast"));
  CHECK(contains(
      op_error(OpKind::PRelu, {Tensor::from<uint8_t>({1}, {1}), Tensor::from<uint8_t>({1}, {1})}),
      "has dtype u8"));
  CHECK(contains(op_error(OpKind::PRelu, {x, Tensor::from<double>({1}, {1})}), "same dtype"));
}

TEST_CASE("BitShift: u8 left and right, broadcast, shifts past the width give 0") {
  const Attributes left = {{"direction", std::string("LEFT")}};
  const Attributes right = {{"direction", std::string("RIGHT")}};
  const Tensor r = run_op(
      OpKind::BitShift,
      {Tensor::from<uint8_t>({3}, {16, 4, 1}), Tensor::from<uint8_t>({3}, {1, 2, 3})}, right)[0];
  CHECK(r.dtype() == DType::u8);
  check_close(r, {3}, {8, 1, 0});
  // 1 << [0, 3, 7, 8, 200] and 255 << 1 drops the high bit.
  check_close(
      run_op(OpKind::BitShift,
             {Tensor::from<uint8_t>({1}, {1}), Tensor::from<uint8_t>({5}, {0, 3, 7, 8, 200})},
             left)[0],
      {5}, {1, 8, 128, 0, 0});
  check_close(
      run_op(OpKind::BitShift,
             {Tensor::from<uint8_t>({2, 1}, {255, 128}), Tensor::from<uint8_t>({2}, {1, 9})},
             left)[0],
      {2, 2}, {254, 0, 0, 0});
  check_close(
      run_op(OpKind::BitShift, {Tensor::from<uint8_t>({1}, {255}), Tensor::from<uint8_t>({1}, {9})},
             right)[0],
      {1}, {0});
  CHECK(contains(op_error(OpKind::BitShift, {f32({1}, {1}), f32({1}, {1})}, left), "u8"));
  CHECK(contains(
      op_error(OpKind::BitShift, {Tensor::from<uint8_t>({1}, {1}), Tensor::from<uint8_t>({1}, {1})},
               {{"direction", std::string("UP")}}),
      "direction must be LEFT or RIGHT"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

// An integer Mod compiles with a constant divisor holding no zero (the generated samples pass the
// divisor as an input, which leaves integer Mod interpreted): both signs, -1 and 1, with and
// without fmod, broadcast along rows of n.
SG_LOWERING_SAMPLE(Mod, constant_integer_divisors) {
  const ValueId x = s.input(DType::i32, {n, 5}, -100, 100);
  const Tensor d32 = Tensor::from<int32_t>({5}, {3, -3, 7, -1, 1});
  s.output(s.b.node(OpKind::Mod, {x, s.b.constant("", d32)}).front());
  s.output(s.b.node(OpKind::Mod, {x, s.b.constant("", d32)}, {{"fmod", int64_t{1}}}).front());
  const Tensor d64 = Tensor::from<int64_t>({2, 1}, {-4, 9});
  s.output(
      s.b.node(OpKind::Mod, {s.input(DType::i64, {n}, -50, 50), s.b.constant("", d64)}).front());
  // Floats (fmod only): C's fmod, the divisor an input.
  s.output(s.b.node(OpKind::Mod,
                    {s.input(DType::f32, {n, 5}, -9, 9), s.input(DType::f32, {5}, 0.5f, 3)},
                    {{"fmod", int64_t{1}}})
               .front());
}

// An integer Div compiles with a constant divisor holding no zero, as Mod does.
SG_LOWERING_SAMPLE(Div, constant_integer_divisors) {
  const Tensor d32 = Tensor::from<int32_t>({5}, {3, -3, 7, -1, 1});
  s.output(s.b.node(OpKind::Div, {s.input(DType::i32, {n, 5}, -100, 100), s.b.constant("", d32)})
               .front());
  const Tensor d64 = Tensor::from<int64_t>({2, 1}, {-4, 9});
  s.output(
      s.b.node(OpKind::Div, {s.input(DType::i64, {n}, -50, 50), s.b.constant("", d64)}).front());
}
