// Adam (ai.onnx.preview.training): hand-computed steps (the bias-corrected learning rate from
// T = 1 on, none at T = 0, the L2 terms before and after the update, several tensors, the
// defaults), and user errors.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;
using namespace std::string_literals;

namespace {

Attributes adam_attrs(double alpha, double beta, double norm = 0, double post = 0) {
  return {{"alpha", alpha},
          {"beta", beta},
          {"epsilon", 0.0},
          {"norm_coefficient", norm},
          {"norm_coefficient_post", post}};
}

std::vector<Tensor> adam(int64_t t, std::vector<Tensor> lists, Attributes a) {
  std::vector<Tensor> in{Tensor::scalar(0.1f), Tensor::scalar(t)};
  in.insert(in.end(), lists.begin(), lists.end());
  return run_op(OpKind::Adam, in, std::move(a), static_cast<int>(lists.size() / 4 * 3));
}

}  // namespace

TEST_CASE("Adam: one step with bias correction from T = 1, none at T = 0") {
  // alpha 0.5, beta 0.96. Element 0: X 1, G 2, V 0, H 0: V_new = 1, H_new = 0.04 * 4 = 0.16.
  // Element 1: X 2, G -2, V 4, H 4: V_new = 2 - 1 = 1, H_new = 3.84 + 0.16 = 4.
  const std::vector<Tensor> lists{f32({2}, {1, 2}), f32({2}, {2, -2}), f32({2}, {0, 4}),
                                  f32({2}, {0, 4})};
  // T = 1: R_adjusted = 0.1 * sqrt(1 - 0.96) / (1 - 0.5) = 0.04;
  // X_new = [1 - 0.04 * 1 / 0.4, 2 - 0.04 * 1 / 2] = [0.9, 1.98].
  auto out = adam(1, lists, adam_attrs(0.5, 0.96));
  check_close(out[0], {2}, {0.9, 1.98});
  check_close(out[1], {2}, {1, 1});
  check_close(out[2], {2}, {0.16, 4});
  // T = 0: R_adjusted = R: X_new = [1 - 0.1 / 0.4, 2 - 0.1 / 2] = [0.75, 1.95].
  out = adam(0, lists, adam_attrs(0.5, 0.96));
  check_close(out[0], {2}, {0.75, 1.95});
  check_close(out[1], {2}, {1, 1});
}

TEST_CASE("Adam: norm_coefficient joins the gradient, norm_coefficient_post shrinks X") {
  // g = 0.5 * 2 + 1 = 2; V_new = 1; H_new = 0.16; T = 0:
  // X_new = (1 - 0.1) * (2 - 0.1 * 1 / 0.4) = 0.9 * 1.75.
  const auto out = adam(0, {f32({1}, {2}), f32({1}, {1}), f32({1}, {0}), f32({1}, {0})},
                        adam_attrs(0.5, 0.96, 0.5, 0.1));
  check_close(out[0], {1}, {1.575});
  check_close(out[1], {1}, {1});
  check_close(out[2], {1}, {0.16});
}

TEST_CASE("Adam: several tensors, outputs X..., V..., H...") {
  // Tensor 2: X 3, G 2, V 0, H 0 at T = 1: V_new 1, H_new 0.16, X_new 3 - 0.04 / 0.4 = 2.9.
  const auto out = adam(1,
                        {f32({1}, {1}), f32({1, 1}, {3}), f32({1}, {2}), f32({1, 1}, {2}),
                         f32({1}, {0}), f32({1, 1}, {0}), f32({1}, {0}), f32({1, 1}, {0})},
                        adam_attrs(0.5, 0.96));
  REQUIRE(out.size() == 6);
  check_close(out[0], {1}, {0.9});
  check_close(out[1], {1, 1}, {2.9});
  check_close(out[2], {1}, {1});
  check_close(out[3], {1, 1}, {1});
  check_close(out[4], {1}, {0.16});
  check_close(out[5], {1, 1}, {0.16});
}

TEST_CASE("Adam: defaults alpha 0.9, beta 0.999, epsilon 1e-6, no L2 terms") {
  // X 1, G 1, V 0, H 0, R 1, T 0: V_new 0.1, H_new 0.001, X_new = 1 - 0.1 / (sqrt(0.001) + 1e-6).
  const Tensor one = Tensor::from<double>({1}, {1}), zero = Tensor::from<double>({1}, {0});
  const auto out = run_op(
      OpKind::Adam, {Tensor::scalar(1.0), Tensor::scalar(int64_t{0}), one, one, zero, zero}, {}, 3);
  check_close(out[0], {1}, {-2.1621776633305574}, 1e-9, 1e-12);
  check_close(out[1], {1}, {0.1}, 1e-12, 1e-15);
  check_close(out[2], {1}, {0.001}, 1e-12, 1e-15);
}

TEST_CASE("Adam: user errors") {
  const Tensor x = f32({1}, {1});
  CHECK(contains(error_of([&] {
                   adam(0, {x, x, x}, adam_attrs(0.5, 0.9));
                 }),
                 "(Adam): takes 6 to 1024 inputs, got 5"));
  CHECK(contains(error_of([&] {
                   adam(0, {x, x, x, x, x, x}, adam_attrs(0.5, 0.9));
                 }),
                 "(Adam): takes R, T and 4 lists of n tensors (2 + 4n inputs, n >= 1), got 8"));
  CHECK(contains(error_of([&] {
                   adam(0, {x, x, x, f32({2}, {1, 2})}, adam_attrs(0.5, 0.9));
                 }),
                 "input 5 must have the shape of optimized tensor 0 (input 2) [1], got [2]"));
  CHECK(contains(error_of([&] {
                   adam(0, {x, x, x, x}, {{"beta", "high"s}});
                 }),
                 "(Adam): attribute 'beta' must be a float"));
}
