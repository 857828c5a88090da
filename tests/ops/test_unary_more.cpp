// Trigonometric, rounding and activation unary ops: hand-computed values, NaN/inf behaviour,
// integer dtypes where ONNX allows them, and xtensor on random inputs.
#include <limits>

#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>

#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
const float kInfF = std::numeric_limits<float>::infinity();
}  // namespace

TEST_CASE("Asin / Acos / Atan: hand-computed, outside the domain is NaN") {
  const Tensor x = f32({5}, {-1, -0.5f, 0, 0.5f, 1});
  // pi/2 = 1.5707963268, pi/6 = 0.5235987756, atan(0.5) = 0.4636476090
  check_close(run_op(OpKind::Asin, {x})[0], {5},
              {-1.5707963268, -0.5235987756, 0, 0.5235987756, 1.5707963268});
  check_close(run_op(OpKind::Acos, {x})[0], {5},
              {3.1415926536, 2.0943951024, 1.5707963268, 1.0471975512, 0});
  check_close(run_op(OpKind::Atan, {x})[0], {5},
              {-0.7853981634, -0.4636476090, 0, 0.4636476090, 0.7853981634});
  check_close(run_op(OpKind::Asin, {f32({2}, {2, -1.5f})})[0], {2}, {kNaN, kNaN});
  check_close(run_op(OpKind::Acos, {Tensor::from<double>({1}, {1.5})})[0], {1}, {kNaN});
}

TEST_CASE("Sin / Cos / Tan at 0, pi/6, pi/4, pi/3") {
  const double pi = 3.14159265358979323846;
  const Tensor x = Tensor::from<double>({4}, {0, pi / 6, pi / 4, pi / 3});
  const Tensor s = run_op(OpKind::Sin, {x})[0];
  CHECK(s.dtype() == DType::f64);
  check_close(s, {4}, {0, 0.5, 0.7071067812, 0.8660254038}, 1e-9, 1e-12);
  check_close(run_op(OpKind::Cos, {x})[0], {4}, {1, 0.8660254038, 0.7071067812, 0.5}, 1e-9);
  check_close(run_op(OpKind::Tan, {x})[0], {4}, {0, 0.5773502692, 1, 1.7320508076}, 1e-9, 1e-12);
  check_close(run_op(OpKind::Sin, {f32({1}, {kInfF})})[0], {1}, {kNaN});
}

TEST_CASE("Sinh / Cosh / Asinh / Acosh / Atanh: hand-computed, domain edges") {
  const Tensor x = f32({3}, {0, 1, -2});
  check_close(run_op(OpKind::Sinh, {x})[0], {3}, {0, 1.1752011936, -3.6268604078});
  check_close(run_op(OpKind::Cosh, {x})[0], {3}, {1, 1.5430806348, 3.7621956911});
  check_close(run_op(OpKind::Asinh, {x})[0], {3}, {0, 0.8813735870, -1.4436354752});
  check_close(run_op(OpKind::Acosh, {f32({4}, {1, 2, 10, 0.5f})})[0], {4},
              {0, 1.3169578969, 2.9932228461, kNaN});
  check_close(run_op(OpKind::Atanh, {f32({5}, {0, 0.5f, -0.9f, 1, 2})})[0], {5},
              {0, 0.5493061443, -1.4722194896, kInf, kNaN});
  check_close(run_op(OpKind::Cosh, {f32({1}, {100})})[0], {1}, {kInf});  // overflows f32
}

TEST_CASE("Round halves to even, Ceil and Floor, inf and NaN pass through") {
  const Tensor x = f32({9}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4f, 2.6f, -2.6f});
  check_close(run_op(OpKind::Round, {x})[0], {9}, {0, 2, 2, 0, -2, -2, 2, 3, -3});
  const Tensor y = f32({7}, {-1.5f, -0.2f, 0, 1.2f, 2, kInfF, NAN});
  check_close(run_op(OpKind::Ceil, {y})[0], {7}, {-1, 0, 0, 2, 2, kInf, kNaN});
  check_close(run_op(OpKind::Floor, {y})[0], {7}, {-2, -1, 0, 1, 2, kInf, kNaN});
  const Tensor d = run_op(OpKind::Round, {Tensor::from<double>({2}, {3.5, -4.5})})[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {2}, {4, -4});
}

TEST_CASE("Sign: floats (NaN stays NaN) and every integer dtype") {
  check_close(run_op(OpKind::Sign, {f32({5}, {-3.5f, 0, 2, NAN, -kInfF})})[0], {5},
              {-1, 0, 1, kNaN, -1});
  const Tensor i = run_op(OpKind::Sign, {Tensor::from<int32_t>({3}, {-7, 0, 9})})[0];
  CHECK(i.dtype() == DType::i32);
  check_close(i, {3}, {-1, 0, 1});
  check_close(run_op(OpKind::Sign, {Tensor::from<int64_t>({2}, {-(int64_t{1} << 40), 3})})[0], {2},
              {-1, 1});
  check_close(run_op(OpKind::Sign, {Tensor::from<uint8_t>({2}, {0, 200})})[0], {2}, {0, 1});
  check_close(run_op(OpKind::Sign, {Tensor::from<int8_t>({2}, {-128, 127})})[0], {2}, {-1, 1});
}

TEST_CASE("Reciprocal: 1/x, zero gives inf") {
  check_close(run_op(OpKind::Reciprocal, {f32({5}, {2, -0.25f, 0, kInfF, -8})})[0], {5},
              {0.5, -4, kInf, 0, -0.125});
  check_close(run_op(OpKind::Reciprocal, {Tensor::from<double>({1}, {3})})[0], {1}, {1.0 / 3},
              1e-12);
}

TEST_CASE("IsNaN / IsInf: bool output, detect_negative and detect_positive") {
  const Tensor x = f32({5}, {1, NAN, kInfF, -kInfF, 0});
  const Tensor n = run_op(OpKind::IsNaN, {x})[0];
  CHECK(n.dtype() == DType::boolean);
  check_close(n, {5}, {0, 1, 0, 0, 0});
  check_close(run_op(OpKind::IsInf, {x})[0], {5}, {0, 0, 1, 1, 0});
  check_close(run_op(OpKind::IsInf, {x}, {{"detect_negative", int64_t{0}}})[0], {5},
              {0, 0, 1, 0, 0});
  check_close(run_op(OpKind::IsInf, {x}, {{"detect_positive", int64_t{0}}})[0], {5},
              {0, 0, 0, 1, 0});
  check_close(run_op(OpKind::IsInf, {x},
                     {{"detect_positive", int64_t{0}}, {"detect_negative", int64_t{0}}})[0],
              {5}, {0, 0, 0, 0, 0});
  check_close(run_op(OpKind::IsNaN, {Tensor::from<double>({2}, {kNaN, kInf})})[0], {2}, {1, 0});
}

TEST_CASE("Elu / Celu / Selu: defaults and attributes") {
  const Tensor x = f32({3}, {-1, 0, 2});
  // e^-1 - 1 = -0.6321205588
  check_close(run_op(OpKind::Elu, {x})[0], {3}, {-0.6321205588, 0, 2});
  check_close(run_op(OpKind::Elu, {x}, {{"alpha", 2.0}})[0], {3}, {-1.2642411177, 0, 2});
  check_close(run_op(OpKind::Celu, {x})[0], {3}, {-0.6321205588, 0, 2});
  // alpha 2: 2 * (e^-0.5 - 1)
  check_close(run_op(OpKind::Celu, {x}, {{"alpha", 2.0}})[0], {3}, {-0.7869386806, 0, 2});
  // gamma * alpha * (e^-1 - 1) and gamma * 2 with the spec's defaults
  check_close(run_op(OpKind::Selu, {x})[0], {3}, {-1.1113307413, 0, 2.1014020443});
  check_close(run_op(OpKind::Selu, {x}, {{"alpha", 2.0}, {"gamma", 3.0}})[0], {3},
              {-3.7927233530, 0, 6});
  const Tensor d = run_op(OpKind::Elu, {Tensor::from<double>({1}, {-1})})[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {1}, {-0.6321205588285577}, 1e-12);
}

TEST_CASE("Softplus / Softsign / Mish: values and no overflow for large inputs") {
  const Tensor x = f32({3}, {-1, 0, 1});
  check_close(run_op(OpKind::Softplus, {x})[0], {3}, {0.3132616875, 0.6931471806, 1.3132616875});
  check_close(run_op(OpKind::Softplus, {Tensor::from<double>({3}, {1000, -1000, -100})})[0], {3},
              {1000, 0, 3.720075976e-44});
  check_close(run_op(OpKind::Softsign, {f32({3}, {-3, 0, 1})})[0], {3}, {-0.75, 0, 0.5});
  check_close(run_op(OpKind::Softsign, {f32({1}, {kInfF})})[0], {1}, {kNaN});  // inf / inf
  // x * tanh(softplus(x))
  check_close(run_op(OpKind::Mish, {f32({4}, {-1, 0, 1, 2})})[0], {4},
              {-0.3034014614, 0, 0.8650983883, 1.9439589595});
  check_close(run_op(OpKind::Mish, {f32({2}, {1000, -1000})})[0], {2}, {1000, 0});
}

TEST_CASE("ThresholdedRelu / Shrink / HardSwish") {
  const Tensor x = f32({4}, {0.5f, 1, 1.5f, -2});
  check_close(run_op(OpKind::ThresholdedRelu, {x})[0], {4}, {0, 0, 1.5, 0});  // alpha 1, strict
  check_close(run_op(OpKind::ThresholdedRelu, {x}, {{"alpha", 0.2}})[0], {4}, {0.5, 1, 1.5, 0});
  // default lambd 0.5, bias 0: hard shrink; |x| == lambd gives 0
  check_close(run_op(OpKind::Shrink, {f32({5}, {-1, -0.5f, 0.2f, 0.5f, 2})})[0], {5},
              {-1, 0, 0, 0, 2});
  check_close(
      run_op(OpKind::Shrink, {f32({5}, {-2, -1, 0, 1, 2})}, {{"lambd", 1.5}, {"bias", 1.5}})[0],
      {5}, {-0.5, 0, 0, 0, 0.5});
  // x * clamp(x / 6 + 1/2, 0, 1)
  check_close(run_op(OpKind::HardSwish, {f32({7}, {-4, -3, -1, 0, 1, 3, 4})})[0], {7},
              {0, 0, -1.0 / 3, 0, 2.0 / 3, 3, 4});
}

TEST_CASE("Shrink on integers: results truncate and saturate") {
  const Tensor i = run_op(OpKind::Shrink, {Tensor::from<int32_t>({5}, {-5, -1, 0, 1, 5})},
                          {{"lambd", 1.5}, {"bias", 1.0}})[0];
  CHECK(i.dtype() == DType::i32);
  check_close(i, {5}, {-4, 0, 0, 0, 4});
  // -128 + (-1) and 127 - (-1) leave int8's range
  check_close(run_op(OpKind::Shrink, {Tensor::from<int8_t>({2}, {-128, 127})},
                     {{"lambd", 0.0}, {"bias", -1.0}})[0],
              {2}, {-128, 127});
  check_close(run_op(OpKind::Shrink, {Tensor::from<uint8_t>({2}, {3, 200})},
                     {{"lambd", 0.5}, {"bias", 5.0}})[0],
              {2}, {0, 195});
  check_close(run_op(OpKind::Shrink, {Tensor::from<int64_t>({2}, {-10, 10})}, {{"bias", 2.5}})[0],
              {2}, {-7, 7});  // -10 + 2.5 = -7.5 -> -7
}

TEST_CASE("Unary float ops on random inputs against xtensor, odd sizes and rank 0") {
  const Tensor x = random_f32({7, 1, 3}, 5);  // in [-1, 1]
  const auto a = to_xt<double>(x);
  const double rt = 1e-5, at = 1e-6;
  check_xt(run_op(OpKind::Sin, {x})[0], xt::sin(a), rt, at);
  check_xt(run_op(OpKind::Cos, {x})[0], xt::cos(a), rt, at);
  check_xt(run_op(OpKind::Tan, {x})[0], xt::tan(a), rt, at);
  check_xt(run_op(OpKind::Asin, {x})[0], xt::asin(a), rt, at);
  check_xt(run_op(OpKind::Acos, {x})[0], xt::acos(a), rt, at);
  check_xt(run_op(OpKind::Atan, {x})[0], xt::atan(a), rt, at);
  check_xt(run_op(OpKind::Sinh, {x})[0], xt::sinh(a), rt, at);
  check_xt(run_op(OpKind::Cosh, {x})[0], xt::cosh(a), rt, at);
  check_xt(run_op(OpKind::Asinh, {x})[0], xt::asinh(a), rt, at);
  check_xt(run_op(OpKind::Atanh, {x})[0], xt::atanh(a), rt, at);
  check_xt(run_op(OpKind::Ceil, {x})[0], xt::ceil(a), 0, 0);
  check_xt(run_op(OpKind::Floor, {x})[0], xt::floor(a), 0, 0);
  check_xt(run_op(OpKind::Softsign, {x})[0], a / (1.0 + xt::abs(a)), rt, at);
  check_xt(run_op(OpKind::Softplus, {x})[0], xt::log(1.0 + xt::exp(a)), rt, at);
  check_xt(run_op(OpKind::Elu, {x})[0], xt::where(a < 0, xt::exp(a) - 1.0, a), rt, at);
  const Tensor big = random_f32({1023}, 6, 1.0f, 10.0f);
  const auto b = to_xt<double>(big);
  check_xt(run_op(OpKind::Acosh, {big})[0], xt::acosh(b), rt, at);
  check_xt(run_op(OpKind::Reciprocal, {big})[0], 1.0 / b, rt, at);
  check_close(run_op(OpKind::Cos, {Tensor::scalar(0.0f)})[0], {}, {1});
  check_close(run_op(OpKind::Sign, {Tensor::scalar<int64_t>(-4)})[0], {}, {-1});
  check_close(run_op(OpKind::Floor, {Tensor(DType::f32, {0, 3})})[0], {0, 3}, {});
}

TEST_CASE("Unary op errors: dtypes and attributes") {
  const Tensor ints = Tensor::from<int32_t>({2}, {1, 2});
  const Tensor x = f32({2}, {1, -1});
  CHECK(contains(op_error(OpKind::Sin, {ints}), "must be a float tensor, got i32"));
  CHECK(contains(op_error(OpKind::Round, {ints}), "must be a float tensor, got i32"));
  CHECK(contains(op_error(OpKind::Reciprocal, {ints}), "must be a float tensor"));
  CHECK(contains(op_error(OpKind::IsNaN, {ints}), "must be a float tensor"));
  CHECK(contains(op_error(OpKind::IsInf, {Tensor::from<int64_t>({1}, {1})}), "float tensor"));
  CHECK(contains(op_error(OpKind::Elu, {ints}), "must be a float tensor"));
  CHECK(contains(op_error(OpKind::Sign, {Tensor::from<bool>({1}, {true})}), "must be numeric"));
  CHECK(contains(op_error(OpKind::Shrink, {Tensor::from<bool>({1}, {true})}), "must be numeric"));
  CHECK(contains(op_error(OpKind::Celu, {x}, {{"alpha", 0.0}}), "alpha must not be 0"));
  CHECK(contains(op_error(OpKind::Elu, {x}, {{"alpha", kNaN}}), "'alpha' must be finite"));
  CHECK(contains(op_error(OpKind::Shrink, {x}, {{"lambd", kInf}}), "'lambd' must be finite"));
  CHECK(contains(op_error(OpKind::Selu, {x}, {{"gamma", std::string("big")}}),
                 "attribute 'gamma' must be a float"));
  CHECK(contains(op_error(OpKind::Cos, {x, x}), "takes 1 inputs, got 2"));
}
