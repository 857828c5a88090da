// ArgMax / ArgMin: hand-computed indices, ties with select_last_index, NaN, integer dtypes, and a
// brute-force scan on random inputs along every axis.
#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
Attributes arg_attr(int64_t axis, int64_t keepdims = 1, int64_t last = 0) {
  return {{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", last}};
}

// Brute force: for every index of the other dims, the first position along `ax` of the largest
// (smallest) element; visiting x in row-major order meets those positions in increasing order.
std::vector<double> brute_arg(const Tensor& x, int64_t ax, bool is_max) {
  Shape kept = x.shape();
  kept[ax] = 1;
  std::vector<double> best(numel(kept)), index(numel(kept), -1);
  for (int64_t f = 0; f < x.numel(); ++f) {
    Ints i = unravel(f, x.shape());
    const int64_t j = i[ax];
    i[ax] = 0;
    const int64_t o = ravel(i, kept);
    const double v = x.at_double(f);
    if (index[o] < 0 || (is_max ? v > best[o] : v < best[o])) {
      best[o] = v;
      index[o] = static_cast<double>(j);
    }
  }
  return index;
}
}  // namespace

TEST_CASE("ArgMax / ArgMin: axes, keepdims, ties with select_last_index") {
  // rows {1, 5, 5} and {7, 2, 7}
  const Tensor x = f32({2, 3}, {1, 5, 5, 7, 2, 7});
  const Tensor y = run_op(OpKind::ArgMax, {x})[0];  // default axis 0, keepdims 1
  CHECK(y.dtype() == DType::i64);
  check_close(y, {1, 3}, {1, 0, 1});
  check_close(run_op(OpKind::ArgMax, {x}, arg_attr(1))[0], {2, 1}, {1, 0});
  check_close(run_op(OpKind::ArgMax, {x}, arg_attr(-1, 0))[0], {2}, {1, 0});
  check_close(run_op(OpKind::ArgMax, {x}, arg_attr(1, 0, 1))[0], {2}, {2, 2});
  check_close(run_op(OpKind::ArgMin, {x}, axis(0))[0], {1, 3}, {0, 1, 0});
  check_close(run_op(OpKind::ArgMin, {x}, arg_attr(1, 0))[0], {2}, {0, 1});
  check_close(run_op(OpKind::ArgMin, {x}, arg_attr(1, 0, 1))[0], {2}, {0, 1});
  const Tensor t = f32({4}, {3, 1, 1, 3});
  check_close(run_op(OpKind::ArgMin, {t}, arg_attr(0, 0))[0], {}, {1});
  check_close(run_op(OpKind::ArgMin, {t}, arg_attr(0, 0, 1))[0], {}, {2});
  check_close(run_op(OpKind::ArgMax, {t}, arg_attr(0, 1))[0], {1}, {0});
  check_close(run_op(OpKind::ArgMax, {t}, arg_attr(0, 1, 1))[0], {1}, {3});
}

TEST_CASE("ArgMax / ArgMin: the middle axis of a 3-D tensor, size-1 axis") {
  // x[i][j][k]: j-columns (i=0,k=0) = {4, 9, 1}, (0,1) = {0, 0, 2}, (1,0) = {5, 3, 8}, (1,1) = {6,
  // 6, 6}
  const Tensor x = f32({2, 3, 2}, {4, 0, 9, 0, 1, 2, 5, 6, 3, 6, 8, 6});
  check_close(run_op(OpKind::ArgMax, {x}, axis(1))[0], {2, 1, 2}, {1, 2, 2, 0});
  check_close(run_op(OpKind::ArgMax, {x}, arg_attr(1, 0, 1))[0], {2, 2}, {1, 2, 2, 2});
  check_close(run_op(OpKind::ArgMin, {x}, arg_attr(-2, 0))[0], {2, 2}, {2, 0, 1, 0});
  check_close(run_op(OpKind::ArgMin, {x}, arg_attr(-2, 0, 1))[0], {2, 2}, {2, 1, 1, 2});
  check_close(run_op(OpKind::ArgMax, {f32({3, 1}, {4, 5, 6})}, axis(1))[0], {3, 1}, {0, 0, 0});
}

TEST_CASE("ArgMax / ArgMin: NaN wins like numpy, integer dtypes") {
  const Tensor n = f32({4}, {1, NAN, 3, NAN});
  check_close(run_op(OpKind::ArgMax, {n}, arg_attr(0, 0))[0], {}, {1});
  check_close(run_op(OpKind::ArgMax, {n}, arg_attr(0, 0, 1))[0], {}, {3});
  check_close(run_op(OpKind::ArgMin, {n}, arg_attr(0, 0))[0], {}, {1});
  check_close(run_op(OpKind::ArgMin, {f32({3}, {2, -1, NAN})}, arg_attr(0, 0))[0], {}, {2});
  check_close(run_op(OpKind::ArgMax, {Tensor::from<int32_t>({2, 2}, {-5, 3, 8, -1})}, axis(1))[0],
              {2, 1}, {1, 0});
  check_close(run_op(OpKind::ArgMin, {Tensor::from<uint8_t>({3}, {200, 7, 9})})[0], {1}, {1});
  check_close(run_op(OpKind::ArgMax, {Tensor::from<int8_t>({3}, {-128, 127, 0})})[0], {1}, {1});
  check_close(
      run_op(OpKind::ArgMin, {Tensor::from<int64_t>({3}, {4, -9, -9})}, arg_attr(0, 1, 1))[0], {1},
      {2});
  check_close(run_op(OpKind::ArgMax, {Tensor::from<double>({2}, {-0.5, -0.25})})[0], {1}, {1});
}

TEST_CASE("ArgMax / ArgMin: random inputs against a brute-force scan along every axis") {
  const Tensor x = random_f32({3, 7, 5}, 31);
  for (int64_t ax = 0; ax < 3; ++ax) {
    CAPTURE(ax);
    Shape kept = x.shape();
    kept.erase(kept.begin() + ax);
    check_close(run_op(OpKind::ArgMax, {x}, arg_attr(ax, 0))[0], kept, brute_arg(x, ax, true), 0,
                0);
    check_close(run_op(OpKind::ArgMin, {x}, arg_attr(ax - 3, 0))[0], kept, brute_arg(x, ax, false),
                0, 0);
  }
  // integers with many ties: first and last index
  std::mt19937 rng(9);
  std::vector<int32_t> v(6 * 9);
  for (auto& e : v) e = static_cast<int32_t>(rng() % 4);
  const Tensor xi = Tensor::from<int32_t>({6, 9}, v);
  check_close(run_op(OpKind::ArgMax, {xi}, arg_attr(1, 0))[0], {6}, brute_arg(xi, 1, true), 0, 0);
  check_close(run_op(OpKind::ArgMin, {xi}, arg_attr(0, 0))[0], {9}, brute_arg(xi, 0, false), 0, 0);
}

TEST_CASE("ArgMax / ArgMin: user errors") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(contains(op_error(OpKind::ArgMax, {x}, axis(2)), "axis 2 is out of range for rank 2"));
  CHECK(contains(op_error(OpKind::ArgMin, {x}, axis(-3)), "out of range"));
  CHECK(contains(op_error(OpKind::ArgMax, {Tensor::scalar(1.0f)}), "rank >= 1"));
  CHECK(contains(op_error(OpKind::ArgMin, {Tensor::from<bool>({2}, {true, false})}),
                 "must be numeric"));
  CHECK(contains(op_error(OpKind::ArgMax, {Tensor(DType::f32, {2, 0})}, axis(1)),
                 "is empty: there is no index to pick"));
  // an empty output needs no index
  check_close(run_op(OpKind::ArgMax, {Tensor(DType::f32, {0, 3})}, axis(1))[0], {0, 1}, {});
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

// Floats rounded to halves, so that rows hold ties: the first index, or the last with
// select_last_index, must be the one the interpreter picks.
SG_LOWERING_SAMPLE(ArgMax, axes_and_ties) {
  const ValueId x = s.input(DType::f32, {3, n, 4}, -2, 2, /*halves=*/true);
  s.output(s.b.node(OpKind::ArgMax, {x}, arg_attr(1))[0]);
  s.output(s.b.node(OpKind::ArgMax, {x}, arg_attr(-1, 0, 1))[0]);
  s.output(s.b.node(OpKind::ArgMax, {x}, arg_attr(0, 1, 1))[0]);
  s.output(s.b.node(OpKind::ArgMax, {s.input(DType::i32, {n, 5}, -3, 3)}, arg_attr(0, 0))[0]);
}

SG_LOWERING_SAMPLE(ArgMin, dtypes) {
  s.output(s.b.node(OpKind::ArgMin, {s.input(DType::f64, {n, 3}, -2, 2, true)}, arg_attr(0))[0]);
  s.output(s.b.node(OpKind::ArgMin, {s.input(DType::u8, {3, n}, 0, 255)}, arg_attr(1, 0, 1))[0]);
  s.output(s.b.node(OpKind::ArgMin, {s.input(DType::i8, {2, n}, -100, 100)}, arg_attr(-1))[0]);
  s.output(s.b.node(OpKind::ArgMin, {s.input(DType::i64, {n, 2}, -5, 5)}, arg_attr(0, 0, 1))[0]);
}
