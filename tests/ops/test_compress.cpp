// Compress and NonZero: hand-computed selections, a condition shorter than its axis, scalars and
// empty results, and the errors a user can trigger.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
Tensor cond(std::initializer_list<bool> v) {
  return Tensor::from<bool>({static_cast<int64_t>(v.size())}, v);
}
}  // namespace

TEST_CASE("Compress: along an axis, flattened, and a short condition") {
  const Tensor x = iota<float>({3, 2}, 1);  // [[1,2],[3,4],[5,6]]
  for (bool constant : {false, true})
    check_close(
        run_op(OpKind::Compress, {x, cond({false, true, true})}, axis(0), 1, {false, constant})[0],
        {2, 2}, {3, 4, 5, 6});
  check_close(run_op(OpKind::Compress, {x, cond({false, true})}, axis(1))[0], {3, 1}, {2, 4, 6});
  check_close(run_op(OpKind::Compress, {x, cond({false, true})}, axis(-1))[0], {3, 1}, {2, 4, 6});
  // No axis: x flattened; the condition's missing tail counts as false.
  check_close(run_op(OpKind::Compress, {x, cond({false, true, false, false, true})})[0], {2},
              {2, 5});
  check_close(run_op(OpKind::Compress, {x, cond({true})}, axis(0))[0], {1, 2}, {1, 2});
  const Tensor i =
      run_op(OpKind::Compress, {iota<int64_t>({2, 2}), cond({false, false})}, axis(0))[0];
  CHECK(i.dtype() == DType::i64);
  check_close(i, {0, 2}, {});
}

TEST_CASE("Compress: errors") {
  const Tensor x = iota<float>({3, 2});
  CHECK(contains(op_error(OpKind::Compress, {x, cond({true, true, true})}, axis(1)),
                 "more than the 2"));
  CHECK(contains(op_error(OpKind::Compress, {x, ints({1, 0})}, axis(1)), "expected one of bool"));
  CHECK(contains(
      op_error(OpKind::Compress, {x, Tensor::from<bool>({1, 2}, {true, false})}, axis(1)), "1-D"));
  CHECK(contains(op_error(OpKind::Compress, {x, cond({true})}, axis(2)), "axis"));
}

TEST_CASE("NonZero: indices of non-zero elements, row-major") {
  // [[1,0],[1,1]]: (0,0), (1,0), (1,1).
  for (bool constant : {false, true}) {
    const Tensor y = run_op(OpKind::NonZero, {Tensor::from<int32_t>({2, 2}, {1, 0, 1, 1})}, {}, 1,
                            {constant})[0];
    CHECK(y.dtype() == DType::i64);
    check_close(y, {2, 3}, {0, 1, 1, 0, 0, 1});
  }
  check_close(run_op(OpKind::NonZero, {f32({3}, {0, std::nanf(""), -0.0f})})[0], {1, 1}, {1});
  check_close(run_op(OpKind::NonZero, {iota<uint8_t>({3}, 0)})[0], {1, 2}, {1, 2});
  check_close(run_op(OpKind::NonZero, {Tensor::scalar(5.0f)})[0], {1, 1}, {0});
  check_close(run_op(OpKind::NonZero, {Tensor(DType::boolean, {2, 0})})[0], {2, 0}, {});
}
