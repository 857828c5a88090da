// LayerNormalization against hand-computed values and an xtensor reference.
#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>

#include "jit/lowering_samples.h"
#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
const double kR32 = 1.2247448714;  // sqrt(3/2) = 1 / sqrt(var({1,2,3}))
const double kR5 = 0.8944271910;   // 1 / sqrt(1.25)
}  // namespace

TEST_CASE("LayerNormalization: last axis, without and with bias, Mean and InvStdDev outputs") {
  // rows {1,2,3} (mean 2, var 2/3) and {2,4,6} (mean 4, var 8/3); epsilon 0 keeps it exact
  const Tensor x = f32({2, 3}, {1, 2, 3, 2, 4, 6});
  const Attributes eps0{{"epsilon", 0.0}};
  const auto out = run_op(OpKind::LayerNormalization, {x, f32({3}, {1, 1, 1})}, eps0, 3);
  check_close(out[0], {2, 3}, {-kR32, 0, kR32, -kR32, 0, kR32});
  CHECK(out[1].dtype() == DType::f32);
  check_close(out[1], {2, 1}, {2, 4});
  check_close(out[2], {2, 1}, {kR32, kR32 / 2});
  // Y = norm * Scale + B
  const Tensor y = run_op(OpKind::LayerNormalization,
                          {x, f32({3}, {1, 2, 3}), f32({3}, {0.5f, 0, -1})}, eps0)[0];
  check_close(y, {2, 3}, {-kR32 + 0.5, 0, 3 * kR32 - 1, -kR32 + 0.5, 0, 3 * kR32 - 1});
  // only Y and Mean requested
  const auto two = run_op(OpKind::LayerNormalization, {x, f32({3}, {1, 1, 1})}, eps0, 2);
  check_close(two[1], {2, 1}, {2, 4});
}

TEST_CASE("LayerNormalization: epsilon, default and explicit") {
  // {0, 2}: mean 1, var 1 -> Y = {-1, 1} / sqrt(1 + 1e-5)
  const Tensor x = Tensor::from<double>({1, 2}, {0, 2});
  const double k = 1 / std::sqrt(1 + 1e-5);
  check_close(run_op(OpKind::LayerNormalization, {x, Tensor::from<double>({2}, {1, 1})})[0], {1, 2},
              {-k, k}, 1e-10, 0);
  // a constant row has var 0: InvStdDev = 1/sqrt(epsilon) = 2 and Y = B
  const auto out = run_op(OpKind::LayerNormalization,
                          {f32({1, 3}, {5, 5, 5}), f32({3}, {3, 3, 3}), f32({3}, {1, 2, 3})},
                          {{"epsilon", 0.25}}, 3);
  check_close(out[0], {1, 3}, {1, 2, 3});
  check_close(out[1], {1, 1}, {5});
  check_close(out[2], {1, 1}, {2});
}

TEST_CASE("LayerNormalization: two trailing dims, broadcast Scale and B, axis 0") {
  // rows {1,2,3,4} (mean 2.5, var 1.25) and {0,0,2,2} (mean 1, var 1)
  const Tensor x = f32({2, 2, 2}, {1, 2, 3, 4, 0, 0, 2, 2});
  const Attributes a1{{"axis", int64_t{1}}, {"epsilon", 0.0}};
  const std::vector<double> n1 = {-1.5 * kR5, -0.5 * kR5, 0.5 * kR5, 1.5 * kR5, -1, -1, 1, 1};
  const auto out = run_op(OpKind::LayerNormalization, {x, f32({2, 2}, {1, 1, 1, 1})}, a1, 3);
  check_close(out[0], {2, 2, 2}, n1);
  check_close(out[1], {2, 1, 1}, {2.5, 1});
  check_close(out[2], {2, 1, 1}, {kR5, 1});
  // Scale [2] scales the last dim: {1, 10}
  const Attributes am2{{"axis", int64_t{-2}}, {"epsilon", 0.0}};
  check_close(run_op(OpKind::LayerNormalization, {x, f32({2}, {1, 10})}, am2)[0], {2, 2, 2},
              {n1[0], 10 * n1[1], n1[2], 10 * n1[3], -1, -10, 1, 10});
  // Scale [2,1] scales the middle dim, B [1] adds 1 everywhere
  check_close(run_op(OpKind::LayerNormalization, {x, f32({2, 1}, {1, 10}), f32({1}, {1})}, a1)[0],
              {2, 2, 2}, {n1[0] + 1, n1[1] + 1, 10 * n1[2] + 1, 10 * n1[3] + 1, 0, 0, 11, 11});
  // axis 0 normalises everything
  const auto all = run_op(OpKind::LayerNormalization, {f32({4}, {1, 2, 3, 4}), f32({1}, {1})},
                          {{"axis", int64_t{0}}, {"epsilon", 0.0}}, 3);
  check_close(all[0], {4}, {n1[0], n1[1], n1[2], n1[3]});
  check_close(all[1], {1}, {2.5});
}

TEST_CASE("LayerNormalization: f64 and stash_type decide the statistics dtype") {
  const Tensor x = Tensor::from<double>({1, 3}, {1, 2, 3});
  const Tensor s = Tensor::from<double>({3}, {1, 1, 1});
  const auto dflt = run_op(OpKind::LayerNormalization, {x, s}, {{"epsilon", 0.0}}, 3);
  CHECK(dflt[0].dtype() == DType::f64);
  CHECK(dflt[1].dtype() == DType::f32);
  CHECK(dflt[2].dtype() == DType::f32);
  check_close(dflt[0], {1, 3}, {-kR32, 0, kR32}, 1e-9, 1e-12);
  const auto wide = run_op(OpKind::LayerNormalization, {x, s},
                           {{"epsilon", 0.0}, {"stash_type", int64_t{11}}}, 3);
  CHECK(wide[1].dtype() == DType::f64);
  check_close(wide[2], {1, 1}, {kR32}, 1e-9, 1e-12);
}

TEST_CASE("LayerNormalization: size-1 normalised dim gives B") {
  const auto out = run_op(OpKind::LayerNormalization,
                          {f32({3, 1}, {1, 2, 3}), f32({1}, {2}), f32({1}, {0.5f})}, {}, 3);
  check_close(out[0], {3, 1}, {0.5, 0.5, 0.5});
  check_close(out[1], {3, 1}, {1, 2, 3});
  check_close(out[2], {3, 1}, std::vector<double>(3, 1 / std::sqrt(1e-5)));
}

TEST_CASE("LayerNormalization: random inputs against xtensor, odd sizes") {
  const double eps = 1e-3;
  for (int64_t axis : {1, 2}) {
    CAPTURE(axis);
    const Tensor x = test::random_f32({2, 3, 7}, 5, -3.0f, 5.0f);
    const Shape sshape = axis == 1 ? Shape{3, 7} : Shape{7};
    const Tensor scale = test::random_f32(sshape, 6), bias = test::random_f32({7}, 7);
    std::vector<size_t> axes;
    for (size_t d = static_cast<size_t>(axis); d < 3; ++d) axes.push_back(d);
    const xt::xarray<double> a = to_xt<double>(x);
    const xt::xarray<double> mean = xt::mean(a, axes, xt::keep_dims);
    const xt::xarray<double> var = xt::mean(xt::square(a - mean), axes, xt::keep_dims);
    const xt::xarray<double> inv = 1.0 / xt::sqrt(var + eps);
    const xt::xarray<double> want = (a - mean) * inv * to_xt<double>(scale) + to_xt<double>(bias);
    const auto out =
        run_op(OpKind::LayerNormalization, {x, scale, bias}, {{"axis", axis}, {"epsilon", eps}}, 3);
    check_close(out[0], {2, 3, 7}, {want.begin(), want.end()}, 1e-5, 1e-5);
    const Shape stat = axis == 1 ? Shape{2, 1, 1} : Shape{2, 3, 1};
    check_close(out[1], stat, {mean.begin(), mean.end()}, 1e-5, 1e-6);
    check_close(out[2], stat, {inv.begin(), inv.end()}, 1e-5, 1e-6);
  }
}

TEST_CASE("LayerNormalization: user errors") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor s = f32({3}, {1, 1, 1});
  CHECK(contains(op_error(OpKind::LayerNormalization, {x, f32({4}, {1, 1, 1, 1})}),
                 "Scale shape [4] cannot be broadcast to the normalized shape [3]"));
  CHECK(contains(op_error(OpKind::LayerNormalization, {x, s, f32({2, 3}, {1, 1, 1, 1, 1, 1})}),
                 "B shape [2,3] cannot be broadcast"));
  CHECK(contains(op_error(OpKind::LayerNormalization, {x, s}, {{"axis", int64_t{2}}}),
                 "axis 2 is out of range for rank 2"));
  CHECK(contains(op_error(OpKind::LayerNormalization, {Tensor::from<int32_t>({3}, {1, 2, 3}), s}),
                 "must be a float tensor"));
  CHECK(contains(op_error(OpKind::LayerNormalization, {x, Tensor::from<double>({3}, {1, 1, 1})}),
                 "must have the same dtype"));
  CHECK(contains(op_error(OpKind::LayerNormalization, {x, s}, {{"stash_type", int64_t{7}}}),
                 "stash_type must name a float type"));
  CHECK(contains(op_error(OpKind::LayerNormalization, {Tensor::scalar<float>(1), f32({1}, {1})}),
                 "rank >= 1"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(LayerNormalization, last_axis) {
  s.rtol = 1e-4, s.atol = 1e-5;
  const ValueId x = s.input(DType::f32, {3, n}, -3, 5);
  s.output(s.b.layer_normalization(x, s.input(DType::f32, {n}, 0.5, 2), s.input(DType::f32, {n})));
}
