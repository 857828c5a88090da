// Tests for the view ops: Identity, Reshape, Flatten, Squeeze, Unsqueeze.
#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// Runs a view op with `x` as a graph input and checks the result is x's buffer with `shape`.
// `second` (shape or axes) is a graph constant unless `second_is_input`.
Tensor run_view(OpKind op, const Tensor& x, const Tensor& second, const Shape& shape,
                Attributes attrs = {}, bool second_is_input = false) {
  std::vector<Tensor> ins{x};
  if (second.defined()) ins.push_back(second);
  const std::vector<Tensor> out =
      test::run_op(op, ins, std::move(attrs), 1, {false, !second_is_input});
  REQUIRE(out.size() == 1);
  CHECK(out[0].shape() == shape);
  CHECK(out[0].dtype() == x.dtype());
  CHECK(out[0].shares_buffer_with(x));
  return out[0];
}

}  // namespace

TEST_CASE("Identity: returns the input as a view, any dtype and rank") {
  const Tensor x = iota<float>({2, 3}, 1);
  test::check_close(run_view(OpKind::Identity, x, {}, {2, 3}), {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor s = Tensor::scalar<int64_t>(-7);
  CHECK(run_view(OpKind::Identity, s, {}, {}).data<int64_t>()[0] == -7);
  Tensor b(DType::boolean, {3});
  b.data<bool>()[0] = true, b.data<bool>()[1] = false, b.data<bool>()[2] = true;
  test::check_close(run_view(OpKind::Identity, b, {}, {3}), {3}, {1, 0, 1});
}

TEST_CASE("Reshape: explicit, copied (0) and inferred (-1) dims") {
  const Tensor x = iota<float>({2, 3, 4}, 1);
  // Row-major order is unchanged by a reshape: element i is i + 1 whatever the shape.
  std::vector<double> want(24);
  for (int i = 0; i < 24; ++i) want[i] = i + 1;
  test::check_close(run_view(OpKind::Reshape, x, ints({4, 6}), {4, 6}), {4, 6}, want);
  run_view(OpKind::Reshape, x, ints({0, -1}), {2, 12});
  run_view(OpKind::Reshape, x, ints({-1, 0}), {8, 3});  // 0 copies input dim 1 (3)
  run_view(OpKind::Reshape, x, ints({0, 0, 4}), {2, 3, 4});
  run_view(OpKind::Reshape, x, ints({-1}), {24});
  run_view(OpKind::Reshape, x, ints({2, -1, 2, 3}), {2, 2, 2, 3});
  // The shape as a runtime input (not a constant) and as i32.
  run_view(OpKind::Reshape, x, ints({3, -1}), {3, 8}, {}, true);
  run_view(OpKind::Reshape, x, Tensor::from<int32_t>({2}, {6, 4}), {6, 4});
}

TEST_CASE("Reshape: scalars, size-1 dims, empty tensors and allowzero") {
  run_view(OpKind::Reshape, Tensor::scalar<double>(2.5), ints({1, 1, 1}), {1, 1, 1});
  run_view(OpKind::Reshape, Tensor::from<double>({1, 1}, {2.5}),
           Tensor::from<int64_t>({0}, std::vector<int64_t>{}), {});
  run_view(OpKind::Reshape, Tensor::from<int64_t>({7}, {1, 2, 3, 4, 5, 6, 7}), ints({7, 1, -1}),
           {7, 1, 1});
  const Tensor empty(DType::f32, {0, 3});
  // allowzero=0: the 0 copies input dim 0 (which is 0); allowzero=1: the 0 is a literal 0.
  run_view(OpKind::Reshape, empty, ints({0, 3}), {0, 3});
  run_view(OpKind::Reshape, empty, ints({3, 0}), {3, 0}, {{"allowzero", int64_t{1}}});
  run_view(OpKind::Reshape, iota<float>({2, 3}, 1), ints({0, 3}), {2, 3},
           {{"allowzero", int64_t{0}}});
}

TEST_CASE("Reshape: errors") {
  const Tensor x = iota<float>({2, 3}, 1);
  CHECK(contains(test::op_error(OpKind::Reshape, {x, ints({-1, -1})}), "more than one -1"));
  const std::string mismatch = test::op_error(OpKind::Reshape, {x, ints({4, 2})});
  CHECK(contains(mismatch, "[2,3] (6 elements)"));
  CHECK(contains(mismatch, "[4,2] (8 elements)"));
  CHECK(contains(test::op_error(OpKind::Reshape, {x, ints({4, -1})}), "not divisible by 4"));
  CHECK(contains(test::op_error(OpKind::Reshape, {Tensor(DType::f32, {0, 3}), ints({0, -1})},
                                {{"allowzero", int64_t{1}}}),
                 "allowzero=1 with both 0 and -1"));
  CHECK(contains(test::op_error(OpKind::Reshape, {x, Tensor::from<int64_t>({1, 2}, {3, 2})}),
                 "shape must be a 1-D tensor"));
  CHECK(contains(test::op_error(OpKind::Reshape, {x, ints({-2, -3})}), "invalid dimension -2"));
  CHECK(contains(test::op_error(OpKind::Reshape, {x, ints({3, 2, 0})}), "copies dimension 2"));
  CHECK(contains(test::op_error(OpKind::Reshape, {x, Tensor::from<float>({2}, {3, 2})}),
                 "expected one of"));
  // Also when the shape only arrives at run time.
  CHECK(contains(test::op_error(OpKind::Reshape, {x, ints({5})}, {}, 1, {false, false}),
                 "(5 elements)"));
  // A product that overflows int64 must not wrap to the input's element count.
  CHECK(contains(
      test::op_error(OpKind::Reshape, {Tensor(DType::f32, {0}), ints({1LL << 32, 1LL << 32, 0})},
                     {{"allowzero", int64_t{1}}}),
      "too many elements"));
}

TEST_CASE("Flatten: axis splits the dims into two products") {
  const Tensor x = iota<float>({2, 3, 4}, 1);
  run_view(OpKind::Flatten, x, {}, {2, 12});  // default axis 1
  run_view(OpKind::Flatten, x, {}, {1, 24}, {{"axis", int64_t{0}}});
  run_view(OpKind::Flatten, x, {}, {6, 4}, {{"axis", int64_t{2}}});
  run_view(OpKind::Flatten, x, {}, {24, 1}, {{"axis", int64_t{3}}});
  run_view(OpKind::Flatten, x, {}, {6, 4}, {{"axis", int64_t{-1}}});
  run_view(OpKind::Flatten, x, {}, {1, 24}, {{"axis", int64_t{-3}}});
  run_view(OpKind::Flatten, Tensor::scalar<int64_t>(4), {}, {1, 1}, {{"axis", int64_t{0}}});
  test::check_close(run_view(OpKind::Flatten, iota<float>({2, 1, 2}, 1), {}, {2, 2}), {2, 2},
                    {1, 2, 3, 4});
}

TEST_CASE("Flatten: errors") {
  const Tensor x = iota<float>({2, 3, 4}, 1);
  CHECK(contains(test::op_error(OpKind::Flatten, {x}, {{"axis", int64_t{4}}}),
                 "axis 4 is out of range"));
  CHECK(contains(test::op_error(OpKind::Flatten, {x}, {{"axis", int64_t{-4}}}),
                 "axis -4 is out of range"));
}

TEST_CASE("Squeeze: all size-1 dims, or the listed axes from the input or attribute") {
  const Tensor x = iota<float>({1, 3, 1, 2}, 1);
  test::check_close(run_view(OpKind::Squeeze, x, {}, {3, 2}), {3, 2}, {1, 2, 3, 4, 5, 6});
  run_view(OpKind::Squeeze, x, ints({0}), {3, 1, 2});
  run_view(OpKind::Squeeze, x, ints({2, 0}), {3, 2});
  run_view(OpKind::Squeeze, x, ints({-2}), {1, 3, 2});
  run_view(OpKind::Squeeze, x, ints({-4}), {3, 1, 2}, {}, true);  // axes known only at run time
  run_view(OpKind::Squeeze, x, Tensor::from<int64_t>({0}, std::vector<int64_t>{}), {3, 2});
  run_view(OpKind::Squeeze, x, {}, {1, 3, 2}, {{"axes", Ints{2}}});
  run_view(OpKind::Squeeze, x, {}, {3, 2}, {{"axes", Ints{0, -2}}});
  run_view(OpKind::Squeeze, iota<float>({1, 1}, 1), {}, {});
  run_view(OpKind::Squeeze, Tensor::scalar<int64_t>(3), {}, {});
  run_view(OpKind::Squeeze, iota<float>({7}, 1), {}, {7});
}

TEST_CASE("Squeeze: errors") {
  const Tensor x = iota<float>({1, 3, 1}, 1);
  CHECK(contains(test::op_error(OpKind::Squeeze, {x, ints({1})}), "its size is 3, not 1"));
  CHECK(contains(test::op_error(OpKind::Squeeze, {x}, {{"axes", Ints{1}}}), "not 1"));
  CHECK(contains(test::op_error(OpKind::Squeeze, {x, ints({3})}), "axis 3 is out of range"));
  CHECK(contains(test::op_error(OpKind::Squeeze, {x, ints({-4})}), "axis -4 is out of range"));
  CHECK(contains(test::op_error(OpKind::Squeeze, {Tensor::scalar<float>(1), ints({0})}),
                 "out of range"));
  CHECK(contains(test::op_error(OpKind::Squeeze, {x, Tensor::from<int64_t>({1, 1}, {0})}), "1-D"));
}

TEST_CASE("Unsqueeze: axes index the output, from the input or attribute") {
  const Tensor x = iota<float>({3, 2}, 1);
  test::check_close(run_view(OpKind::Unsqueeze, x, ints({0}), {1, 3, 2}), {1, 3, 2},
                    {1, 2, 3, 4, 5, 6});
  run_view(OpKind::Unsqueeze, x, ints({1}), {3, 1, 2});
  run_view(OpKind::Unsqueeze, x, ints({-1}), {3, 2, 1});
  run_view(OpKind::Unsqueeze, x, ints({3, 0}), {1, 3, 2, 1});
  run_view(OpKind::Unsqueeze, x, ints({1, 2}), {3, 1, 1, 2}, {}, true);
  run_view(OpKind::Unsqueeze, x, ints({-4, -1}), {1, 3, 2, 1});
  run_view(OpKind::Unsqueeze, x, {}, {3, 2, 1}, {{"axes", Ints{2}}});
  run_view(OpKind::Unsqueeze, Tensor::scalar<int64_t>(5), ints({0}), {1});
  run_view(OpKind::Unsqueeze, Tensor::scalar<int64_t>(5), ints({1, 0}), {1, 1});
}

TEST_CASE("Unsqueeze: errors") {
  const Tensor x = iota<float>({3, 2}, 1);
  CHECK(contains(test::op_error(OpKind::Unsqueeze, {x}), "needs axes"));
  CHECK(contains(test::op_error(OpKind::Unsqueeze, {x, ints({1, 1})}), "appears twice"));
  CHECK(contains(test::op_error(OpKind::Unsqueeze, {x, ints({1, -3})}), "appears twice"));
  CHECK(contains(test::op_error(OpKind::Unsqueeze, {x, ints({3})}),
                 "axis 3 is out of range for rank 3"));
  CHECK(contains(test::op_error(OpKind::Unsqueeze, {x}, {{"axes", Ints{-4}}}),
                 "axis -4 is out of range"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(Identity, plain) { s.output(s.b.identity(s.input(DType::f32, {n, 3}))); }

SG_LOWERING_SAMPLE(Reshape, inferred_dim) {
  s.output(s.b.reshape(s.input(DType::f32, {n, 6}), s.b.ints({2, -1})));
}

SG_LOWERING_SAMPLE(Reshape, i64) {
  s.output(s.b.reshape(s.input(DType::i64, {2, n, 3}, -100, 100), s.b.ints({-1, 2})));
}

SG_LOWERING_SAMPLE(Flatten, axis_2) {
  s.output(s.b.flatten(s.input(DType::f32, {n, 2, 3}), Attributes{{"axis", int64_t{2}}}));
}

SG_LOWERING_SAMPLE(Squeeze, axis_input) {
  s.output(s.b.squeeze(s.input(DType::f32, {n, 1, 3}), s.b.ints({1})));
}

SG_LOWERING_SAMPLE(Unsqueeze, two_axes) {
  s.output(s.b.unsqueeze(s.input(DType::f32, {n, 3}), s.b.ints({0, 2})));
}
