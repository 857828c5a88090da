// Slice: hand-computed windows (negative starts/ends, clamping, negative steps, the opset-1
// attribute form), every dtype family, errors, and random windows against xt::strided_view.
#include <limits>
#include <random>
#include <xtensor/xarray.hpp>
#include <xtensor/xstrided_view.hpp>

#include "jit/lowering_samples.h"
#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace test_slice {  // this file's own names (the tests build as unity sources)

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
// Slice(x, starts, ends, axes?, steps?) with i64 index tensors; {} leaves an input out.
Tensor slice(const Tensor& x, Tensor starts, Tensor ends, Tensor axes = {}, Tensor steps = {}) {
  std::vector<Tensor> in{x, std::move(starts), std::move(ends), std::move(axes), std::move(steps)};
  while (!in.back().defined()) in.pop_back();
  return run_op(OpKind::Slice, in)[0];
}
}  // namespace

TEST_CASE("Slice: starts and ends on two axes, f32") {
  // x[3,4] = 0..11; rows 1..2, columns 0..2
  check_close(slice(iota<float>({3, 4}), ints({1, 0}), ints({3, 3})), {2, 3}, {4, 5, 6, 8, 9, 10});
}

TEST_CASE("Slice: axes and steps, odd size, i64") {
  const Tensor x = iota<int64_t>({7});
  check_close(slice(x, ints({1}), ints({7}), ints({0}), ints({2})), {3}, {1, 3, 5});
  check_close(slice(x, ints({0}), ints({7}), ints({0}), ints({3})), {3}, {0, 3, 6});
  // A step larger than the axis keeps only the first element.
  check_close(slice(x, ints({2}), ints({kMax}), ints({0}), ints({kMax})), {1}, {2});
}

TEST_CASE("Slice: negative starts/ends and negative axes") {
  // x[2,3] = [[0,1,2],[3,4,5]]: columns 1 .. -1 -> column 1
  check_close(slice(iota<double>({2, 3}), ints({1}), ints({-1}), ints({-1})), {2, 1}, {1, 4});
  check_close(slice(iota<double>({2, 3}), ints({-2}), ints({3}), ints({1})), {2, 2}, {1, 2, 4, 5});
}

TEST_CASE("Slice: negative steps reverse") {
  const Tensor x = iota<float>({7});
  check_close(slice(x, ints({-1}), ints({kMin}), ints({0}), ints({-1})), {7},
              {6, 5, 4, 3, 2, 1, 0});
  check_close(slice(x, ints({5}), ints({1}), ints({0}), ints({-2})), {2}, {5, 3});
  check_close(slice(x, ints({kMax}), ints({-8}), ints({0}), ints({-3})), {3}, {6, 3, 0});
  // Reversing the columns of [3,2] = [[0,1],[2,3],[4,5]]
  check_close(slice(iota<float>({3, 2}), ints({-1}), ints({kMin}), ints({1}), ints({-1})), {3, 2},
              {1, 0, 3, 2, 5, 4});
  // ONNX clamps a backward start below the axis to 0 (numpy would give an empty result).
  check_close(slice(x, ints({-100}), ints({kMin}), ints({0}), ints({-1})), {1}, {0});
}

TEST_CASE("Slice: out-of-range starts and ends clamp") {
  const Tensor x = iota<float>({5});
  check_close(slice(x, ints({-100}), ints({kMax})), {5}, {0, 1, 2, 3, 4});
  check_close(slice(x, ints({kMin}), ints({2})), {2}, {0, 1});
  check_close(slice(x, ints({10}), ints({20})), {0}, {});
  check_close(slice(x, ints({3}), ints({1})), {0}, {});
}

TEST_CASE("Slice: i32 indices, bool and u8 data") {
  auto i32 = [](std::initializer_list<int32_t> v) {
    return Tensor::from<int32_t>({static_cast<int64_t>(v.size())}, v);
  };
  const Tensor b = Tensor::from<bool>({4}, {true, false, false, true});
  const Tensor y = run_op(OpKind::Slice, {b, i32({1}), i32({4}), i32({0}), i32({2})})[0];
  CHECK(y.dtype() == DType::boolean);
  check_close(y, {2}, {0, 1});
  const Tensor u = slice(iota<uint8_t>({2, 13}, 100), ints({12, 0}), ints({13, 2}), ints({1, 0}));
  CHECK(u.dtype() == DType::u8);
  check_close(u, {2, 1}, {112, 125});
}

TEST_CASE("Slice: opset-1 attribute form") {
  // x[3,4] = 0..11, axes [1]: columns 1..2
  const Attributes attrs{{"starts", Ints{1}}, {"ends", Ints{3}}, {"axes", Ints{1}}};
  check_close(run_op(OpKind::Slice, {iota<float>({3, 4})}, attrs)[0], {3, 2}, {1, 2, 5, 6, 9, 10});
  const Attributes no_axes{{"starts", Ints{2}}, {"ends", Ints{kMax}}};
  check_close(run_op(OpKind::Slice, {iota<float>({3, 4})}, no_axes)[0], {1, 4}, {8, 9, 10, 11});
}

TEST_CASE("Slice: size-1 and zero-size dims") {
  // x[1,0,3]: the empty axis stays empty, axis 2 keeps column 1.
  check_close(slice(Tensor(DType::f32, {1, 0, 3}), ints({1}), ints({2}), ints({2})), {1, 0, 1}, {});
  check_close(slice(Tensor(DType::f32, {0}), ints({-1}), ints({kMin}), ints({0}), ints({-1})), {0},
              {});
  check_close(slice(iota<float>({1, 1, 5}), ints({0, 4}), ints({1, 5}), ints({0, 2})), {1, 1, 1},
              {4});
  check_close(slice(iota<float>({4, 1}), ints({0}), ints({kMax}), ints({0})), iota<float>({4, 1}));
}

TEST_CASE("Slice: output shape is inferred when starts/ends are constants") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {7, 13});
  const ValueId y =
      b.slice(x, b.ints({-1, 2}), b.ints({kMin, 13}), b.ints({0, 1}), b.ints({-2, 3}));
  const ValueId z = b.slice(x, b.input("s", DType::i64, {1}), b.ints({1}));
  const Graph g = b.build();
  CHECK(g.value(y).shape == DimList{4, 4});
  CHECK(!g.value(z).shape.has_value());
}

TEST_CASE("Slice: random windows match xt::strided_view") {
  std::mt19937 rng(3);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 60; ++iter) {
    const Shape shape{pick(1, 6), pick(1, 7), pick(1, 13)};
    const Tensor x = test::random_f32(shape, iter);
    std::vector<int64_t> starts, ends, axes, steps;
    xt::xstrided_slice_vector sv(3, xt::all());
    for (int64_t a = 0; a < 3; ++a) {
      if (pick(0, 3) == 0) continue;  // leave this axis whole
      const int64_t dim = shape[a];
      int64_t step = pick(-3, 3);
      if (step == 0) step = 1;
      // Backward starts below -dim are where ONNX (clamp to 0) and numpy (empty) differ; empty
      // windows are tested by hand above (xtensor 0.24 gives them a negative size).
      int64_t start, end;
      do {
        start = pick(step > 0 ? -dim - 2 : -dim, dim + 2);
        end = pick(-dim - 2, dim + 2);
      } while (xt::range(start, end, step).get(size_t(dim)).size() < 1);
      starts.push_back(start);
      ends.push_back(end);
      axes.push_back(a - (iter % 2) * 3);  // also negative axes
      steps.push_back(step);
      sv[a] = xt::range(std::ptrdiff_t(start), std::ptrdiff_t(end), std::ptrdiff_t(step));
    }
    const Tensor got = slice(x, ints(starts), ints(ends), ints(axes), ints(steps));
    const xt::xarray<float> want = xt::strided_view(to_xt<float>(x), sv);
    check_xt(got, want, 0, 0);
  }
}

TEST_CASE("Slice: errors") {
  const Tensor x = iota<float>({3, 4});
  CHECK(contains(op_error(OpKind::Slice, {x, ints({0}), ints({1}), ints({0}), ints({0})}),
                 "Slice step for axis 0 is 0"));
  CHECK(contains(op_error(OpKind::Slice, {x, ints({0, 0}), ints({1, 1}), ints({1, -1})}),
                 "Slice axis -1 is repeated"));
  CHECK(contains(op_error(OpKind::Slice, {x, ints({0}), ints({1}), ints({2})}),
                 "Slice axis 2 is out of range for rank 2"));
  // Found by fuzz_onnx_run: a scalar input with axes [0] read past a rank-0 table.
  CHECK(contains(op_error(OpKind::Slice, {Tensor::scalar(1.0f), ints({0}), ints({1}), ints({0})}),
                 "Slice axis 0 is out of range for rank 0"));
  CHECK(contains(op_error(OpKind::Slice, {x, ints({0, 0}), ints({1})}),
                 "as many ends, axes and steps"));
  CHECK(contains(op_error(OpKind::Slice, {x, Tensor::from<float>({1}, {0}), ints({1})}),
                 "expected one of"));
  CHECK(contains(op_error(OpKind::Slice, {x}), "missing required attribute 'starts'"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(Slice, steps) {
  const ValueId x = s.input(DType::f32, {n, 5});
  s.output(s.b.slice(x, s.b.ints({0, 1}), s.b.ints({n, 5}), s.b.ints({0, 1}), s.b.ints({2, 2})));
}

SG_LOWERING_SAMPLE(Slice, negative_step) {
  const ValueId x = s.input(DType::f32, {n, 5});
  s.output(
      s.b.slice(x, s.b.ints({-1, -2}), s.b.ints({kMin, 0}), s.b.ints({0, 1}), s.b.ints({-1, -2})));
}

// Ranges written without n, as exported models write them: from a start to the end (INT64_MAX),
// to D - 2, the last element alone; and a static dim sliced with a step beside them.
SG_LOWERING_SAMPLE(Slice, open_ended) {
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  const ValueId x = s.input(DType::f32, {3, n + 3, 6});
  s.output(s.b.slice(x, s.b.ints({1, 1}), s.b.ints({kEnd, 6}), s.b.ints({1, 2}), s.b.ints({1, 2})));
  s.output(s.b.slice(x, s.b.ints({0}), s.b.ints({-2}), s.b.ints({1})));
  s.output(s.b.slice(x, s.b.ints({-1}), s.b.ints({kEnd}), s.b.ints({1})));
}

// Static lengths from a symbolic dim: the first 3 (needs the dim >= 3), the last 2 of it (>= 2).
SG_LOWERING_SAMPLE(Slice, static_lengths) {
  const ValueId x = s.input(DType::f32, {n + 1, 4});
  s.output(s.b.slice(x, s.b.ints({0}), s.b.ints({3}), s.b.ints({0})));
  s.output(
      s.b.slice(x, s.b.ints({-2}), s.b.ints({std::numeric_limits<int64_t>::max()}), s.b.ints({0})));
}

}  // namespace test_slice
