// Det: hand-computed determinants (pivoting, singular, batches, 1x1 and 0x0 matrices), and user
// errors.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

Tensor det(const Tensor& x) { return run_op(OpKind::Det, {x})[0]; }

}  // namespace

TEST_CASE("Det: 2x2 and 3x3 matrices, one needing a row swap") {
  check_close(det(f32({2, 2}, {1, 2, 3, 4})), {}, {-2});  // 1*4 - 2*3
  check_close(det(f32({2, 2}, {0, 1, 1, 0})), {}, {-1});  // a zero first pivot
  // 2*(3*2 - 2*1) - 0*(1*2 - 2*1) + 1*(1*1 - 3*1) = 8 - 2 = 6
  check_close(det(f32({3, 3}, {2, 0, 1, 1, 3, 2, 1, 1, 2})), {}, {6});
  // Triangular: the product of the diagonal, 2 * 3 * 4.
  check_close(det(Tensor::from<double>({3, 3}, {2, 5, 7, 0, 3, 1, 0, 0, 4})), {}, {24});
}

TEST_CASE("Det: singular matrices give 0") {
  check_close(det(f32({2, 2}, {1, 2, 2, 4})), {}, {0});
  check_close(det(f32({3, 3}, {1, 2, 3, 0, 0, 0, 4, 5, 6})), {}, {0});  // a zero row
  check_close(det(f32({2, 2}, {0, 0, 0, 0})), {}, {0});
}

TEST_CASE("Det: batches of matrices keep the leading dims") {
  // [[1,2],[3,4]] -> -2, [[2,0],[0,3]] -> 6, [[0,1],[1,0]] -> -1, [[5,1],[0,2]] -> 10
  const Tensor x =
      Tensor::from<double>({2, 2, 2, 2}, {1, 2, 3, 4, 2, 0, 0, 3, 0, 1, 1, 0, 5, 1, 0, 2});
  check_close(det(x), {2, 2}, {-2, 6, -1, 10});
}

TEST_CASE("Det: 1x1, 0x0 and empty batches") {
  check_close(det(f32({3, 1, 1}, {5, -2, 0})), {3}, {5, -2, 0});
  check_close(det(Tensor(DType::f32, {2, 0, 0})), {2}, {1, 1});  // the empty product
  check_close(det(Tensor(DType::f64, {0, 3, 3})), {0}, {});
}

TEST_CASE("Det: user errors") {
  CHECK(contains(op_error(OpKind::Det, {iota<float>({4})}),
                 "input must have rank >= 2 (square matrices), got shape [4]"));
  CHECK(contains(op_error(OpKind::Det, {iota<float>({2, 2, 3})}),
                 "matrices must be square (last two dims equal), got shape [2,2,3]"));
  CHECK(contains(op_error(OpKind::Det, {iota<int32_t>({2, 2})}), "must be a float tensor"));
}
