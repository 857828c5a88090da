#include "test_util.h"
using namespace sgraph;
TEST_CASE("smoke: relu(x + b)") {
  auto out = test::run_op(OpKind::Add, {Tensor::from<float>({2}, {1, 2}), Tensor::from<float>({2}, {3, 4})});
  test::check_close(out[0], {2}, {4, 6});
}
