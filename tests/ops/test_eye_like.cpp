// EyeLike: the main and off diagonals, the dtype attribute, a k beyond the matrix, and errors.
#include <limits>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("EyeLike: diagonals and dtypes") {
  const Tensor x = Tensor(DType::f32, {2, 3});
  const Tensor y = run_op(OpKind::EyeLike, {x})[0];
  CHECK(y.dtype() == DType::f32);
  check_close(y, {2, 3}, {1, 0, 0, 0, 1, 0});
  check_close(run_op(OpKind::EyeLike, {x}, {{"k", int64_t{1}}})[0], {2, 3}, {0, 1, 0, 0, 0, 1});
  check_close(run_op(OpKind::EyeLike, {x}, {{"k", int64_t{-1}}})[0], {2, 3}, {0, 0, 0, 1, 0, 0});
  // k far outside: all zeros, and no overflow computing the column.
  check_close(run_op(OpKind::EyeLike, {x}, {{"k", int64_t{1} << 62}})[0], {2, 3},
              {0, 0, 0, 0, 0, 0});
  check_close(run_op(OpKind::EyeLike, {x}, {{"k", std::numeric_limits<int64_t>::min()}})[0], {2, 3},
              {0, 0, 0, 0, 0, 0});
  const Tensor i = run_op(OpKind::EyeLike, {x}, {{"dtype", onnx_dtype_code(DType::i64)}})[0];
  CHECK(i.dtype() == DType::i64);
  check_close(i, {2, 3}, {1, 0, 0, 0, 1, 0});
  const Tensor b = run_op(OpKind::EyeLike, {Tensor(DType::i32, {2, 2})},
                          {{"dtype", onnx_dtype_code(DType::boolean)}})[0];
  CHECK(b.dtype() == DType::boolean);
  check_close(b, {2, 2}, {1, 0, 0, 1});
  check_close(run_op(OpKind::EyeLike, {Tensor(DType::i32, {0, 3})})[0], {0, 3}, {});
}

TEST_CASE("EyeLike: errors") {
  CHECK(contains(op_error(OpKind::EyeLike, {Tensor(DType::f32, {3})}), "must be 2-D"));
  // 8 is STRING, which sgraph has no dtype for.
  CHECK_FALSE(
      op_error(OpKind::EyeLike, {Tensor(DType::f32, {2, 2})}, {{"dtype", int64_t{8}}}).empty());
}
