// BatchNormalization (inference form): hand-computed values and the training-mode errors.
#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("BatchNormalization: per-channel normalisation, hand-computed") {
  // channel 0: (x - 2) / 1 * 1 + 0; channel 1: (x - 3) / 2 * 2 + 1 (epsilon 0)
  const Tensor scale = f32({2}, {1, 2}), b = f32({2}, {0, 1}), mean = f32({2}, {2, 3}),
               var = f32({2}, {1, 4});
  check_close(run_op(OpKind::BatchNormalization,
                     {f32({1, 2, 2}, {1, 3, 2, 4}), scale, b, mean, var}, {{"epsilon", 0.0}})[0],
              {1, 2, 2}, {-1, 1, 0, 2});
  // rank 2 [N, C] and rank 4 [N, C, 1, 2] with the default epsilon 1e-5
  check_close(
      run_op(OpKind::BatchNormalization, {f32({2, 2}, {2, 3, 4, 5}), scale, b, mean, var})[0],
      {2, 2}, {0, 1, 2, 3}, 1e-4);
  check_close(run_op(OpKind::BatchNormalization,
                     {f32({2, 2, 1, 2}, {1, 3, 2, 4, 0, 2, 5, 7}), scale, b, mean, var})[0],
              {2, 2, 1, 2}, {-1, 1, 0, 2, -2, 0, 3, 5}, 1e-4, 1e-4);
  // epsilon matters: var 0 + eps 0.25 -> divide by 0.5
  check_close(
      run_op(OpKind::BatchNormalization,
             {f32({1, 1, 2}, {1, 2}), f32({1}, {1}), f32({1}, {0}), f32({1}, {0}), f32({1}, {0})},
             {{"epsilon", 0.25}})[0],
      {1, 1, 2}, {2, 4});
}

TEST_CASE("BatchNormalization: f64") {
  auto d = [](std::initializer_list<double> v) { return Tensor::from<double>({2}, v); };
  const Tensor y =
      run_op(OpKind::BatchNormalization,
             {Tensor::from<double>({1, 2, 1}, {5, -1}), d({2, 1}), d({1, 0}), d({1, 1}), d({4, 1})},
             {{"epsilon", 0.0}})[0];
  CHECK(y.dtype() == DType::f64);
  check_close(y, {1, 2, 1}, {5, -2}, 1e-12);  // (5-1)/2*2+1, (-1-1)/1*1+0
}

TEST_CASE("BatchNormalization: errors") {
  const Tensor x = Tensor(DType::f32, {1, 2, 3}), p = Tensor(DType::f32, {2});
  CHECK(contains(
      op_error(OpKind::BatchNormalization, {x, p, p, p, p}, {{"training_mode", int64_t{1}}}),
      "training_mode=1 is not supported"));
  CHECK(contains(op_error(OpKind::BatchNormalization, {x, p, p, p, p}, {}, 3), "one output"));
  CHECK(contains(op_error(OpKind::BatchNormalization, {x, p, Tensor(DType::f32, {3}), p, p}),
                 "B must have shape [2]"));
  CHECK(contains(op_error(OpKind::BatchNormalization, {Tensor(DType::f32, {2}), p, p, p, p}),
                 "rank >= 2"));
  CHECK(contains(op_error(OpKind::BatchNormalization, {Tensor(DType::i32, {1, 2}), p, p, p, p}),
                 "must be a float tensor"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(BatchNormalization, rank_3) {
  const ValueId x = s.input(DType::f32, {2, 3, n});
  const ValueId scale = s.b.constant("", random_f32({3}, 2, 0.5f, 1.5f));
  const ValueId bias = s.b.constant("", random_f32({3}, 3));
  const ValueId mean = s.b.constant("", random_f32({3}, 4));
  s.output(s.b.batch_normalization(x, scale, bias, mean, s.input(DType::f32, {3}, 0.1f, 2)));
}
