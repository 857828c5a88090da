// InstanceNormalization, LRN and MeanVarianceNormalization: hand-computed statistics, windows
// clipped at the channel ends, and the errors a user can trigger.
#include <cmath>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("InstanceNormalization: per plane, scaled and shifted per channel") {
  // Plane 0 = [1, 3]: mean 2, var 1, with epsilon 1: (x - 2) / sqrt(2) * 2. Plane 1 = [2, 2]:
  // var 0, so only the bias 5 remains.
  const Tensor x = f32({1, 2, 1, 2}, {1, 3, 2, 2});
  const Tensor y = run_op(OpKind::InstanceNormalization, {x, f32({2}, {2, 1}), f32({2}, {0, 5})},
                          {{"epsilon", 1.0}})[0];
  check_close(y, {1, 2, 1, 2}, {-std::sqrt(2.0), std::sqrt(2.0), 5, 5});
  // Default epsilon 1e-5, f64, two images: [0, 4] -> mean 2, var 4, +-2 / sqrt(4 + 1e-5).
  const Tensor d = Tensor::from<double>({2, 1, 2}, {0, 4, 1, 1});
  const double k = 2 / std::sqrt(4 + 1e-5);
  check_close(run_op(OpKind::InstanceNormalization,
                     {d, Tensor::from<double>({1}, {1}), Tensor::from<double>({1}, {0})})[0],
              {2, 1, 2}, {-k, k, 0, 0});
}

TEST_CASE("InstanceNormalization: errors") {
  const Tensor x = iota<float>({1, 2, 2});
  CHECK(
      contains(op_error(OpKind::InstanceNormalization, {x, f32({3}, {1, 1, 1}), f32({2}, {0, 0})}),
               "input 1 must have shape [2], got [3]"));
  CHECK(contains(op_error(OpKind::InstanceNormalization,
                          {iota<float>({2, 2}), f32({2}, {1, 1}), f32({2}, {0, 0})}),
                 "rank >= 3"));
  CHECK(contains(op_error(OpKind::InstanceNormalization,
                          {x, Tensor::from<double>({2}, {1, 1}), f32({2}, {0, 0})}),
                 "same dtype"));
}

TEST_CASE("LRN: odd and even sizes, the window clipped at the channel ends") {
  // Channels [1, 2, 3], size 3, alpha / size = 1, beta 1, bias 1: windows {0,1}, {0,1,2}, {1,2}
  // have square sums 5, 14, 13.
  const Tensor x = f32({1, 3, 1, 1}, {1, 2, 3});
  check_close(run_op(OpKind::LRN, {x},
                     {{"size", int64_t{3}}, {"alpha", 3.0}, {"beta", 1.0}, {"bias", 1.0}})[0],
              {1, 3, 1, 1}, {1.0 / 6, 2.0 / 15, 3.0 / 14});
  // Size 2: windows [c, c + 1]: square sums 5, 13, 9.
  check_close(run_op(OpKind::LRN, {x},
                     {{"size", int64_t{2}}, {"alpha", 2.0}, {"beta", 1.0}, {"bias", 1.0}})[0],
              {1, 3, 1, 1}, {1.0 / 6, 2.0 / 14, 3.0 / 10});
  // Defaults (alpha 1e-4, beta 0.75, bias 1), size 1: x / (1 + 1e-4 x^2)^0.75.
  check_close(run_op(OpKind::LRN, {f32({1, 1, 2}, {2, -3})}, {{"size", int64_t{1}}})[0], {1, 1, 2},
              {2 / std::pow(1.0004, 0.75), -3 / std::pow(1.0009, 0.75)});
}

TEST_CASE("LRN: errors") {
  CHECK(contains(op_error(OpKind::LRN, {iota<float>({1, 3, 1})}, {{"size", int64_t{0}}}),
                 "size must be >= 1"));
  CHECK(
      contains(op_error(OpKind::LRN, {iota<float>({1, 3})}, {{"size", int64_t{1}}}), "rank >= 3"));
  CHECK(contains(op_error(OpKind::LRN, {iota<float>({1, 3, 1})}), "size"));
}

TEST_CASE("MeanVarianceNormalization: default axes and a given axis") {
  // One channel over N, H, W: [0, 2, 4, 6], mean 3, variance 5.
  const double s = std::sqrt(5.0);
  check_close(run_op(OpKind::MeanVarianceNormalization, {f32({2, 1, 1, 2}, {0, 2, 4, 6})})[0],
              {2, 1, 1, 2}, {-3 / s, -1 / s, 1 / s, 3 / s});
  // Along the last axis: rows [0, 2] and [4, 6] each become [-1, 1].
  check_close(run_op(OpKind::MeanVarianceNormalization, {f32({1, 1, 2, 2}, {0, 2, 4, 6})},
                     {{"axes", Ints{-1}}})[0],
              {1, 1, 2, 2}, {-1, 1, -1, 1});
}

TEST_CASE("MeanVarianceNormalization: errors") {
  CHECK(contains(op_error(OpKind::MeanVarianceNormalization, {iota<float>({2, 2, 2, 2})},
                          {{"axes", Ints{0, 0}}}),
                 "axis 0 is repeated"));
  CHECK(contains(op_error(OpKind::MeanVarianceNormalization, {iota<float>({2, 2, 2})}), "axes"));
  CHECK(contains(op_error(OpKind::MeanVarianceNormalization, {iota<int32_t>({2, 2, 2, 2})}),
                 "float"));
  // Found by fuzz_onnx_run: a scalar with axes [0] indexed an empty vector.
  CHECK(contains(
      op_error(OpKind::MeanVarianceNormalization, {Tensor::scalar<float>(1)}, {{"axes", Ints{0}}}),
      "rank >= 1"));
}
