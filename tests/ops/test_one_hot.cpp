// OneHot: hand-computed rows for each axis, negative and out-of-range indices, float indices and
// depth, and the errors a user can trigger.
#include <cmath>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("OneHot: last axis and axis 0, negative indices count from the end") {
  const Tensor idx = ints({0, 2, -1});
  const Tensor depth = Tensor::scalar<int64_t>(3), values = f32({2}, {0, 1});
  for (bool constant : {false, true}) {
    const Tensor y = run_op(OpKind::OneHot, {idx, depth, values}, {}, 1, {false, constant})[0];
    CHECK(y.dtype() == DType::f32);
    check_close(y, {3, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 1});
  }
  // axis 0: out[d][i] = (index i == d).
  check_close(run_op(OpKind::OneHot, {idx, depth, values}, axis(0))[0], {3, 3},
              {1, 0, 0, 0, 0, 0, 0, 1, 1});
  // A middle axis of 2-D indices [[1],[0]] with depth 2: shape [2, 2, 1].
  check_close(run_op(OpKind::OneHot, {Tensor::from<int32_t>({2, 1}, {1, 0}), ints({2}), values},
                     axis(-2))[0],
              {2, 2, 1}, {0, 1, 1, 0});
}

TEST_CASE("OneHot: out-of-range indices give only off values, float indices and depth") {
  const Tensor values = Tensor::from<int32_t>({2}, {-1, 5});
  const Tensor y = run_op(OpKind::OneHot, {ints({3, -4}), Tensor::scalar<int64_t>(3), values})[0];
  CHECK(y.dtype() == DType::i32);
  check_close(y, {2, 3}, {-1, -1, -1, -1, -1, -1});
  // 1.7 truncates to 1, depth 2.0 to 2.
  check_close(run_op(OpKind::OneHot, {f32({1}, {1.7f}), Tensor::scalar(2.0f), f32({2}, {0, 1})})[0],
              {1, 2}, {0, 1});
  // NaN and huge float indices are out of range; -1.5 truncates to -1, the last.
  check_close(run_op(OpKind::OneHot, {f32({3}, {std::nanf(""), 1e30f, -1.5f}),
                                      Tensor::scalar<int64_t>(3), f32({2}, {0, 1})})[0],
              {3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 1});
  // Depth 0: an empty axis.
  check_close(run_op(OpKind::OneHot, {ints({1}), Tensor::scalar<int64_t>(0), f32({2}, {0, 1})})[0],
              {1, 0}, {});
}

TEST_CASE("OneHot: errors") {
  const Tensor idx = ints({0, 1}), depth = Tensor::scalar<int64_t>(2), values = f32({2}, {0, 1});
  CHECK(contains(op_error(OpKind::OneHot, {idx, depth, f32({3}, {0, 1, 2})}), "shape [2]"));
  CHECK(contains(op_error(OpKind::OneHot, {idx, Tensor::scalar<int64_t>(-1), values}),
                 "depth must be >= 0"));
  CHECK(contains(op_error(OpKind::OneHot, {idx, ints({2, 2}), values}), "one element"));
  CHECK(contains(op_error(OpKind::OneHot, {idx, depth, values}, axis(2)), "axis"));
  CHECK(contains(op_error(OpKind::OneHot, {idx, Tensor::scalar(std::nanf("")), values}), "depth"));
  // [2^31, 0] indices and depth 2^61: the shape arithmetic would overflow, however empty.
  CHECK(contains(op_error(OpKind::OneHot, {Tensor(DType::i64, {int64_t{1} << 31, 0}),
                                           Tensor::scalar(0x1p61), values}),
                 "too large"));
}
