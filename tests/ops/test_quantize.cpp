// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: hand-computed values (per tensor,
// per axis, blocked; rounding half to even; saturation), and user errors.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace test_quantize {  // this file's own names (the tests build as unity sources)

namespace {

Tensor u8(Shape s, std::initializer_list<uint8_t> v) { return Tensor::from<uint8_t>(s, v); }
Tensor i8(Shape s, std::initializer_list<int8_t> v) { return Tensor::from<int8_t>(s, v); }

}  // namespace

TEST_CASE("QuantizeLinear: per tensor, u8 and i8, rounding half to even, saturation") {
  // x / 2 = [0, 1, 1.5, 500, -127, -500] rounds to [0, 1, 2, 500, -127, -500]; + 128, clamped.
  const Tensor y = run_op(OpKind::QuantizeLinear, {f32({6}, {0, 2, 3, 1000, -254, -1000}),
                                                   Tensor::scalar<float>(2), u8({}, {128})})[0];
  CHECK(y.dtype() == DType::u8);
  check_close(y, {6}, {128, 129, 130, 255, 1, 0});
  // Halves go to the even neighbour; i8 saturates at -128 and 127.
  const Tensor z =
      run_op(OpKind::QuantizeLinear, {f32({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 200, -200}),
                                      Tensor::scalar<float>(1), i8({}, {0})})[0];
  CHECK(z.dtype() == DType::i8);
  check_close(z, {7}, {0, 2, 2, 0, -2, 127, -128});
  // No zero point: u8, zero point 0.
  check_close(run_op(OpKind::QuantizeLinear, {f32({3}, {-1, 3.2f, 3.7f}), f32({1}, {1})})[0], {3},
              {0, 3, 4});
  // f64 input and scale.
  check_close(run_op(OpKind::QuantizeLinear,
                     {Tensor::from<double>({2}, {2.5, 7.5}), Tensor::scalar<double>(1.0)})[0],
              {2}, {2, 8});
  // i32 input: 7 / 2 = 3.5 rounds to 4, + 1.
  check_close(run_op(OpKind::QuantizeLinear, {Tensor::from<int32_t>({2}, {7, -4}),
                                              Tensor::scalar<float>(2), u8({}, {1})})[0],
              {2}, {5, 0});
}

TEST_CASE("QuantizeLinear: per axis and blocked") {
  // axis 1 of [2, 3]: scales [1, 2, 4], zero points [0, 10, 20].
  const Tensor x = f32({2, 3}, {4, 4, 4, 8, -8, 10});
  check_close(run_op(OpKind::QuantizeLinear, {x, f32({3}, {1, 2, 4}), u8({3}, {0, 10, 20})})[0],
              {2, 3}, {4, 12, 21, 8, 6, 22});
  // axis 0: rows scaled by 1 and 10; 25 / 10 = 2.5 -> 2, 35 / 10 = 3.5 -> 4.
  check_close(run_op(OpKind::QuantizeLinear,
                     {f32({2, 2}, {3, 5, 25, 35}), f32({2}, {1, 10}), u8({2}, {0, 0})}, axis(0))[0],
              {2, 2}, {3, 5, 2, 4});
  // Blocks of 2 along axis 1: scale 1 for x[0..1], 2 for x[2..3], 4 for the short last block.
  check_close(run_op(OpKind::QuantizeLinear, {f32({1, 5}, {1, 2, 3, 4, 8}), f32({1, 3}, {1, 2, 4})},
                     {{"axis", int64_t{1}}, {"block_size", int64_t{2}}})[0],
              {1, 5}, {1, 2, 2, 2, 2});
}

TEST_CASE("DequantizeLinear: per tensor, per axis, i32") {
  const Tensor y = run_op(OpKind::DequantizeLinear,
                          {u8({4}, {0, 3, 128, 255}), Tensor::scalar<float>(2), u8({}, {128})})[0];
  CHECK(y.dtype() == DType::f32);
  check_close(y, {4}, {-256, -250, 0, 254});
  // axis 1: scales [0.5, 2], zero points [0, -1].
  check_close(run_op(OpKind::DequantizeLinear,
                     {i8({2, 2}, {-128, 127, 0, 1}), f32({2}, {0.5f, 2}), i8({2}, {0, -1})})[0],
              {2, 2}, {-64, 256, 0, 4});
  check_close(run_op(OpKind::DequantizeLinear,
                     {Tensor::from<int32_t>({2}, {100000, -7}), Tensor::scalar<float>(0.5f)})[0],
              {2}, {50000, -3.5});
  // An f64 scale gives f64; blocked along axis 0 in blocks of 2 (scales 1 and 3).
  const Tensor d = run_op(OpKind::DequantizeLinear,
                          {u8({3, 1}, {1, 2, 3}), Tensor::from<double>({2, 1}, {1, 3})},
                          {{"axis", int64_t{0}}, {"block_size", int64_t{2}}})[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {3, 1}, {1, 2, 9});
}

TEST_CASE("DynamicQuantizeLinear: scale and zero point from the range, which includes 0") {
  auto dq = [](const Tensor& x) { return run_op(OpKind::DynamicQuantizeLinear, {x}, {}, 3); };
  // Range [-51, 204]: scale 1, zero point 51; 10.5 and 11.5 round to 10 and 12.
  std::vector<Tensor> r = dq(f32({4}, {-51, 204, 10.5f, 11.5f}));
  CHECK(r[0].dtype() == DType::u8);
  check_close(r[0], {4}, {0, 255, 61, 63});
  check_close(r[1], {}, {1});
  check_close(r[2], {}, {51});
  // All positive: the range starts at 0; scale 2, 7 / 2 = 3.5 -> 4.
  r = dq(f32({3}, {0.5f, 510, 7}));
  check_close(r[0], {3}, {0, 255, 4});
  check_close(r[1], {}, {2});
  check_close(r[2], {}, {0});
  // All negative: the range ends at 0; scale 2, zero point 255.
  r = dq(f32({2}, {-510, -2}));
  check_close(r[0], {2}, {0, 254});
  check_close(r[2], {}, {255});
  // No range: scale 0, zero point 0, y 0.
  r = dq(f32({2}, {0, 0}));
  check_close(r[0], {2}, {0, 0});
  check_close(r[1], {}, {0});
  check_close(r[2], {}, {0});
}

TEST_CASE("Quantization ops: user errors") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(contains(op_error(OpKind::QuantizeLinear, {x, f32({2}, {1, 1})}),
                 "per-axis scale must have shape [3]"));
  CHECK(contains(op_error(OpKind::QuantizeLinear, {x, f32({3}, {1, 1, 1}), u8({2}, {0, 0})}),
                 "zero point's shape [2] differs from the scale's [3]"));
  CHECK(contains(op_error(OpKind::QuantizeLinear, {x, f32({}, {0})}), "positive"));
  CHECK(contains(op_error(OpKind::QuantizeLinear, {x, f32({}, {-1})}), "positive"));
  CHECK(contains(op_error(OpKind::QuantizeLinear, {x, f32({3}, {1, 1, 1})}, axis(2)), "axis"));
  CHECK(!op_error(OpKind::QuantizeLinear, {x, f32({}, {1}), f32({}, {0})}).empty());
  CHECK(!op_error(OpKind::QuantizeLinear, {u8({1}, {1}), f32({}, {1})}).empty());
  CHECK(contains(op_error(OpKind::QuantizeLinear, {x, f32({2, 3}, {1, 1, 1, 1, 1, 1})},
                          {{"axis", int64_t{1}}, {"block_size", int64_t{2}}}),
                 "must have shape [2,2]"));
  CHECK(contains(op_error(OpKind::QuantizeLinear, {x, f32({}, {1})}, {{"block_size", int64_t{-1}}}),
                 "block_size"));
  CHECK(
      contains(op_error(OpKind::QuantizeLinear, {x, f32({}, {1})}, {{"output_dtype", int64_t{1}}}),
               "output_dtype"));
  CHECK(!op_error(OpKind::DequantizeLinear, {x, f32({}, {1})}).empty());
  CHECK(!op_error(OpKind::DequantizeLinear, {u8({1}, {1}), f32({}, {1}), i8({}, {0})}).empty());
  CHECK(!op_error(OpKind::DequantizeLinear, {u8({1}, {1}), u8({}, {1})}).empty());
  CHECK(
      !op_error(OpKind::DynamicQuantizeLinear, {Tensor::from<double>({1}, {1.0})}, {}, 3).empty());
}

}  // namespace test_quantize
