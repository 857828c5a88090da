// Elementwise unary ops against hand-computed values.
#include <limits>

#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("Unary float math: hand-computed values, f32 and f64") {
  const Tensor x = f32({5}, {0.0f, 1.0f, 0.5f, -2.0f, 4.0f});
  check_close(run_op(OpKind::Exp, {x})[0], {5},
              {1.0, 2.718281828, 1.648721271, 0.135335283, 54.59815003});
  check_close(run_op(OpKind::Tanh, {x})[0], {5},
              {0.0, 0.761594156, 0.462117157, -0.964027580, 0.999329300});
  check_close(run_op(OpKind::Erf, {x})[0], {5}, {0.0, 0.842700793, 0.520499878, -0.995322265, 1.0});
  check_close(run_op(OpKind::Sigmoid, {x})[0], {5},
              {0.5, 0.731058579, 0.622459331, 0.119202922, 0.982013790});
  const Tensor p = Tensor::from<double>({2, 2}, {1.0, 4.0, 2.25, 0.0});
  check_close(run_op(OpKind::Sqrt, {p})[0], {2, 2}, {1.0, 2.0, 1.5, 0.0});
  const Tensor lg = run_op(OpKind::Log, {p})[0];
  CHECK(lg.dtype() == DType::f64);
  check_close(lg, {2, 2},
              {0.0, 1.386294361, 0.810930216, -std::numeric_limits<double>::infinity()});
}

TEST_CASE("Sigmoid is stable for large magnitudes") {
  const Tensor y = run_op(OpKind::Sigmoid, {f32({2}, {-1000.0f, 1000.0f})})[0];
  check_close(y, {2}, {0.0, 1.0});
}

TEST_CASE("Neg, Abs, Relu: floats and integers") {
  const Tensor i = Tensor::from<int64_t>({4}, {-3, 0, 2, -7});
  check_close(run_op(OpKind::Neg, {i})[0], {4}, {3, 0, -2, 7});
  check_close(run_op(OpKind::Abs, {i})[0], {4}, {3, 0, 2, 7});
  check_close(run_op(OpKind::Relu, {i})[0], {4}, {0, 0, 2, 0});
  check_close(run_op(OpKind::Relu, {f32({3}, {-1.5f, 0.0f, 2.5f})})[0], {3}, {0.0, 0.0, 2.5});
  check_close(run_op(OpKind::Abs, {Tensor::from<uint8_t>({2}, {0, 200})})[0], {2}, {0, 200});
}

TEST_CASE("LeakyRelu and HardSigmoid: defaults and attributes") {
  const Tensor x = f32({3}, {-2.0f, 0.0f, 3.0f});
  check_close(run_op(OpKind::LeakyRelu, {x})[0], {3}, {-0.02, 0.0, 3.0});
  check_close(run_op(OpKind::LeakyRelu, {x}, {{"alpha", 0.5}})[0], {3}, {-1.0, 0.0, 3.0});
  // default alpha 0.2, beta 0.5: clamp(0.2x + 0.5, 0, 1)
  check_close(run_op(OpKind::HardSigmoid, {x})[0], {3}, {0.1, 0.5, 1.0});
  check_close(run_op(OpKind::HardSigmoid, {x}, {{"alpha", 0.25}, {"beta", 0.25}})[0], {3},
              {0.0, 0.25, 1.0});
}

TEST_CASE("Not on bool") {
  const Tensor y = run_op(OpKind::Not, {Tensor::from<bool>({3}, {true, false, true})})[0];
  CHECK(y.dtype() == DType::boolean);
  check_close(y, {3}, {0, 1, 0});
}

TEST_CASE("Clip: both bounds, one bound, none, integers") {
  const Tensor x = f32({5}, {-3.0f, -1.0f, 0.0f, 1.0f, 3.0f});
  check_close(run_op(OpKind::Clip, {x, Tensor::scalar(-1.5f), Tensor::scalar(2.0f)})[0], {5},
              {-1.5, -1.0, 0.0, 1.0, 2.0});
  check_close(run_op(OpKind::Clip, {x, Tensor(), Tensor::scalar(0.5f)})[0], {5},
              {-3.0, -1.0, 0.0, 0.5, 0.5});
  check_close(run_op(OpKind::Clip, {x})[0], {5}, {-3.0, -1.0, 0.0, 1.0, 3.0});
  const Tensor i = Tensor::from<int32_t>({3}, {-9, 4, 9});
  check_close(run_op(OpKind::Clip, {i, Tensor::scalar<int32_t>(0), Tensor::scalar<int32_t>(5)})[0],
              {3}, {0, 4, 5});
}

TEST_CASE("Cast between dtypes") {
  const Tensor x = f32({4}, {-2.7f, 0.0f, 1.9f, 3.0f});
  const Tensor i = run_op(OpKind::Cast, {x}, {{"to", onnx_dtype_code(DType::i32)}})[0];
  CHECK(i.dtype() == DType::i32);
  check_close(i, {4}, {-2, 0, 1, 3});  // truncation toward zero
  const Tensor b = run_op(OpKind::Cast, {x}, {{"to", onnx_dtype_code(DType::boolean)}})[0];
  CHECK(b.dtype() == DType::boolean);
  check_close(b, {4}, {1, 0, 1, 1});
  const Tensor d = run_op(OpKind::Cast, {Tensor::from<int64_t>({2}, {-5, 7})},
                          {{"to", onnx_dtype_code(DType::f64)}})[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {2}, {-5.0, 7.0});
}

TEST_CASE("CastLike takes the dtype of its second input, not its shape") {
  const Tensor x = f32({4}, {-2.7f, 0.0f, 1.9f, std::nanf("")});
  const Tensor i = run_op(OpKind::CastLike, {f32({3}, {-2.7f, 0.0f, 1.9f}), Tensor::scalar(7)})[0];
  CHECK(i.dtype() == DType::i32);
  check_close(i, {3}, {-2, 0, 1});
  const Tensor b = run_op(OpKind::CastLike, {x, Tensor(DType::boolean, {2, 5})})[0];
  CHECK(b.dtype() == DType::boolean);
  check_close(b, {4}, {1, 0, 1, 1});  // NaN != 0
  const Tensor d =
      run_op(OpKind::CastLike, {Tensor::from<uint8_t>({2, 1}, {200, 3}), Tensor::scalar(0.5)})[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {2, 1}, {200, 3});
  CHECK(contains(op_error(OpKind::CastLike, {x}), "CastLike"));
}

TEST_CASE("Unary ops on odd sizes and rank 0") {
  const Tensor x = test::random_f32({7, 1, 3}, 11);
  const Tensor y = run_op(OpKind::Neg, {x})[0];
  std::vector<double> want(x.numel());
  for (int64_t k = 0; k < x.numel(); ++k) want[k] = -x.at_double(k);
  check_close(y, {7, 1, 3}, want);
  check_close(run_op(OpKind::Exp, {Tensor::scalar(0.0f)})[0], {}, {1.0});
}

TEST_CASE("Unary op errors name node and op") {
  const Tensor ints = Tensor::from<int32_t>({2}, {1, 2});
  std::string e = op_error(OpKind::Exp, {ints});
  CHECK(contains(e, "node 'exp_0' (Exp)"));
  CHECK(contains(e, "must be a float tensor, got i32"));
  CHECK(contains(op_error(OpKind::Not, {f32({1}, {1.0f})}), "expected one of bool"));
  CHECK(contains(op_error(OpKind::Clip, {f32({2}, {1, 2}), f32({2}, {0, 0})}), "must be a scalar"));
  CHECK(contains(op_error(OpKind::Clip, {f32({2}, {1, 2}), Tensor::scalar<double>(0)}),
                 "same dtype"));
  CHECK(contains(op_error(OpKind::Cast, {ints}, {{"to", int64_t{5}}}), "unsupported element type"));
  CHECK(contains(op_error(OpKind::Cast, {ints}), "missing required attribute 'to'"));
  CHECK(contains(op_error(OpKind::LeakyRelu, {f32({1}, {1})}, {{"alpha", std::string("x")}}),
                 "attribute 'alpha' must be a float"));
  CHECK(contains(op_error(OpKind::Relu, {f32({1}, {1}), f32({1}, {1})}), "takes 1 inputs, got 2"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(Cast, f32_to_i32) {
  s.output(s.b.cast(s.input(DType::f32, {n, 3}, -100, 100),
                    Attributes{{"to", onnx_dtype_code(DType::i32)}}));
}

SG_LOWERING_SAMPLE(Cast, i64_to_f32) {
  s.output(s.b.cast(s.input(DType::i64, {n}, -1000, 1000),
                    Attributes{{"to", onnx_dtype_code(DType::f32)}}));
}

SG_LOWERING_SAMPLE(Cast, f64_to_bool) {
  s.output(
      s.b.cast(s.input(DType::f64, {n, 2}), Attributes{{"to", onnx_dtype_code(DType::boolean)}}));
}

SG_LOWERING_SAMPLE(Cast, bool_to_f32) {
  s.output(s.b.cast(s.input(DType::boolean, {n}, 0, 1),
                    Attributes{{"to", onnx_dtype_code(DType::f32)}}));
}

SG_LOWERING_SAMPLE(LeakyRelu, alpha) {
  s.output(s.b.leaky_relu(s.input(DType::f32, {n, 3}, -3, 3), Attributes{{"alpha", 0.2}}));
}

SG_LOWERING_SAMPLE(HardSigmoid, alpha_beta) {
  s.output(s.b.hard_sigmoid(s.input(DType::f32, {n, 3}, -5, 5),
                            Attributes{{"alpha", 0.3}, {"beta", 0.4}}));
}
