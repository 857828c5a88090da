// Trilu: hand-computed triangles (upper and lower, k on both sides, k beyond the matrix, batches,
// non-square), and user errors.
#include <limits>
#include <optional>

#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

std::vector<Tensor> trilu(const Tensor& x, std::optional<int64_t> k, bool upper) {
  return run_op(OpKind::Trilu, {x, k ? Tensor::scalar<int64_t>(*k) : Tensor()},
                {{"upper", int64_t{upper}}});
}

}  // namespace

TEST_CASE("Trilu: upper and lower triangles of a 3x4 matrix for several k") {
  // x = [[0,1,2,3],[4,5,6,7],[8,9,10,11]]
  const Tensor x = iota<float>({3, 4});
  check_close(run_op(OpKind::Trilu, {x})[0], {3, 4}, {0, 1, 2, 3, 0, 5, 6, 7, 0, 0, 10, 11});
  check_close(trilu(x, 1, true)[0], {3, 4}, {0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11});
  check_close(trilu(x, -1, true)[0], {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11});
  check_close(trilu(x, std::nullopt, false)[0], {3, 4}, {0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0});
  check_close(trilu(x, -1, false)[0], {3, 4}, {0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0});
  check_close(trilu(x, 2, false)[0], {3, 4}, {0, 1, 2, 0, 4, 5, 6, 7, 8, 9, 10, 11});
}

TEST_CASE("Trilu: k beyond the matrix keeps everything or nothing") {
  const Tensor x = iota<int64_t>({2, 3}, 1);
  const std::vector<double> all{1, 2, 3, 4, 5, 6}, none(6, 0);
  check_close(trilu(x, 3, true)[0], {2, 3}, none);
  check_close(trilu(x, -2, true)[0], {2, 3}, all);
  check_close(trilu(x, -2, false)[0], {2, 3}, none);
  check_close(trilu(x, 5, false)[0], {2, 3}, all);
  check_close(trilu(x, std::numeric_limits<int64_t>::min(), true)[0], {2, 3}, all);
  check_close(trilu(x, std::numeric_limits<int64_t>::max(), false)[0], {2, 3}, all);
  check_close(trilu(x, std::numeric_limits<int64_t>::max(), true)[0], {2, 3}, none);
}

TEST_CASE("Trilu: batches of matrices, bool, empty matrices") {
  // Two 2x2 matrices [[0,1],[2,3]] and [[4,5],[6,7]].
  check_close(trilu(iota<int32_t>({2, 2, 2}), 0, false)[0], {2, 2, 2}, {0, 0, 2, 3, 4, 0, 6, 7});
  const Tensor b = Tensor::from<bool>({2, 2}, {true, true, true, true});
  check_close(trilu(b, 0, true)[0], {2, 2}, {1, 1, 0, 1});
  check_close(trilu(Tensor(DType::f32, {3, 0, 2}), 0, true)[0], {3, 0, 2}, {});
}

TEST_CASE("Trilu: user errors") {
  CHECK(contains(op_error(OpKind::Trilu, {iota<float>({4})}),
                 "input must have rank >= 2 (matrices), got shape [4]"));
  CHECK(contains(op_error(OpKind::Trilu, {iota<float>({2, 2}), Tensor::from<int64_t>({2}, {0, 1})}),
                 "k must be a scalar, got shape [2]"));
  CHECK(contains(op_error(OpKind::Trilu, {iota<float>({2, 2}), Tensor::scalar<int32_t>(0)}),
                 "(Trilu): input 1 has dtype i32"));
}

// The upper triangle of [2, n, 5] matrices; the lower one from the diagonal below the main, of i64;
// and k given at run time (a causal mask's offset).
SG_LOWERING_SAMPLE(Trilu, triangles) {
  s.output(s.b.trilu(s.input(DType::f32, {2, n, 5})));
  s.output(s.b.trilu(s.input(DType::i64, {n, 4}, -9, 9), s.b.scalar<int64_t>(-1),
                     Attributes{{"upper", int64_t{0}}}));
  s.output(s.b.trilu(s.input(DType::f32, {3, n}), s.input(DType::i64, {}, -3, 3)));
}
