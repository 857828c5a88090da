// Momentum (ai.onnx.preview.training): hand-computed standard and Nesterov steps (beta applies
// from T = 1 on), the L2 term, several tensors, and user errors (its attributes are required).
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;
using namespace std::string_literals;

namespace {

Attributes momentum_attrs(const std::string& mode, double norm = 0) {
  return {{"alpha", 0.5}, {"beta", 0.25}, {"norm_coefficient", norm}, {"mode", mode}};
}

// R = 0.1; X [1, 2], G [2, 4], V [2, -2].
std::vector<Tensor> momentum(int64_t t, Attributes a) {
  return run_op(OpKind::Momentum,
                {Tensor::scalar(0.1f), Tensor::scalar(t), f32({2}, {1, 2}), f32({2}, {2, 4}),
                 f32({2}, {2, -2})},
                std::move(a), 2);
}

}  // namespace

TEST_CASE("Momentum: standard, beta from T = 1 on") {
  // T = 1: V_new = 0.5 * V + 0.25 * G = [1.5, 0]; X_new = X - 0.1 * V_new = [0.85, 2].
  auto out = momentum(1, momentum_attrs("standard"));
  check_close(out[0], {2}, {0.85, 2});
  check_close(out[1], {2}, {1.5, 0});
  // T = 0: beta counts as 1: V_new = [3, 3]; X_new = [0.7, 1.7].
  out = momentum(0, momentum_attrs("standard"));
  check_close(out[0], {2}, {0.7, 1.7});
  check_close(out[1], {2}, {3, 3});
}

TEST_CASE("Momentum: Nesterov steps along the gradient plus alpha times the new momentum") {
  // T = 1: V_new = [1.5, 0]; X_new = X - 0.1 * (G + 0.5 * V_new) = [1 - 0.275, 2 - 0.4].
  const auto out = momentum(1, momentum_attrs("nesterov"));
  check_close(out[0], {2}, {0.725, 1.6});
  check_close(out[1], {2}, {1.5, 0});
}

TEST_CASE("Momentum: the L2 term joins the gradient") {
  // g = X + G = [3, 6]; V_new = [1 + 0.75, -1 + 1.5] = [1.75, 0.5]; X_new = [0.825, 1.95].
  const auto out = momentum(1, momentum_attrs("standard", 1));
  check_close(out[0], {2}, {0.825, 1.95});
  check_close(out[1], {2}, {1.75, 0.5});
}

TEST_CASE("Momentum: several tensors, outputs X1_new, X2_new, V1_new, V2_new") {
  // Tensor 2: X 3, G 1, V 0 at T = 1: V_new 0.25, X_new 3 - 0.025.
  const auto out =
      run_op(OpKind::Momentum,
             {Tensor::scalar(0.1f), Tensor::scalar(int64_t{1}), f32({2}, {1, 2}), f32({1}, {3}),
              f32({2}, {2, 4}), f32({1}, {1}), f32({2}, {2, -2}), f32({1}, {0})},
             momentum_attrs("standard"), 4);
  check_close(out[0], {2}, {0.85, 2});
  check_close(out[1], {1}, {2.975});
  check_close(out[2], {2}, {1.5, 0});
  check_close(out[3], {1}, {0.25});
}

TEST_CASE("Momentum: user errors") {
  CHECK(contains(error_of([] { momentum(1, momentum_attrs("heavy")); }),
                 "(Momentum): unknown Momentum mode 'heavy' (expected one of standard nesterov)"));
  const Attributes no_alpha{{"beta", 0.25}, {"norm_coefficient", 0.0}, {"mode", "standard"s}};
  CHECK(contains(error_of([&] { momentum(1, no_alpha); }),
                 "(Momentum): missing required attribute 'alpha'"));
  CHECK(contains(error_of([] {
                   momentum(1, {{"alpha", 0.5}, {"beta", 0.25}, {"norm_coefficient", 0.0}});
                 }),
                 "missing required attribute 'mode' (standard or nesterov)"));
  CHECK(contains(error_of([] {
                   run_op(OpKind::Momentum,
                          {Tensor::scalar(0.1f), Tensor::scalar(int64_t{1}), f32({2}, {1, 2}),
                           f32({2}, {2, 4}), f32({1}, {0})},
                          momentum_attrs("standard"), 2);
                 }),
                 "input 4 must have the shape of optimized tensor 0 (input 2) [2], got [1]"));
}
