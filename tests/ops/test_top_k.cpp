// Hardmax and TopK: hand-computed lanes along each axis, ties (lower index first), NaN (the
// largest), k from an input or the opset-1 attribute, and the errors a user can trigger.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
Attributes topk_attrs(int64_t axis, int64_t largest = 1) {
  return {{"axis", axis}, {"largest", largest}};
}
}  // namespace

TEST_CASE("Hardmax: one at the first maximum of each lane, any axis") {
  // [[1,3,2],[5,5,0]]: along the last axis the rows' maxima are at 1 and 0 (the first of a tie).
  const Tensor x = f32({2, 3}, {1, 3, 2, 5, 5, 0});
  check_close(run_op(OpKind::Hardmax, {x})[0], {2, 3}, {0, 1, 0, 1, 0, 0});
  // Along axis 0, per column: 5 > 1, 5 > 3, 2 > 0.
  check_close(run_op(OpKind::Hardmax, {x}, axis(0))[0], {2, 3}, {0, 0, 1, 1, 1, 0});
  // NaN is the largest; f64 keeps its dtype.
  const Tensor d = Tensor::from<double>({3}, {1, std::nan(""), 3});
  const Tensor y = run_op(OpKind::Hardmax, {d})[0];
  CHECK(y.dtype() == DType::f64);
  check_close(y, {3}, {0, 1, 0});
  // Empty lanes and a zero-size axis give an empty or all-zero output.
  check_close(run_op(OpKind::Hardmax, {Tensor(DType::f32, {2, 0})})[0], {2, 0}, {});
}

TEST_CASE("Hardmax: errors") {
  CHECK(contains(op_error(OpKind::Hardmax, {Tensor::scalar(1.0f)}), "rank >= 1"));
  CHECK(contains(op_error(OpKind::Hardmax, {f32({2}, {1, 2})}, axis(1)), "axis"));
  CHECK(contains(op_error(OpKind::Hardmax, {iota<int32_t>({2})}), "float"));
}

TEST_CASE("TopK: largest and smallest along the last axis, ties by lower index") {
  const Tensor x = f32({2, 4}, {3, 1, 4, 1, 5, 9, 2, 6});
  for (bool constant_k : {false, true}) {
    const std::vector<Tensor> y =
        run_op(OpKind::TopK, {x, ints({2})}, topk_attrs(-1), 2, {false, constant_k});
    check_close(y[0], {2, 2}, {4, 3, 9, 6});
    CHECK(y[1].dtype() == DType::i64);
    check_close(y[1], {2, 2}, {2, 0, 1, 3});
  }
  // Smallest 3: row 0 [1 (1), 1 (3), 3 (0)], row 1 [2 (2), 5 (0), 6 (3)].
  const std::vector<Tensor> s = run_op(OpKind::TopK, {x, ints({3})}, topk_attrs(1, 0), 2);
  check_close(s[0], {2, 3}, {1, 1, 3, 2, 5, 6});
  check_close(s[1], {2, 3}, {1, 3, 0, 2, 0, 3});
}

TEST_CASE("TopK: axis 0, integers, NaN, k = 0 and the k attribute") {
  // Columns [1,3,3] and [6,2,5]: the tie of 3s comes in index order.
  const Tensor x = f32({3, 2}, {1, 6, 3, 2, 3, 5});
  const std::vector<Tensor> y = run_op(OpKind::TopK, {x, ints({2})}, axis(0), 2);
  check_close(y[0], {2, 2}, {3, 6, 3, 5});
  check_close(y[1], {2, 2}, {1, 0, 2, 2});
  const std::vector<Tensor> i =
      run_op(OpKind::TopK, {Tensor::from<int32_t>({3}, {5, -1, 7}), ints({1})}, {}, 2);
  CHECK(i[0].dtype() == DType::i32);
  check_close(i[0], {1}, {7});
  check_close(i[1], {1}, {2});
  const std::vector<Tensor> n =
      run_op(OpKind::TopK, {f32({3}, {1, std::nanf(""), 3}), ints({2})}, {}, 2);
  check_close(n[0], {2}, {kNaN, 3});
  check_close(n[1], {2}, {1, 2});
  check_close(run_op(OpKind::TopK, {x, ints({0})}, {}, 2)[0], {3, 0}, {});
  // Opset 1: k is an attribute.
  const std::vector<Tensor> a = run_op(OpKind::TopK, {x}, {{"k", int64_t{1}}}, 2);
  check_close(a[0], {3, 1}, {6, 3, 5});
  check_close(a[1], {3, 1}, {1, 0, 1});
}

TEST_CASE("TopK: errors") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(contains(op_error(OpKind::TopK, {x, ints({4})}, {}, 2), "exceeds axis 1 of size 3"));
  CHECK(contains(op_error(OpKind::TopK, {x, ints({-1})}, {}, 2), "k must be >= 0"));
  CHECK(contains(op_error(OpKind::TopK, {x, ints({1, 2})}, {}, 2), "one element"));
  CHECK(contains(op_error(OpKind::TopK, {x, ints({1})}, axis(2), 2), "axis"));
  CHECK(contains(op_error(OpKind::TopK, {Tensor::scalar(1.0f), ints({1})}, {}, 2), "rank >= 1"));
  CHECK(contains(op_error(OpKind::TopK, {Tensor::from<bool>({2}, {true, false}), ints({1})}, {}, 2),
                 "numeric"));
  CHECK(contains(op_error(OpKind::TopK, {x, Tensor::from<int32_t>({1}, {1})}, {}, 2), "i64"));
}
