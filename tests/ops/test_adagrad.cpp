// Adagrad (ai.onnx.preview.training): hand-computed steps (the decayed learning rate, the L2
// term, several tensors at once, the default epsilon), and user errors, among them those of the
// layout the three optimizers share (src/ops/preview_training.h): input and output counts, R and
// T, shapes and dtypes of the lists.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;
using namespace std::string_literals;

namespace {

Attributes adagrad_attrs(double decay, double epsilon, double norm) {
  return {{"decay_factor", decay}, {"epsilon", epsilon}, {"norm_coefficient", norm}};
}

Tensor r_t(double r) { return Tensor::scalar(static_cast<float>(r)); }
Tensor count(int64_t t) { return Tensor::scalar(t); }

}  // namespace

TEST_CASE("Adagrad: one step, the learning rate decayed by the update count") {
  // r = 0.1 / (1 + 2 * 0.5) = 0.05; H_new = H + G^2 = [9, 25];
  // X_new = X - r * G / sqrt(H_new) = [1 - 0.05, 2 + 0.05 * 4 / 5] = [0.95, 2.04].
  const auto out = run_op(
      OpKind::Adagrad, {r_t(0.1), count(2), f32({2}, {1, 2}), f32({2}, {3, -4}), f32({2}, {0, 9})},
      adagrad_attrs(0.5, 0, 0), 2);
  check_close(out[0], {2}, {0.95, 2.04});
  check_close(out[1], {2}, {9, 25});
}

TEST_CASE("Adagrad: the L2 term joins the gradient") {
  // g = 0.5 * 2 + 1 = 2; H_new = 5 + 4 = 9; X_new = 2 - 0.1 * 2 / 3.
  const auto out =
      run_op(OpKind::Adagrad, {r_t(0.1), count(0), f32({1}, {2}), f32({1}, {1}), f32({1}, {5})},
             adagrad_attrs(0, 0, 0.5), 2);
  check_close(out[0], {1}, {2 - 0.2 / 3});
  check_close(out[1], {1}, {9});
}

TEST_CASE("Adagrad: several tensors, outputs X1_new, X2_new, H1_new, H2_new") {
  // Tensor 1 as in the first case; tensor 2 [[4]], G 1, H 3: H_new 4, X_new 4 - 0.05 / 2.
  const auto out = run_op(OpKind::Adagrad,
                          {r_t(0.1), count(2), f32({2}, {1, 2}), f32({1, 1}, {4}),
                           f32({2}, {3, -4}), f32({1, 1}, {1}), f32({2}, {0, 9}), f32({1, 1}, {3})},
                          adagrad_attrs(0.5, 0, 0), 4);
  check_close(out[0], {2}, {0.95, 2.04});
  check_close(out[1], {1, 1}, {3.975});
  check_close(out[2], {2}, {9, 25});
  check_close(out[3], {1, 1}, {4});
}

TEST_CASE("Adagrad: defaults are no decay, no L2 term, epsilon 1e-6, f64 kept") {
  // H_new = 1; X_new = 1 - 1 / (1 + 1e-6).
  const Tensor x = Tensor::from<double>({1}, {1});
  const auto out =
      run_op(OpKind::Adagrad, {Tensor::scalar(1.0), count(7), x, x, Tensor::from<double>({1}, {0})},
             {}, 2);
  CHECK(out[0].dtype() == DType::f64);
  check_close(out[0], {1}, {1 - 1 / (1 + 1e-6)}, 1e-9, 1e-15);
  check_close(out[1], {1}, {1});
}

TEST_CASE("Adagrad: user errors, and those of the optimizers' shared layout") {
  const Tensor x = f32({2}, {1, 2});
  const Attributes a = adagrad_attrs(0, 1e-6, 0);
  CHECK(contains(op_error(OpKind::Adagrad, {r_t(0.1), count(0), x, x, x, x}, a, 2),
                 "(Adagrad): takes R, T and 3 lists of n tensors (2 + 3n inputs, n >= 1), got 6"));
  CHECK(contains(op_error(OpKind::Adagrad, {r_t(0.1), count(0), x, x, x, x, x, x}, a, 3),
                 "has 2 outputs per optimized tensor (4 for 2), got 3"));
  CHECK(contains(op_error(OpKind::Adagrad, {r_t(0.1), count(0), x, f32({3}, {1, 2, 3}), x}, a, 2),
                 "input 3 must have the shape of optimized tensor 0 (input 2) [2], got [3]"));
  CHECK(contains(op_error(OpKind::Adagrad, {f32({2}, {1, 2}), count(0), x, x, x}, a, 2),
                 "R must be a scalar, got shape [2]"));
  CHECK(contains(op_error(OpKind::Adagrad, {r_t(0.1), ints({0, 1}), x, x, x}, a, 2),
                 "T must be a scalar, got shape [2]"));
  CHECK(contains(op_error(OpKind::Adagrad, {r_t(0.1), Tensor::scalar(int32_t{0}), x, x, x}, a, 2),
                 "(Adagrad): input 1 has dtype i32"));
  CHECK(contains(op_error(OpKind::Adagrad, {r_t(0.1), count(0), iota<int32_t>({2}), x, x}, a, 2),
                 "input 2 has dtype i32"));
  CHECK(contains(op_error(OpKind::Adagrad,
                          {r_t(0.1), count(0), x, x, Tensor::from<double>({2}, {1, 2})}, a, 2),
                 "inputs 4 and 2 must have the same dtype, got f64 and f32"));
  CHECK(
      contains(op_error(OpKind::Adagrad, {r_t(0.1), count(0), x, x, x}, {{"epsilon", "small"s}}, 2),
               "(Adagrad): attribute 'epsilon' must be a float"));
}
