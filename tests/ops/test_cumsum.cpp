// CumSum: hand-computed running sums (exclusive, reverse, both, every axis, negative and i32
// axes), integer wrapping, and user errors.
#include <limits>

#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

Attributes flags(int64_t exclusive, int64_t reverse) {
  return {{"exclusive", exclusive}, {"reverse", reverse}};
}

}  // namespace

TEST_CASE("CumSum: 1-D with exclusive and reverse") {
  const Tensor x = Tensor::from<double>({5}, {1, 2, 3, 4, 5});
  const Tensor a = Tensor::scalar<int64_t>(0);
  check_close(run_op(OpKind::CumSum, {x, a})[0], {5}, {1, 3, 6, 10, 15});
  check_close(run_op(OpKind::CumSum, {x, a}, flags(1, 0))[0], {5}, {0, 1, 3, 6, 10});
  check_close(run_op(OpKind::CumSum, {x, a}, flags(0, 1))[0], {5}, {15, 14, 12, 9, 5});
  check_close(run_op(OpKind::CumSum, {x, a}, flags(1, 1))[0], {5}, {14, 12, 9, 5, 0});
}

TEST_CASE("CumSum: 2-D along each axis, negative and i32 axes, a 1-element axis tensor") {
  // x = [[1,2,3],[4,5,6]]
  const Tensor x = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  check_close(run_op(OpKind::CumSum, {x, Tensor::scalar<int64_t>(0)})[0], {2, 3},
              {1, 2, 3, 5, 7, 9});
  check_close(run_op(OpKind::CumSum, {x, Tensor::scalar<int32_t>(1)})[0], {2, 3},
              {1, 3, 6, 4, 9, 15});
  check_close(run_op(OpKind::CumSum, {x, Tensor::from<int64_t>({1}, {-1})}, flags(1, 1))[0], {2, 3},
              {5, 3, 0, 11, 6, 0});
  check_close(run_op(OpKind::CumSum, {Tensor(DType::f32, {0, 3}), Tensor::scalar<int64_t>(0)})[0],
              {0, 3}, {});
}

TEST_CASE("CumSum: integer sums wrap") {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const Tensor y =
      run_op(OpKind::CumSum, {Tensor::from<int64_t>({2}, {big, 1}), Tensor::scalar<int64_t>(0)})[0];
  CHECK(y.data<int64_t>()[0] == big);
  CHECK(y.data<int64_t>()[1] == std::numeric_limits<int64_t>::min());
  check_close(run_op(OpKind::CumSum,
                     {Tensor::from<int8_t>({3}, {100, 27, 1}), Tensor::scalar<int64_t>(0)})[0],
              {3}, {100, 127, -128});
}

TEST_CASE("CumSum: user errors") {
  const Tensor x = iota<float>({2, 3});
  CHECK(contains(op_error(OpKind::CumSum, {x, Tensor::scalar<int64_t>(2)}), "axis"));
  CHECK(contains(op_error(OpKind::CumSum, {x, Tensor::scalar<int64_t>(-3)}), "axis"));
  CHECK(contains(op_error(OpKind::CumSum, {x, Tensor::from<int64_t>({2}, {0, 1})}),
                 "axis must be a scalar, got shape [2]"));
  CHECK(contains(op_error(OpKind::CumSum, {Tensor::scalar<float>(1), Tensor::scalar<int64_t>(0)}),
                 "input must have rank >= 1, got a scalar"));
  CHECK(contains(op_error(OpKind::CumSum, {x, Tensor::scalar<float>(0)}),
                 "(CumSum): input 1 has dtype f32"));
  const Tensor b = Tensor::from<bool>({1}, {true});
  CHECK(contains(op_error(OpKind::CumSum, {b, Tensor::scalar<int64_t>(0)}), "(CumSum)"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

// Every exclusive/reverse setting along the long axis and a short one; float sums round as the
// interpreter's (the same additions in the same order), integer sums wrap.
SG_LOWERING_SAMPLE(CumSum, axes_and_flags) {
  s.rtol = 1e-4, s.atol = 1e-5;
  const ValueId x = s.input(DType::f32, {3, n});
  s.output(s.b.node(OpKind::CumSum, {x, s.b.ints({1})}).front());
  s.output(s.b.node(OpKind::CumSum, {x, s.b.ints({-1})}, flags(1, 1)).front());
  s.output(s.b.node(OpKind::CumSum, {x, s.b.ints({0})}, flags(0, 1)).front());
  s.output(
      s.b.node(OpKind::CumSum, {s.input(DType::f64, {n, 2}), s.b.ints({0})}, flags(1, 0)).front());
}

SG_LOWERING_SAMPLE(CumSum, integers) {
  const ValueId i = s.input(DType::i32, {2, n, 2}, -1000, 1000);
  s.output(s.b.node(OpKind::CumSum, {i, s.b.ints({1})}, flags(0, 1)).front());
  s.output(s.b.node(OpKind::CumSum, {s.input(DType::i64, {n}, -5, 5), s.b.ints({0})}, flags(1, 0))
               .front());
  const Tensor axis32 = Tensor::from<int32_t>({}, {2});
  s.output(s.b.node(OpKind::CumSum, {i, s.b.constant("", axis32)}).front());
}
