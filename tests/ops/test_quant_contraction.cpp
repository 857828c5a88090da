// MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv: hand-computed integer products (zero
// points per tensor, per row / column / output channel; batches; padding; bias; requantization
// with rounding half to even and saturation), and user errors.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

Tensor u8(Shape s, std::initializer_list<uint8_t> v) { return Tensor::from<uint8_t>(s, v); }
Tensor i8(Shape s, std::initializer_list<int8_t> v) { return Tensor::from<int8_t>(s, v); }
Tensor sc(float v) { return Tensor::scalar<float>(v); }

}  // namespace

TEST_CASE("MatMulInteger: zero points per tensor, per row and per column, batches") {
  // A - 12 = [[-1,-5,-9],[-2,-6,-10]] times B = [[1,4],[2,5],[3,6]].
  const Tensor y =
      run_op(OpKind::MatMulInteger, {u8({2, 3}, {11, 7, 3, 10, 6, 2}),
                                     u8({3, 2}, {1, 4, 2, 5, 3, 6}), u8({}, {12}), u8({}, {0})})[0];
  CHECK(y.dtype() == DType::i32);
  check_close(y, {2, 2}, {-38, -83, -44, -98});
  // i8 times u8, no zero points: -128 * 255 + 127 * 255.
  check_close(run_op(OpKind::MatMulInteger, {i8({1, 2}, {-128, 127}), u8({2, 1}, {255, 255})})[0],
              {1, 1}, {-255});
  // A's rows minus [1, 3] = [[0,1],[0,1]]; B's columns minus [1, 0] = [[0,0],[-1,1]].
  check_close(run_op(OpKind::MatMulInteger, {u8({2, 2}, {1, 2, 3, 4}), u8({2, 2}, {1, 0, 0, 1}),
                                             u8({2}, {1, 3}), u8({2}, {1, 0})})[0],
              {2, 2}, {-1, 1, -1, 1});
  // Batch [2] of [1, 2] matrices times one [2, 1]: [1+2], [3+4].
  check_close(run_op(OpKind::MatMulInteger, {u8({2, 1, 2}, {1, 2, 3, 4}), u8({2, 1}, {1, 1})})[0],
              {2, 1, 1}, {3, 7});
}

TEST_CASE("QLinearMatMul: requantized products, u8 and i8 outputs") {
  // a - 10 = [0, 10]; b - 2 = [[-2, 2], [0, 4]]; acc = [0, 40].
  const Tensor a = u8({1, 2}, {10, 20}), b = u8({2, 2}, {0, 4, 2, 6});
  auto qmm = [&](float y_scale, const Tensor& y_zero) {
    return run_op(OpKind::QLinearMatMul,
                  {a, sc(0.5f), u8({}, {10}), b, sc(0.25f), u8({}, {2}), sc(y_scale), y_zero})[0];
  };
  // 0.5 * 0.25 / 0.125 = 1: [0, 40] + 100.
  const Tensor y = qmm(0.125f, u8({}, {100}));
  CHECK(y.dtype() == DType::u8);
  check_close(y, {1, 2}, {100, 140});
  // Ratio 4: [0, 160] + 100, saturated to i8.
  const Tensor z = qmm(0.03125f, i8({}, {100}));
  CHECK(z.dtype() == DType::i8);
  check_close(z, {1, 2}, {100, 127});
  // Ratio 1/16: 40 / 16 = 2.5 rounds to 2.
  check_close(qmm(2.0f, u8({}, {0})), {1, 2}, {0, 2});
  // Per-column b scales [0.25, 0.75] and zero points [2, 4]: b - zero = [[-2, 0], [0, 2]],
  // acc = [0, 20]; ratios 1 and 3.
  check_close(run_op(OpKind::QLinearMatMul, {a, sc(0.5f), u8({}, {10}), b, f32({2}, {0.25f, 0.75f}),
                                             u8({2}, {2, 4}), sc(0.125f), u8({}, {0})})[0],
              {1, 2}, {0, 60});
}

TEST_CASE("ConvInteger: zero points, padding, per-channel weights") {
  // x - 1 = [[1,2,3],[4,5,6],[7,8,9]] with a 2x2 kernel of ones.
  const Tensor x = u8({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  const Tensor w = u8({1, 1, 2, 2}, {1, 1, 1, 1});
  const Tensor y = run_op(OpKind::ConvInteger, {x, w, u8({}, {1})})[0];
  CHECK(y.dtype() == DType::i32);
  check_close(y, {1, 1, 2, 2}, {12, 16, 24, 28});
  // Padded by 1: the padding reads the zero point, adding nothing.
  check_close(run_op(OpKind::ConvInteger, {x, w, u8({}, {1})}, {{"pads", Ints{1, 1, 1, 1}}})[0],
              {1, 1, 4, 4}, {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9});
  // Stride 2, no padding: one window.
  check_close(run_op(OpKind::ConvInteger, {x, w, u8({}, {1})}, {{"strides", Ints{2, 2}}})[0],
              {1, 1, 1, 1}, {12});
  // Two output channels, w - [1, -1] = [2, -1], over x = [5, 7].
  check_close(run_op(OpKind::ConvInteger, {u8({1, 1, 1, 2}, {5, 7}), i8({2, 1, 1, 1}, {3, -2}),
                                           Tensor(), i8({2}, {1, -1})})[0],
              {1, 2, 1, 2}, {10, 14, -5, -7});
  // group 2: each output channel sees its own input channel.
  check_close(run_op(OpKind::ConvInteger, {u8({1, 2, 1, 1}, {3, 4}), u8({2, 1, 1, 1}, {2, 5})},
                     {{"group", int64_t{2}}})[0],
              {1, 2, 1, 1}, {6, 20});
}

TEST_CASE("QLinearConv: bias, rounding, per-channel scales") {
  // x - 10 = [0, 10, 20, 30]; w - 2 = 2; acc = [0, 20, 40, 60] + bias 5.
  const Tensor x = u8({1, 1, 2, 2}, {10, 20, 30, 40});
  auto qconv = [&](float y_scale, const Tensor& y_zero) {
    return run_op(OpKind::QLinearConv,
                  {x, sc(0.5f), u8({}, {10}), u8({1, 1, 1, 1}, {4}), sc(0.25f), u8({}, {2}),
                   sc(y_scale), y_zero, Tensor::from<int32_t>({1}, {5})})[0];
  };
  // Ratio 1.
  check_close(qconv(0.125f, u8({}, {0})), {1, 1, 2, 2}, {5, 25, 45, 65});
  // Ratio 0.5: halves round to even.
  check_close(qconv(0.25f, u8({}, {0})), {1, 1, 2, 2}, {2, 12, 22, 32});
  // Two output channels with w scales [0.25, 0.5] (ratios 1 and 2), i8 output, zero point -10.
  const Tensor y = run_op(OpKind::QLinearConv,
                          {x, sc(0.5f), u8({}, {10}), u8({2, 1, 1, 1}, {4, 4}),
                           f32({2}, {0.25f, 0.5f}), u8({2}, {2, 2}), sc(0.125f), i8({}, {-10})})[0];
  CHECK(y.dtype() == DType::i8);
  check_close(y, {1, 2, 2, 2}, {-10, 10, 30, 50, -10, 30, 70, 110});
}

TEST_CASE("Quantized contractions: user errors") {
  const Tensor a = u8({2, 2}, {1, 2, 3, 4});
  CHECK(!op_error(OpKind::MatMulInteger, {f32({2, 2}, {1, 2, 3, 4}), a}).empty());
  CHECK(contains(op_error(OpKind::MatMulInteger, {a, a, u8({3}, {0, 0, 0})}),
                 "a_zero_point must be a scalar or have shape [2]"));
  CHECK(!op_error(OpKind::MatMulInteger, {a, a, i8({}, {0})}).empty());
  CHECK(contains(op_error(OpKind::MatMulInteger, {a, u8({3, 1}, {1, 2, 3})}), "inner dimensions"));
  auto qmm = [&](const Tensor& a_scale, const Tensor& y_scale) {
    return op_error(OpKind::QLinearMatMul,
                    {a, a_scale, u8({}, {0}), a, sc(1), u8({}, {0}), y_scale, u8({}, {0})});
  };
  CHECK(contains(qmm(sc(1), sc(0)), "y_scale must be positive"));
  CHECK(contains(qmm(f32({3}, {1, 1, 1}), sc(1)), "a_scale must be a scalar or have shape [2]"));
  CHECK(!qmm(Tensor::scalar<int32_t>(1), sc(1)).empty());
  const Tensor x = u8({1, 1, 2, 2}, {1, 2, 3, 4}), w = u8({1, 1, 1, 1}, {1});
  CHECK(!op_error(OpKind::ConvInteger, {f32({1, 1, 2, 2}, {1, 2, 3, 4}), w}).empty());
  CHECK(contains(op_error(OpKind::ConvInteger, {x, w, u8({2}, {0, 0})}),
                 "x_zero_point must be a scalar"));
  CHECK(contains(op_error(OpKind::ConvInteger, {x, w, Tensor(), u8({2}, {0, 0})}),
                 "w_zero_point must be a scalar or have shape [1]"));
  CHECK(contains(op_error(OpKind::ConvInteger, {x, u8({1, 2, 1, 1}, {1, 1})}), "input channels"));
  auto qconv = [&](const Tensor& y_scale, const Tensor& bias) {
    return op_error(OpKind::QLinearConv,
                    {x, sc(1), u8({}, {0}), w, sc(1), u8({}, {0}), y_scale, u8({}, {0}), bias});
  };
  CHECK(contains(qconv(sc(0), Tensor()), "y_scale must be positive"));
  CHECK(!qconv(sc(1), f32({1}, {0})).empty());
  CHECK(contains(qconv(sc(1), Tensor::from<int32_t>({2}, {0, 0})), "B must have shape [1]"));
}
