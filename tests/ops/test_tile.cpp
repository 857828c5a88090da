// Tile: hand-computed tilings (2-D, one dim repeated, zero repeats, a scalar), the shape known
// from constant repeats, and user errors.
#include <limits>

#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("Tile: repeats along each dim, zero repeats, a scalar") {
  // [[1,2],[3,4]] tiled 2x2.
  const Tensor x = Tensor::from<float>({2, 2}, {1, 2, 3, 4});
  check_close(run_op(OpKind::Tile, {x, ints({2, 2})})[0], {4, 4},
              {1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4});
  check_close(run_op(OpKind::Tile, {x, ints({1, 3})})[0], {2, 6},
              {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  check_close(run_op(OpKind::Tile, {x, ints({2, 1})})[0], {4, 2}, {1, 2, 3, 4, 1, 2, 3, 4});
  check_close(run_op(OpKind::Tile, {iota<int32_t>({2, 1, 2}), ints({1, 2, 1})})[0], {2, 2, 2},
              {0, 1, 0, 1, 2, 3, 2, 3});
  check_close(run_op(OpKind::Tile, {x, ints({0, 2})})[0], {0, 4}, {});
  check_close(run_op(OpKind::Tile, {Tensor::scalar<int64_t>(7), Tensor(DType::i64, {0})})[0], {},
              {7});
}

TEST_CASE("Tile: constant repeats give a static shape") {
  GraphBuilder b;
  const ValueId y =
      b.tile(b.input("x", DType::f32, {3, 5}), b.constant("r", Tensor::from<int64_t>({2}, {2, 3})));
  CHECK(b.build().value(y).shape == DimList{6, 15});
}

TEST_CASE("Tile: user errors") {
  const Tensor x = iota<float>({2, 2});
  CHECK(
      contains(op_error(OpKind::Tile, {x, ints({2})}),
               "repeats must be a 1-D tensor of 2 counts (the rank of the input), got shape [1]"));
  CHECK(
      contains(op_error(OpKind::Tile, {x, ints({1, -1})}), "repeats [1,-1] has a negative count"));
  const int64_t big = std::numeric_limits<int64_t>::max();
  CHECK(contains(op_error(OpKind::Tile, {x, ints({1, big})}), "is too large"));
  CHECK(contains(op_error(OpKind::Tile, {x, Tensor::from<int32_t>({2}, {1, 1})}),
                 "(Tile): input 1 has dtype i32"));
}

// Rows and columns repeated (2n x 9 from n x 3), and a row of static 1 repeated.
SG_LOWERING_SAMPLE(Tile, rows_and_columns) {
  s.output(s.b.tile(s.input(DType::f32, {n, 3}), s.b.ints({2, 3})));
  s.output(s.b.tile(s.input(DType::i64, {1, n}, -5, 5), s.b.ints({4, 1})));
}
