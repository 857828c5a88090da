// HannWindow, HammingWindow, BlackmanWindow: hand-computed periodic and symmetric windows, output
// dtypes, the edge sizes 0 and 1, and user errors.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

Tensor window(OpKind op, int64_t size, int64_t periodic = 1, int64_t dtype = 1) {
  return run_op(op, {Tensor::scalar<int64_t>(size)},
                {{"periodic", periodic}, {"output_datatype", dtype}})[0];
}

}  // namespace

TEST_CASE("HannWindow: periodic and symmetric") {
  // periodic, size 4: N = 4, 0.5 - 0.5 cos(pi n / 2) = 0, 0.5, 1, 0.5
  check_close(window(OpKind::HannWindow, 4), {4}, {0, 0.5, 1, 0.5});
  // symmetric, size 5: N = 4, the same points and the closing 0
  check_close(window(OpKind::HannWindow, 5, 0), {5}, {0, 0.5, 1, 0.5, 0});
  // the attributes' defaults: periodic, f32
  const Tensor d = run_op(OpKind::HannWindow, {Tensor::scalar<int32_t>(4)})[0];
  CHECK(d.dtype() == DType::f32);
  check_close(d, {4}, {0, 0.5, 1, 0.5});
}

TEST_CASE("HammingWindow: periodic and symmetric") {
  // 25/46 - 21/46 cos(2 pi n / N): at cos = 1, 0, -1 it is 4/46, 25/46, 1
  const double lo = 4.0 / 46, mid = 25.0 / 46;
  check_close(window(OpKind::HammingWindow, 4), {4}, {lo, mid, 1, mid});
  check_close(window(OpKind::HammingWindow, 3, 0), {3}, {lo, 1, lo});
}

TEST_CASE("BlackmanWindow: periodic and symmetric") {
  // 0.42 - 0.5 cos(x) + 0.08 cos(2x): x = 0 gives 0, x = pi/2 gives 0.34, x = pi gives 1
  check_close(window(OpKind::BlackmanWindow, 4), {4}, {0, 0.34, 1, 0.34});
  check_close(window(OpKind::BlackmanWindow, 5, 0), {5}, {0, 0.34, 1, 0.34, 0});
  // periodic, size 3: x = 2 pi / 3 gives 0.42 + 0.25 - 0.04 = 0.63
  check_close(window(OpKind::BlackmanWindow, 3), {3}, {0, 0.63, 0.63});
}

TEST_CASE("Window functions: output dtypes and sizes 0 and 1") {
  const Tensor d = window(OpKind::HannWindow, 4, 1, 11);
  CHECK(d.dtype() == DType::f64);
  check_close(d, {4}, {0, 0.5, 1, 0.5}, 1e-15, 1e-15);
  const Tensor i = window(OpKind::HammingWindow, 4, 1, 7);  // integers truncate
  CHECK(i.dtype() == DType::i64);
  check_close(i, {4}, {0, 0, 1, 0});
  check_close(window(OpKind::BlackmanWindow, 0), {0}, {});
  check_close(window(OpKind::HannWindow, 1), {1}, {0});     // periodic: N = 1
  check_close(window(OpKind::HannWindow, 1, 0), {1}, {1});  // symmetric: N = 0, one point
  check_close(window(OpKind::HammingWindow, 1, 0), {1}, {1});
}

TEST_CASE("Window functions: errors") {
  auto err = [](Tensor size, Attributes a = {}) {
    return op_error(OpKind::HannWindow, {std::move(size)}, std::move(a));
  };
  const Tensor four = Tensor::scalar<int64_t>(4);
  CHECK(err(four).empty());
  CHECK(contains(err(Tensor::scalar<int64_t>(-1)), "size must be in [0, 2^60], got -1"));
  CHECK(contains(err(Tensor::scalar<int64_t>(int64_t{1} << 62)), "size must be in [0, 2^60]"));
  CHECK(contains(err(ints({2, 3})), "size must be a scalar, got shape [2]"));
  CHECK(contains(err(Tensor::scalar<float>(4)), "input 0"));
  CHECK(contains(err(four, {{"periodic", int64_t{2}}}), "periodic must be 0 or 1, got 2"));
  CHECK(contains(err(four, {{"output_datatype", int64_t{9}}}), "output_datatype must be numeric"));
  CHECK(!err(four, {{"output_datatype", int64_t{999}}}).empty());
}
