// Concat and Split: hand-computed values for every dtype family, zero-size parts, errors, and
// random comparisons against xt::concatenate and xt::view.
#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "jit/lowering_samples.h"
#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("Concat: axis 0, f32") {
  // [[1,2],[3,4]] ++ [[5,6]] -> [[1,2],[3,4],[5,6]]
  const Tensor a = Tensor::from<float>({2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::from<float>({1, 2}, {5, 6});
  check_close(run_op(OpKind::Concat, {a, b}, axis(0))[0], {3, 2}, {1, 2, 3, 4, 5, 6});
}

TEST_CASE("Concat: middle axis, i64") {
  // a[2,1,3] = 0..5, b[2,2,3] = 10..21: each outer row is a's 3 values then b's 6.
  const Tensor y =
      run_op(OpKind::Concat, {iota<int64_t>({2, 1, 3}), iota<int64_t>({2, 2, 3}, 10)}, axis(1))[0];
  CHECK(y.dtype() == DType::i64);
  check_close(y, {2, 3, 3}, {0, 1, 2, 10, 11, 12, 13, 14, 15, 3, 4, 5, 16, 17, 18, 19, 20, 21});
}

TEST_CASE("Concat: axis -1, bool and u8, with a zero-size input") {
  const Tensor a = Tensor::from<bool>({2, 1}, {true, false});
  const Tensor empty(DType::boolean, {2, 0});
  const Tensor c = Tensor::from<bool>({2, 2}, {false, true, true, false});
  check_close(run_op(OpKind::Concat, {a, empty, c}, axis(-1))[0], {2, 3}, {1, 0, 1, 0, 1, 0});
  const Tensor u =
      run_op(OpKind::Concat, {iota<uint8_t>({1, 2}, 250), iota<uint8_t>({1, 1}, 7)}, axis(-1))[0];
  CHECK(u.dtype() == DType::u8);
  check_close(u, {1, 3}, {250, 251, 7});
  // All inputs empty along the axis, and an empty outer dimension.
  check_close(
      run_op(OpKind::Concat, {Tensor(DType::f32, {3, 0}), Tensor(DType::f32, {3, 0})}, axis(1))[0],
      {3, 0}, {});
  check_close(run_op(OpKind::Concat, {Tensor(DType::f32, {0, 2}), iota<float>({0, 5})}, axis(1))[0],
              {0, 7}, {});
}

TEST_CASE("Concat: one input of odd size, f64, shapes inferred from constants") {
  const Tensor x = iota<double>({7}, -3);
  check_close(run_op(OpKind::Concat, {x}, axis(0))[0], x);
  GraphBuilder b;
  const ValueId v =
      b.concat(b.constant("a", iota<float>({1, 13})), b.input("x", DType::f32, {2, 13}), axis(0));
  const Graph g = b.build();
  CHECK(g.value(v).shape == DimList{3, 13});
}

TEST_CASE("Concat: random inputs match xt::concatenate") {
  for (int a = 0; a < 3; ++a) {
    Shape s0{3, 5, 7}, s1 = s0, s2 = s0;
    s1[a] = 2;
    s2[a] = 1;
    const Tensor x0 = test::random_f32(s0, 10 + a), x1 = test::random_f32(s1, 20 + a),
                 x2 = test::random_f32(s2, 30 + a);
    const auto want =
        xt::concatenate(xt::xtuple(to_xt<float>(x0), to_xt<float>(x1), to_xt<float>(x2)), a);
    check_xt(run_op(OpKind::Concat, {x0, x1, x2}, axis(a - 3 * (a == 2)))[0], want, 0, 0);
  }
}

TEST_CASE("Concat: errors") {
  const Tensor a = iota<float>({2, 3});
  CHECK(contains(op_error(OpKind::Concat, {a, iota<float>({3, 3})}, axis(1)),
                 "input 1 has shape [3,3], which cannot be concatenated with [2,3] along axis 1"));
  CHECK(contains(op_error(OpKind::Concat, {a, iota<float>({2, 3, 1})}, axis(0)),
                 "cannot be concatenated"));
  CHECK(contains(op_error(OpKind::Concat, {a, iota<double>({2, 3})}, axis(0)), "same dtype"));
  CHECK(contains(op_error(OpKind::Concat, {a, a}, axis(2)), "axis 2 is out of range for rank 2"));
  CHECK(contains(op_error(OpKind::Concat, {a, a}), "axis"));
  CHECK(contains(op_error(OpKind::Concat, {Tensor::scalar(1.0f)}, axis(0)), "rank >= 1"));
}

TEST_CASE("Split: equal parts (outputs count), f32") {
  const auto y = run_op(OpKind::Split, {iota<float>({6})}, {}, 3);
  REQUIRE(y.size() == 3);
  check_close(y[0], {2}, {0, 1});
  check_close(y[1], {2}, {2, 3});
  check_close(y[2], {2}, {4, 5});
}

TEST_CASE("Split: uneven num_outputs leaves a smaller last chunk (opset 18)") {
  // 7 into 3 -> chunks of ceil(7/3) = 3: [3, 3, 1]
  for (Attributes attrs : {Attributes{{"num_outputs", int64_t{3}}}, Attributes{}}) {
    const auto y = run_op(OpKind::Split, {iota<int64_t>({7})}, attrs, 3);
    check_close(y[0], {3}, {0, 1, 2});
    check_close(y[1], {3}, {3, 4, 5});
    check_close(y[2], {1}, {6});
  }
  // 6 into 4 -> [2, 2, 2, 0]
  const auto z = run_op(OpKind::Split, {iota<int64_t>({6})}, {{"num_outputs", int64_t{4}}}, 4);
  check_close(z[3], {0}, {});
}

TEST_CASE("Split: explicit sizes from input and attribute, negative axis, odd sizes") {
  // x[2,7] = 0..13 split along axis 1 into [3, 4].
  const Tensor x = iota<double>({2, 7});
  const Tensor sizes = Tensor::from<int64_t>({2}, {3, 4});
  for (bool constant : {false, true}) {
    const auto y = run_op(OpKind::Split, {x, sizes}, axis(-1), 2, {false, constant});
    CHECK(y[0].dtype() == DType::f64);
    check_close(y[0], {2, 3}, {0, 1, 2, 7, 8, 9});
    check_close(y[1], {2, 4}, {3, 4, 5, 6, 10, 11, 12, 13});
  }
  const auto z = run_op(OpKind::Split, {x}, {{"axis", int64_t{1}}, {"split", Ints{1, 0, 6}}}, 3);
  check_close(z[0], {2, 1}, {0, 7});
  check_close(z[1], {2, 0}, {});
  check_close(z[2], {2, 6}, {1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13});
}

TEST_CASE("Split: bool and u8, size-1 parts, zero-size input") {
  const auto y = run_op(OpKind::Split, {Tensor::from<bool>({3, 1}, {true, false, true})}, {}, 3);
  check_close(y[1], {1, 1}, {0});
  check_close(y[2], {1, 1}, {1});
  const auto u = run_op(OpKind::Split, {iota<uint8_t>({2, 2}, 200)}, axis(1), 2);
  check_close(u[0], {2, 1}, {200, 202});
  check_close(u[1], {2, 1}, {201, 203});
  const auto e = run_op(OpKind::Split, {Tensor(DType::f32, {0, 4})}, axis(1), 2);
  check_close(e[0], {0, 2}, {});
  check_close(e[1], {0, 2}, {});
}

TEST_CASE("Split: random input matches xt::view ranges") {
  const Tensor x = test::random_f32({5, 13, 3}, 7);
  const auto y = run_op(OpKind::Split, {x, Tensor::from<int64_t>({3}, {4, 1, 8})}, axis(1), 3);
  const auto xx = to_xt<float>(x);
  check_xt(y[0], xt::view(xx, xt::all(), xt::range(0, 4), xt::all()), 0, 0);
  check_xt(y[1], xt::view(xx, xt::all(), xt::range(4, 5), xt::all()), 0, 0);
  check_xt(y[2], xt::view(xx, xt::all(), xt::range(5, 13), xt::all()), 0, 0);
}

TEST_CASE("Split: errors") {
  const Tensor x = iota<float>({5});
  CHECK(contains(op_error(OpKind::Split, {x, ints({2, 2})}, {}, 2),
                 "split sizes sum to 4 but the dimension is 5"));
  CHECK(contains(op_error(OpKind::Split, {x, ints({2, 3})}, {}, 3),
                 "split has 2 sizes but the node has 3"));
  CHECK(contains(op_error(OpKind::Split, {x, ints({-1, 6})}, {}, 2), "split size -1 is negative"));
  CHECK(
      contains(op_error(OpKind::Split, {x}, {{"num_outputs", int64_t{2}}}, 3), "num_outputs is 2"));
  CHECK(contains(op_error(OpKind::Split, {x}, {}, 4), "cannot split a dimension of 5 into 4"));
  CHECK(contains(op_error(OpKind::Split, {x}, axis(1), 2), "out of range"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(Concat, last_axis) {
  const ValueId a = s.input(DType::f32, {n, 2}), c = s.input(DType::f32, {n, 3});
  s.output(s.b.concat(a, c, Attributes{{"axis", int64_t{-1}}}));
}

SG_LOWERING_SAMPLE(Concat, first_axis_i32) {
  const ValueId a = s.input(DType::i32, {n, 3}, -100, 100), c = s.input(DType::i32, {2, 3});
  s.output(s.b.concat(a, c, a, Attributes{{"axis", int64_t{0}}}));
}
