// Tests for Shape, Range and ConstantOfShape.
#include <limits>

#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

Tensor shape_of(const Tensor& x, Attributes attrs = {}) {
  const Tensor y = test::run_op(OpKind::Shape, {x}, std::move(attrs))[0];
  CHECK(y.dtype() == DType::i64);
  return y;
}

template <class T>
Tensor range(T start, T limit, T delta, bool constant = true) {
  return test::run_op(
      OpKind::Range, {Tensor::scalar<T>(start), Tensor::scalar<T>(limit), Tensor::scalar<T>(delta)},
      {}, 1, {constant, constant, constant})[0];
}

Tensor constant_of_shape(const Tensor& shape, Attributes attrs = {}, bool constant = true) {
  return test::run_op(OpKind::ConstantOfShape, {shape}, std::move(attrs), 1, {constant})[0];
}

}  // namespace

TEST_CASE("Shape: dims as i64, with start/end slicing") {
  const Tensor x(DType::f32, {2, 3, 4});
  test::check_close(shape_of(x), {3}, {2, 3, 4});
  test::check_close(shape_of(x, {{"start", int64_t{1}}}), {2}, {3, 4});
  test::check_close(shape_of(x, {{"end", int64_t{-1}}}), {2}, {2, 3});
  test::check_close(shape_of(x, {{"start", int64_t{-2}}, {"end", int64_t{10}}}), {2}, {3, 4});
  test::check_close(shape_of(x, {{"start", int64_t{-10}}, {"end", int64_t{1}}}), {1}, {2});
  test::check_close(shape_of(x, {{"start", int64_t{5}}}), {0}, {});
  test::check_close(shape_of(x, {{"start", int64_t{2}}, {"end", int64_t{1}}}), {0}, {});
  test::check_close(shape_of(Tensor::scalar<bool>(true)), {0}, {});
  test::check_close(shape_of(Tensor(DType::u8, {0, 7, 1})), {3}, {0, 7, 1});
}

TEST_CASE("Range: integer and float sequences") {
  test::check_close(range<int64_t>(0, 10, 3), {4}, {0, 3, 6, 9});
  test::check_close(range<int64_t>(10, 0, -3), {4}, {10, 7, 4, 1});
  test::check_close(range<int32_t>(-2, 3, 1, false), {5}, {-2, -1, 0, 1, 2});
  test::check_close(range<int32_t>(5, 5, 1), {0}, {});
  test::check_close(range<int64_t>(5, 0, 1), {0}, {});
  // ceil((2 - 1) / 0.3) = ceil(3.33) = 4 elements.
  test::check_close(range<float>(1.0f, 2.0f, 0.3f), {4}, {1.0, 1.3, 1.6, 1.9});
  test::check_close(range<double>(0, 1, 0.25, false), {4}, {0, 0.25, 0.5, 0.75});
  test::check_close(range<double>(1, -1, -0.5), {4}, {1, 0.5, 0, -0.5});
  test::check_close(range<float>(0, -1, 1), {0}, {});
  // The full int64 span: ceil((2^64 - 1) / (2^63 - 1)) = 3 elements, computed without overflow.
  constexpr int64_t lo = std::numeric_limits<int64_t>::min(),
                    hi = std::numeric_limits<int64_t>::max();
  const Tensor big = range<int64_t>(lo, hi, hi);
  CHECK(big.to_vector<int64_t>() == std::vector<int64_t>{lo, -1, hi - 1});
}

TEST_CASE("Range: errors") {
  CHECK(contains(
      test::op_error(OpKind::Range, {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(4),
                                     Tensor::scalar<int64_t>(0)}),
      "delta must not be 0"));
  CHECK(contains(
      test::op_error(OpKind::Range,
                     {Tensor::scalar<float>(0), Tensor::scalar<float>(4), Tensor::scalar<float>(0)},
                     {}, 1, {true, true, true}),
      "delta must not be 0"));
  CHECK(contains(
      test::op_error(OpKind::Range,
                     {ints({0, 1}), Tensor::scalar<int64_t>(4), Tensor::scalar<int64_t>(1)}, {}, 1,
                     {true, true, true}),
      "must be a scalar"));
  CHECK(contains(
      test::op_error(OpKind::Range, {Tensor::scalar<int64_t>(0), Tensor::scalar<int32_t>(4),
                                     Tensor::scalar<int64_t>(1)}),
      "same dtype"));
  CHECK(contains(
      test::op_error(OpKind::Range, {Tensor::scalar<uint8_t>(0), Tensor::scalar<uint8_t>(4),
                                     Tensor::scalar<uint8_t>(1)}),
      "expected one of"));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(contains(
      test::op_error(OpKind::Range, {Tensor::scalar<double>(0), Tensor::scalar<double>(nan),
                                     Tensor::scalar<double>(1)}),
      "no finite element count"));
  CHECK(contains(
      test::op_error(OpKind::Range, {Tensor::scalar<double>(0), Tensor::scalar<double>(1e30),
                                     Tensor::scalar<double>(1)}),
      "Range would produce"));
}

TEST_CASE("ConstantOfShape: dtype and fill from the value attribute") {
  const Tensor z = constant_of_shape(ints({2, 3}));
  CHECK(z.dtype() == DType::f32);
  test::check_close(z, {2, 3}, {0, 0, 0, 0, 0, 0});
  const Tensor sevens =
      constant_of_shape(ints({2, 2}), {{"value", Tensor::from<int64_t>({1}, {7})}});
  CHECK(sevens.dtype() == DType::i64);
  test::check_close(sevens, {2, 2}, {7, 7, 7, 7});
  const Tensor halves =
      constant_of_shape(ints({3}), {{"value", Tensor::scalar<double>(2.5)}}, false);
  CHECK(halves.dtype() == DType::f64);
  test::check_close(halves, {3}, {2.5, 2.5, 2.5});
  const Tensor trues = constant_of_shape(ints({1, 2}), {{"value", Tensor::scalar<bool>(true)}});
  CHECK(trues.dtype() == DType::boolean);
  test::check_close(trues, {1, 2}, {1, 1});
  // An empty shape tensor makes a scalar; a 0 dim an empty tensor.
  test::check_close(constant_of_shape(Tensor::from<int64_t>({0}, std::vector<int64_t>{}),
                                      {{"value", Tensor::scalar<uint8_t>(9)}}),
                    {}, {9});
  test::check_close(constant_of_shape(ints({7, 0})), {7, 0}, {});
}

TEST_CASE("ConstantOfShape: errors") {
  CHECK(contains(test::op_error(OpKind::ConstantOfShape, {ints({2, -1})}, {}, 1, {true}),
                 "negative dimension"));
  CHECK(contains(test::op_error(OpKind::ConstantOfShape, {ints({2, -1})}), "negative dimension"));
  CHECK(contains(test::op_error(OpKind::ConstantOfShape, {ints({2})},
                                {{"value", Tensor::from<float>({2}, {1, 2})}}),
                 "exactly one element"));
  CHECK(contains(test::op_error(OpKind::ConstantOfShape, {Tensor::from<int64_t>({1, 2}, {2, 2})}),
                 "1-D"));
  CHECK(contains(test::op_error(OpKind::ConstantOfShape, {Tensor::from<float>({1}, {2})}),
                 "expected one of"));
  CHECK(contains(
      test::op_error(OpKind::ConstantOfShape, {ints({1LL << 32, 1LL << 32})}, {}, 1, {true}),
      "too large"));
}

TEST_CASE("Size: element count as an i64 scalar, any dtype") {
  const Tensor n = run_op(OpKind::Size, {iota<uint8_t>({2, 7, 3})})[0];
  CHECK(n.dtype() == DType::i64);
  check_close(n, {}, {42});
  check_close(run_op(OpKind::Size, {Tensor::zeros(DType::f32, {4, 0})})[0], {}, {0});
  check_close(run_op(OpKind::Size, {Tensor::scalar(true)})[0], {}, {1});
}

// A shape's dims made in a kernel: the whole shape, its tail, and a window clipped by `end`.
SG_LOWERING_SAMPLE(Shape, dims) {
  const ValueId x = s.input(DType::f32, {n, 3, 5});
  s.output(s.b.shape(x));
  s.output(s.b.shape(x, Attributes{{"start", int64_t{-2}}}));
  s.output(s.b.shape(x, Attributes{{"start", int64_t{1}}, {"end", int64_t{2}}}));
  s.output(s.b.shape(x, Attributes{{"start", int64_t{2}}, {"end", int64_t{1}}}));  // (empty)
}

// x.view(x.size(0), -1) as exporters write it, compiled whole: Shape -> Slice -> Concat ->
// Reshape, and a Size beside it.
SG_LOWERING_SAMPLE(Shape, reshape_to_it) {
  const ValueId x = s.input(DType::f32, {n, 2, 3});
  const ValueId lead = s.b.slice(s.b.shape(x), s.b.ints({0}), s.b.ints({1}));
  const ValueId spec = s.b.concat(lead, s.b.ints({-1}), Attributes{{"axis", int64_t{0}}});
  s.output(s.b.reshape(s.b.relu(x), spec));
}

SG_LOWERING_SAMPLE(Size, count) {
  const ValueId x = s.input(DType::f32, {n, 3});
  s.output(s.b.size(x));
  s.output(s.b.size(s.b.transpose(x)));
}

// Positions as exporters write them, arange(x.size(0)), and ranges to a computed limit (n + 3)
// and from a negative start, in i64 and i32; the dynamic tier checks each count against its
// limit's form. (A strided range's count, (n + 3) / 2 here, is a form no warm-up fits yet.)
SG_LOWERING_SAMPLE(Range, to_a_dim) {
  const ValueId x = s.input(DType::f32, {n, 3});
  const ValueId len = s.b.gather(s.b.shape(x), s.b.scalar<int64_t>(0));
  s.output(s.b.range(s.b.scalar<int64_t>(0), len, s.b.scalar<int64_t>(1)));
  s.output(s.b.range(s.b.scalar<int64_t>(1), s.b.add(len, s.b.scalar<int64_t>(3)),
                     s.b.scalar<int64_t>(1)));
  const ValueId len32 = s.b.cast(len, Attributes{{"to", int64_t{6}}});  // (INT32)
  s.output(s.b.range(s.b.scalar<int32_t>(-2), len32, s.b.scalar<int32_t>(1)));
}

// A strided range, compiled for one n.
SG_LOWERING_SAMPLE(Range, strided) {
  const ValueId x = s.input(DType::f32, {n, 3});
  const ValueId len = s.b.gather(s.b.shape(x), s.b.scalar<int64_t>(0));
  s.output(s.b.range(s.b.scalar<int64_t>(1), s.b.add(len, s.b.scalar<int64_t>(3)),
                     s.b.scalar<int64_t>(2)));
}

// A filled tensor of x's shape (its dims made in the kernel from Shape(x)), of a constant shape,
// and the default fill (f32 zeros).
SG_LOWERING_SAMPLE(ConstantOfShape, of_a_shape) {
  const ValueId x = s.input(DType::f32, {n, 3});
  const ValueId half =
      s.b.constant_of_shape(s.b.shape(x), Attributes{{"value", Tensor::from<float>({1}, {0.5f})}});
  s.output(s.b.add(half, x));
  s.output(s.b.constant_of_shape(s.b.ints({2, 3}),
                                 Attributes{{"value", Tensor::from<int64_t>({1}, {7})}}));
  s.output(s.b.add(s.b.constant_of_shape(s.b.shape(x)), x));
}
