// GatherElements, ScatterElements, GatherND, ScatterND: hand-computed values (the ONNX spec's
// examples among them), negative indices, every reduction, integer wrapping, and user errors.
#include <limits>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

Tensor i64(Shape shape, std::initializer_list<int64_t> v) {
  return Tensor::from<int64_t>(std::move(shape), v);
}

Attributes reduce(const char* r, int64_t axis = 0) {
  return {{"reduction", std::string(r)}, {"axis", axis}};
}

}  // namespace

TEST_CASE("GatherElements: axis 0 and 1, negative indices, indices smaller than data") {
  // data [[1,2,3],[4,5,6],[7,8,9]]: out[i][j] = data[idx[i][j]][j].
  const Tensor data = Tensor::from<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  check_close(run_op(OpKind::GatherElements, {data, i64({2, 3}, {1, 2, 0, 2, 0, 0})})[0], {2, 3},
              {4, 8, 3, 7, 2, 3});
  check_close(run_op(OpKind::GatherElements, {data, i64({2, 3}, {-1, -2, 0, -2, 0, 0})})[0], {2, 3},
              {7, 5, 3, 4, 2, 3});
  // axis 1 with i32 indices: out[i][j] = data[i][idx[i][j]].
  const Tensor two = Tensor::from<int32_t>({2, 2}, {0, 0, 1, 0});
  check_close(run_op(OpKind::GatherElements, {Tensor::from<int64_t>({2, 2}, {1, 2, 3, 4}), two},
                     axis(1))[0],
              {2, 2}, {1, 1, 4, 3});
  // Indices [2, 1] read a [2, 3] data's rows 0 and 1 only; along axis 1 they may be longer.
  const Tensor d23 = iota<int64_t>({2, 3});
  check_close(run_op(OpKind::GatherElements, {d23, i64({2, 1}, {2, 0})}, axis(-1))[0], {2, 1},
              {2, 3});
  check_close(run_op(OpKind::GatherElements, {d23, i64({1, 4}, {2, 2, 0, 1})}, axis(1))[0], {1, 4},
              {2, 2, 0, 1});
  check_close(run_op(OpKind::GatherElements, {d23, Tensor(DType::i64, {0, 3})})[0], {0, 3}, {});
}

TEST_CASE("GatherElements: user errors") {
  const Tensor d23 = iota<float>({2, 3});
  CHECK(contains(op_error(OpKind::GatherElements, {d23, i64({1, 2}, {0, 3})}, axis(1)),
                 "index 3 at position 1 is out of range for axis 1 of size 3"));
  CHECK(contains(op_error(OpKind::GatherElements, {d23, i64({1, 1}, {-3})}),
                 "index -3 at position 0 is out of range for axis 0 of size 2"));
  CHECK(contains(op_error(OpKind::GatherElements, {d23, i64({2}, {0, 1})}),
                 "indices of shape [2] must have the rank of data [2,3]"));
  CHECK(contains(op_error(OpKind::GatherElements, {d23, i64({1, 4}, {0, 0, 0, 0})}),
                 "indices of shape [1,4] exceed data of shape [2,3] along dim 1"));
  CHECK(contains(op_error(OpKind::GatherElements, {d23, i64({1, 1}, {0})}, axis(2)), "axis"));
  CHECK(contains(op_error(OpKind::GatherElements, {d23, d23}), "input 1 has dtype f32"));
}

TEST_CASE("ScatterElements: the spec's examples, duplicates with add, mul, max and min") {
  // Zeros [3, 3]; updates row i go to rows idx[i][j] of column j.
  const Tensor zeros = Tensor::zeros(DType::f32, {3, 3});
  const Tensor upd = Tensor::from<float>({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f});
  check_close(run_op(OpKind::ScatterElements, {zeros, i64({2, 3}, {1, 0, 2, 0, 2, 1}), upd})[0],
              {3, 3}, {2.0, 1.1, 0, 1.0, 0, 2.2, 0, 2.1, 1.2});
  const Tensor row = Tensor::from<float>({1, 5}, {1, 2, 3, 4, 5});
  const Tensor two = Tensor::from<float>({1, 2}, {1.1f, 2.1f});
  check_close(run_op(OpKind::ScatterElements, {row, i64({1, 2}, {1, 3}), two}, axis(1))[0], {1, 5},
              {1, 1.1, 3, 2.1, 5});
  check_close(run_op(OpKind::ScatterElements, {row, i64({1, 2}, {1, -3}), two}, axis(1))[0], {1, 5},
              {1, 1.1, 2.1, 4, 5});
  check_close(run_op(OpKind::ScatterElements, {row, i64({1, 2}, {1, 1}), two}, reduce("add", 1))[0],
              {1, 5}, {1, 5.2, 3, 4, 5});
  const Tensor d = Tensor::from<int32_t>({2}, {2, 3});
  const Tensor u = Tensor::from<int32_t>({2}, {4, 5});
  check_close(run_op(OpKind::ScatterElements, {d, i64({2}, {0, 0}), u}, reduce("mul"))[0], {2},
              {40, 3});
  check_close(run_op(OpKind::ScatterElements, {d, i64({2}, {0, 1}), u}, reduce("max"))[0], {2},
              {4, 5});
  const Tensor neg = Tensor::from<int32_t>({2}, {-4, 3});
  check_close(run_op(OpKind::ScatterElements, {d, i64({2}, {0, 1}), neg}, reduce("min"))[0], {2},
              {-4, 3});
  // Integer sums wrap.
  const int32_t big = std::numeric_limits<int32_t>::max();
  const Tensor wrapped =
      run_op(OpKind::ScatterElements,
             {Tensor::from<int32_t>({1}, {big}), i64({1}, {0}), Tensor::from<int32_t>({1}, {1})},
             reduce("add"))[0];
  CHECK(wrapped.data<int32_t>()[0] == std::numeric_limits<int32_t>::min());
}

TEST_CASE("ScatterElements: user errors") {
  const Tensor d = iota<float>({2, 3});
  CHECK(contains(
      op_error(OpKind::ScatterElements, {d, i64({1, 1}, {2}), Tensor::from<float>({1, 1}, {1})}),
      "index 2 at position 0 is out of range for axis 0 of size 2"));
  CHECK(contains(op_error(OpKind::ScatterElements,
                          {d, i64({1, 2}, {0, 1}), Tensor::from<float>({2, 1}, {1, 2})}),
                 "updates of shape [2,1] must have the shape of indices [1,2]"));
  CHECK(contains(op_error(OpKind::ScatterElements,
                          {d, i64({1, 1}, {0}), Tensor::from<float>({1, 1}, {1})}, reduce("sub")),
                 "reduction must be 'none', 'add', 'mul', 'max' or 'min', got 'sub'"));
  CHECK(contains(
      op_error(OpKind::ScatterElements, {d, i64({1, 1}, {0}), Tensor::from<double>({1, 1}, {1})}),
      "(ScatterElements)"));
}

TEST_CASE("GatherND: the spec's examples, batch_dims, negative indices") {
  const Tensor d22 = Tensor::from<int32_t>({2, 2}, {0, 1, 2, 3});
  check_close(run_op(OpKind::GatherND, {d22, i64({2, 2}, {0, 0, 1, 1})})[0], {2}, {0, 3});
  check_close(run_op(OpKind::GatherND, {d22, i64({2, 1}, {1, 0})})[0], {2, 2}, {2, 3, 0, 1});
  check_close(run_op(OpKind::GatherND, {d22, i64({1, 2}, {-1, -2})})[0], {1}, {2});
  const Tensor d222 = iota<float>({2, 2, 2});
  check_close(run_op(OpKind::GatherND, {d222, i64({2, 2}, {0, 1, 1, 0})})[0], {2, 2}, {2, 3, 4, 5});
  check_close(run_op(OpKind::GatherND, {d222, i64({2, 1, 2}, {0, 1, 1, 0})})[0], {2, 1, 2},
              {2, 3, 4, 5});
  // batch_dims 1: batch b reads its own [2, 2] matrix.
  const Attributes batch{{"batch_dims", int64_t{1}}};
  check_close(run_op(OpKind::GatherND, {d222, i64({2, 1}, {1, 0})}, batch)[0], {2, 2},
              {2, 3, 4, 5});
  check_close(run_op(OpKind::GatherND, {d222, i64({2, 2}, {0, 1, 1, 1})}, batch)[0], {2}, {1, 7});
}

TEST_CASE("GatherND: user errors") {
  const Tensor d222 = iota<float>({2, 2, 2});
  CHECK(contains(op_error(OpKind::GatherND, {d222, i64({1, 4}, {0, 0, 0, 0})}),
                 "the last dim of indices [1,4] must be in [1, 3]"));
  CHECK(contains(
      op_error(OpKind::GatherND, {d222, i64({3, 1}, {0, 0, 0})}, {{"batch_dims", int64_t{1}}}),
      "the batch dims of indices [3,1] and data [2,2,2] differ"));
  CHECK(contains(op_error(OpKind::GatherND, {d222, i64({1, 2}, {0, 2})}),
                 "index 2 at position 1 is out of range for axis 1 of size 2"));
  CHECK(contains(op_error(OpKind::GatherND, {d222, i64({1}, {0})}, {{"batch_dims", int64_t{1}}}),
                 "batch_dims 1 must be in [0, 1)"));
}

TEST_CASE("ScatterND: the spec's example, slices, add and mul with duplicates") {
  const Tensor d = Tensor::from<float>({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  check_close(run_op(OpKind::ScatterND,
                     {d, i64({4, 1}, {4, 3, 1, 7}), Tensor::from<float>({4}, {9, 10, 11, 12})})[0],
              {8}, {1, 11, 3, 10, 9, 6, 7, 12});
  // A row of depth 1 into [2, 2] writes a whole row; -1 is the last.
  check_close(run_op(OpKind::ScatterND, {Tensor::zeros(DType::i64, {2, 2}), i64({1, 1}, {-1}),
                                         i64({1, 2}, {5, 6})})[0],
              {2, 2}, {0, 0, 5, 6});
  const Tensor dup = Tensor::from<int32_t>({4}, {1, 2, 3, 4});
  const Tensor u = Tensor::from<int32_t>({2}, {5, 6});
  check_close(run_op(OpKind::ScatterND, {dup, i64({2, 1}, {0, 0}), u},
                     {{"reduction", std::string("add")}})[0],
              {4}, {12, 2, 3, 4});
  check_close(run_op(OpKind::ScatterND, {dup, i64({2, 1}, {0, 0}), u},
                     {{"reduction", std::string("mul")}})[0],
              {4}, {30, 2, 3, 4});
}

TEST_CASE("ScatterND: user errors") {
  const Tensor d = iota<float>({2, 2});
  CHECK(contains(
      op_error(OpKind::ScatterND, {d, i64({1, 1}, {0}), Tensor::from<float>({1, 3}, {1, 2, 3})}),
      "updates of shape [1,3] must be [1,2] for data [2,2] and indices [1,1]"));
  CHECK(
      contains(op_error(OpKind::ScatterND, {d, i64({1, 2}, {0, 2}), Tensor::from<float>({1}, {1})}),
               "index 2 at position 1 is out of range for axis 1 of size 2"));
}
