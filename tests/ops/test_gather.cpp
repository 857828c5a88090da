// Gather: hand-computed values (2-D and negative indices, scalar index, every dtype family),
// zero-size cases, errors, and random gathers against xt::view with xt::keep.
#include <random>
#include <xtensor/xarray.hpp>
#include <xtensor/xview.hpp>

#include "jit/lowering_samples.h"
#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("Gather: axis 0 with 2-D indices, f32") {
  // data[3,2] = [[1,2],[3,4],[5,6]], indices [[0,1],[1,2]] -> [[[1,2],[3,4]],[[3,4],[5,6]]]
  const Tensor data = Tensor::from<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor idx = Tensor::from<int64_t>({2, 2}, {0, 1, 1, 2});
  check_close(run_op(OpKind::Gather, {data, idx})[0], {2, 2, 2}, {1, 2, 3, 4, 3, 4, 5, 6});
}

TEST_CASE("Gather: axis 1 with negative and 2-D indices, i32 indices") {
  // data[2,3] = [[0,1,2],[3,4,5]]
  const Tensor data = iota<int64_t>({2, 3});
  const Tensor one = Tensor::from<int32_t>({2}, {-1, 0});
  check_close(run_op(OpKind::Gather, {data, one}, axis(1))[0], {2, 2}, {2, 0, 5, 3});
  // indices [[-1,0],[-3,1]] -> row 0: [[2,0],[0,1]], row 1: [[5,3],[3,4]]
  const Tensor two = Tensor::from<int32_t>({2, 2}, {-1, 0, -3, 1});
  const Tensor y = run_op(OpKind::Gather, {data, two}, axis(-1))[0];
  CHECK(y.dtype() == DType::i64);
  check_close(y, {2, 2, 2}, {2, 0, 0, 1, 5, 3, 3, 4});
}

TEST_CASE("Gather: scalar index drops the axis, f64, bool and u8 data") {
  // data[3,2] = [[0,1],[2,3],[4,5]]: index 1 -> [2,3]; along axis 1 -> [1,3,5]
  check_close(run_op(OpKind::Gather, {iota<double>({3, 2}), Tensor::scalar<int64_t>(1)})[0], {2},
              {2, 3});
  check_close(
      run_op(OpKind::Gather, {iota<double>({3, 2}), Tensor::scalar<int64_t>(-1)}, axis(1))[0], {3},
      {1, 3, 5});
  const Tensor b = Tensor::from<bool>({2, 2}, {true, false, false, false});
  check_close(run_op(OpKind::Gather, {b, Tensor::from<int64_t>({3}, {1, 0, 0})})[0], {3, 2},
              {0, 0, 1, 0, 1, 0});
  const Tensor u =
      run_op(OpKind::Gather, {iota<uint8_t>({7}, 240), Tensor::from<int64_t>({2}, {6, -7})})[0];
  CHECK(u.dtype() == DType::u8);
  check_close(u, {2}, {246, 240});
}

TEST_CASE("Gather: size-1 and zero-size dims, constant indices give a static shape") {
  // Empty indices, an empty data axis that is not gathered, and a size-1 axis.
  check_close(run_op(OpKind::Gather, {iota<float>({3, 2}), Tensor(DType::i64, {0})})[0], {0, 2},
              {});
  check_close(
      run_op(OpKind::Gather, {Tensor(DType::f32, {2, 0}), Tensor::from<int64_t>({1}, {1})})[0],
      {1, 0}, {});
  check_close(
      run_op(OpKind::Gather, {iota<float>({1, 3}), Tensor::from<int64_t>({2, 1}, {0, 0})})[0],
      {2, 1, 3}, {0, 1, 2, 0, 1, 2});
  GraphBuilder b;
  const ValueId y =
      b.gather(b.input("x", DType::f32, {7, 13, 2}),
               b.constant("i", Tensor::from<int64_t>({2, 3}, {0, 1, 2, 3, 4, 5})), axis(1));
  CHECK(b.build().value(y).shape == DimList{7, 2, 3, 2});
}

TEST_CASE("Gather: random gathers match xt::view with xt::keep") {
  std::mt19937 rng(11);
  const Tensor x = test::random_f32({7, 13, 5}, 5);
  const auto xx = to_xt<float>(x);
  for (int64_t a = 0; a < 3; ++a) {
    std::vector<int64_t> idx(9);
    for (int64_t& i : idx) i = std::uniform_int_distribution<int64_t>(0, x.dim(a) - 1)(rng);
    const Tensor got = run_op(OpKind::Gather, {x, Tensor::from<int64_t>({9}, idx)}, axis(a))[0];
    xt::xarray<float> want;
    if (a == 0) want = xt::view(xx, xt::keep(idx), xt::all(), xt::all());
    if (a == 1) want = xt::view(xx, xt::all(), xt::keep(idx), xt::all());
    if (a == 2) want = xt::view(xx, xt::all(), xt::all(), xt::keep(idx));
    check_xt(got, want, 0, 0);
  }
}

TEST_CASE("Gather: errors") {
  const Tensor data = iota<float>({2, 3});
  CHECK(contains(op_error(OpKind::Gather, {data, Tensor::from<int64_t>({2}, {0, 3})}, axis(1)),
                 "index 3 is out of range for axis 1 of size 3"));
  CHECK(contains(op_error(OpKind::Gather, {data, Tensor::from<int32_t>({1}, {-3})}),
                 "index -3 is out of range for axis 0 of size 2"));
  CHECK(contains(op_error(OpKind::Gather, {data, Tensor::from<int64_t>({1}, {0})}, axis(2)),
                 "out of range"));
  CHECK(contains(op_error(OpKind::Gather, {data, Tensor::from<float>({1}, {0})}),
                 "expected one of i32 i64"));
  CHECK(contains(op_error(OpKind::Gather, {Tensor::scalar(1.0f), Tensor::scalar<int64_t>(0)}),
                 "rank >= 1"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(Gather, constant_indices) {
  const ValueId x = s.input(DType::f32, {n, 4});
  s.output(s.b.gather(x, s.b.constant("", ints({0, -1, 0}))));
}

SG_LOWERING_SAMPLE(Gather, axis_1_2d_indices) {
  const ValueId x = s.input(DType::f32, {n, 4});
  const Tensor idx = Tensor::from<int64_t>({2, 2}, {3, 0, 1, -4});
  s.output(s.b.gather(x, s.b.constant("", idx), Attributes{{"axis", int64_t{1}}}));
}

SG_LOWERING_SAMPLE(Gather, table_lookup) {
  const ValueId table = s.b.constant("", random_f32({5, 3}, 1));
  s.output(s.b.gather(table, s.input(DType::i64, {n}, 0, 4)));
}
