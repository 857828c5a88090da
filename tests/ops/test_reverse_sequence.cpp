// ReverseSequence: time-major and batch-major layouts, inner dims, and errors.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
Attributes seq_axes(int64_t batch, int64_t time) {
  return {{"batch_axis", batch}, {"time_axis", time}};
}
}  // namespace

TEST_CASE("ReverseSequence: time-major and batch-major") {
  // [time 4, batch 2]: column 0 [0,2,4,6] reversed whole, column 1 [1,3,5,7] its first 2.
  check_close(run_op(OpKind::ReverseSequence, {iota<float>({4, 2}), ints({4, 2})})[0], {4, 2},
              {6, 3, 4, 1, 2, 5, 0, 7});
  // [batch 2, time 3]: row 0 reversed whole, row 1 of length 1 unchanged.
  check_close(
      run_op(OpKind::ReverseSequence, {iota<int64_t>({2, 3}), ints({3, 1})}, seq_axes(0, 1))[0],
      {2, 3}, {2, 1, 0, 3, 4, 5});
  // [time 2, batch 2, 2]: batch 0 swaps its two steps, batch 1 (length 1) and length 0 keep theirs.
  check_close(run_op(OpKind::ReverseSequence,
                     {iota<float>({2, 2, 2}), Tensor::from<int32_t>({2}, {2, 1})})[0],
              {2, 2, 2}, {4, 5, 2, 3, 0, 1, 6, 7});
  check_close(run_op(OpKind::ReverseSequence, {iota<float>({2, 2}), ints({0, 0})})[0], {2, 2},
              {0, 1, 2, 3});
}

TEST_CASE("ReverseSequence: errors") {
  const Tensor x = iota<float>({4, 2});
  CHECK(
      contains(op_error(OpKind::ReverseSequence, {x, ints({5, 1})}), "length 5 is outside [0, 4]"));
  CHECK(contains(op_error(OpKind::ReverseSequence, {x, ints({-1, 1})}), "outside"));
  CHECK(contains(op_error(OpKind::ReverseSequence, {x, ints({1, 1, 1})}),
                 "sequence_lens must have shape [2]"));
  CHECK(contains(op_error(OpKind::ReverseSequence, {x, ints({1, 1})}, seq_axes(0, 0)),
                 "0 and 1 in some order"));
  CHECK(contains(op_error(OpKind::ReverseSequence, {iota<float>({4}), ints({1})}), "rank >= 2"));
  CHECK(contains(op_error(OpKind::ReverseSequence, {x, f32({2}, {1, 1})}), "expected one of"));
}
