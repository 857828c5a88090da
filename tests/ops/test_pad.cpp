// Pad: hand-computed constant/reflect/edge padding, negative pads (crop), the axes input and the
// opset-2 attribute form, every dtype family, errors, and random pads against an xtensor
// reference built from strided views and xt::concatenate.
#include <random>
#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xstrided_view.hpp>

#include "jit/lowering_samples.h"
#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
Attributes mode(const char* m) { return {{"mode", std::string(m)}}; }
}  // namespace

TEST_CASE("Pad: constant mode, default zero and a constant_value input") {
  // [[1,2],[3,4]], pads [x1_begin=0, x2_begin=1, x1_end=1, x2_end=0]
  const Tensor x = Tensor::from<float>({2, 2}, {1, 2, 3, 4});
  check_close(run_op(OpKind::Pad, {x, ints({0, 1, 1, 0})})[0], {3, 3}, {0, 1, 2, 0, 3, 4, 0, 0, 0});
  check_close(
      run_op(OpKind::Pad, {x, ints({0, 1, 1, 0}), Tensor::scalar(9.0f)}, mode("constant"))[0],
      {3, 3}, {9, 1, 2, 9, 3, 4, 9, 9, 9});
}

TEST_CASE("Pad: reflect mode") {
  check_close(
      run_op(OpKind::Pad, {Tensor::from<double>({3}, {1, 2, 3}), ints({2, 2})}, mode("reflect"))[0],
      {7}, {3, 2, 1, 2, 3, 2, 1});
  // [[1,1.2],[2.3,3.4],[4.5,5.7]] with one column of reflection each side
  const Tensor x = Tensor::from<float>({3, 2}, {1, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  check_close(run_op(OpKind::Pad, {x, ints({0, 1, 0, 1})}, mode("reflect"))[0], {3, 4},
              {1.2, 1, 1.2, 1, 3.4, 2.3, 3.4, 2.3, 5.7, 4.5, 5.7, 4.5});
  // Both axes: [[0,1,2],[3,4,5]] padded by one row above and one column left
  check_close(run_op(OpKind::Pad, {iota<float>({2, 3}), ints({1, 1, 0, 0})}, mode("reflect"))[0],
              {3, 4}, {4, 3, 4, 5, 1, 0, 1, 2, 4, 3, 4, 5});
}

TEST_CASE("Pad: edge mode, u8") {
  // The ONNX example: two columns of edge values on the left.
  const Tensor x = Tensor::from<float>({3, 2}, {1, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  check_close(run_op(OpKind::Pad, {x, ints({0, 2, 0, 0})}, mode("edge"))[0], {3, 4},
              {1, 1, 1, 1.2, 2.3, 2.3, 2.3, 3.4, 4.5, 4.5, 4.5, 5.7});
  const Tensor u = run_op(OpKind::Pad, {Tensor::from<uint8_t>({1, 1}, {200}), ints({1, 0, 0, 2})},
                          mode("edge"))[0];
  CHECK(u.dtype() == DType::u8);
  check_close(u, {2, 3}, {200, 200, 200, 200, 200, 200});
}

TEST_CASE("Pad: negative pads crop first, in every mode") {
  const Tensor x = Tensor::from<float>({5}, {1, 2, 3, 4, 5});
  check_close(run_op(OpKind::Pad, {x, ints({-1, 2})})[0], {6}, {2, 3, 4, 5, 0, 0});
  check_close(run_op(OpKind::Pad, {x, ints({-1, 2})}, mode("reflect"))[0], {6}, {2, 3, 4, 5, 4, 3});
  check_close(run_op(OpKind::Pad, {x, ints({1, -2})}, mode("edge"))[0], {4}, {1, 1, 2, 3});
  check_close(run_op(OpKind::Pad, {x, ints({-2, -3})})[0], {0}, {});
  // [2,3] = [[0,1,2],[3,4,5]]: drop row 0, drop the last column, add a column of 7 on the left
  check_close(
      run_op(OpKind::Pad, {iota<float>({2, 3}), ints({-1, 1, 0, -1}), Tensor::scalar(7.0f)})[0],
      {1, 3}, {7, 3, 4});
}

TEST_CASE("Pad: axes input (opset 18) and the opset-2 attribute form") {
  // [2,3] = 1..6, one zero column each side of axis -1
  check_close(run_op(OpKind::Pad, {iota<float>({2, 3}, 1), ints({1, 1}), {}, ints({-1})})[0],
              {2, 5}, {0, 1, 2, 3, 0, 0, 4, 5, 6, 0});
  check_close(run_op(OpKind::Pad,
                     {iota<float>({2, 3}, 1), ints({0, 1}), Tensor::scalar(-1.0f), ints({0})})[0],
              {3, 3}, {1, 2, 3, 4, 5, 6, -1, -1, -1});
  const Attributes v2{{"pads", Ints{1, 0, 0, 1}}, {"value", 1.5}};
  check_close(run_op(OpKind::Pad, {iota<double>({1, 2})}, v2)[0], {2, 3},
              {1.5, 1.5, 1.5, 0, 1, 1.5});
  // The attribute value saturates to an integer input's range (a C++ cast of 300 to u8 is
  // undefined behaviour; the compiled form is checked against this by the sample below).
  check_close(
      run_op(OpKind::Pad, {iota<uint8_t>({2})}, {{"pads", Ints{1, 1}}, {"value", 300.0}})[0], {4},
      {255, 0, 1, 255});
  check_close(
      run_op(OpKind::Pad, {iota<int32_t>({1})}, {{"pads", Ints{0, 1}}, {"value", -1e30}})[0], {2},
      {0, -2147483648.0});
  const Attributes v2_edge{{"pads", Ints{2, 0}}, {"mode", std::string("edge")}};
  check_close(run_op(OpKind::Pad, {iota<float>({2}, 4)}, v2_edge)[0], {4}, {4, 4, 4, 5});
}

TEST_CASE("Pad: i64 and bool constants, zero-size and scalar inputs, static shape") {
  const Tensor y =
      run_op(OpKind::Pad, {iota<int64_t>({7}), ints({1, 0}), Tensor::scalar<int64_t>(-5)})[0];
  CHECK(y.dtype() == DType::i64);
  check_close(y, {8}, {-5, 0, 1, 2, 3, 4, 5, 6});
  const Tensor b = run_op(
      OpKind::Pad, {Tensor::from<bool>({2}, {false, true}), ints({0, 1}), Tensor::scalar(true)})[0];
  check_close(b, {3}, {0, 1, 1});
  check_close(
      run_op(OpKind::Pad, {Tensor(DType::f32, {0, 3}), ints({1, 0, 1, 0}), Tensor::scalar(2.f)})[0],
      {2, 3}, {2, 2, 2, 2, 2, 2});
  check_close(
      run_op(OpKind::Pad, {Tensor(DType::f32, {2, 0}), ints({0, 0, 0, 0})}, mode("reflect"))[0],
      {2, 0}, {});
  check_close(run_op(OpKind::Pad, {Tensor::scalar(3.0f), ints({})})[0], {}, {3});
  GraphBuilder gb;
  const ValueId v = gb.pad(gb.input("x", DType::f32, {7, 13}), gb.ints({1, -2, 3, 4}));
  CHECK(gb.build().value(v).shape == DimList{11, 15});
}

namespace {
using Xf = xt::xarray<float>;
// The part `r` of `a` along `axis`, materialised.
Xf take(const Xf& a, size_t axis, xt::xstrided_slice<std::ptrdiff_t> r) {
  xt::xstrided_slice_vector sv(a.dimension(), xt::all());
  sv[axis] = r;
  return xt::strided_view(a, sv);
}
// An independent reference: crop negative pads with a strided view, then per axis concatenate
// the padding blocks (a constant block, mirrored ranges, or repeated edge slices) around it.
// (xt::pad would be the obvious choice, but in xtensor 0.24.3 assigning into its strided view
// goes through a rank-4 temporary and returns garbage.)
Xf reference_pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& m, float c) {
  using std::ptrdiff_t;
  const size_t rank = static_cast<size_t>(x.rank());
  Xf a = to_xt<float>(x);
  for (size_t d = 0; d < rank; ++d) {
    const ptrdiff_t b = pads[d], e = pads[d + rank];
    a = take(
        a, d,
        xt::range(std::max<ptrdiff_t>(-b, 0), ptrdiff_t(a.shape(d)) - std::max<ptrdiff_t>(-e, 0)));
    const ptrdiff_t n = ptrdiff_t(a.shape(d)), nb = std::max<ptrdiff_t>(b, 0),
                    ne = std::max<ptrdiff_t>(e, 0);
    Xf left = take(a, d, xt::range(0, 0)), right = left;
    if (m == "constant") {
      auto shape = a.shape();
      shape[d] = size_t(nb);
      left = Xf::from_shape(shape);
      left.fill(c);
      shape[d] = size_t(ne);
      right = Xf::from_shape(shape);
      right.fill(c);
    } else if (m == "reflect") {
      if (nb > 0) left = take(a, d, xt::range(nb, ptrdiff_t(0), ptrdiff_t(-1)));
      if (ne > 0 && n - 2 - ne >= 0)
        right = take(a, d, xt::range(n - 2, n - 2 - ne, ptrdiff_t(-1)));
      if (ne > 0 && n - 2 - ne < 0)
        right = take(a, d, xt::range(n - 2, xt::placeholders::_, ptrdiff_t(-1)));
    } else {
      const Xf first = take(a, d, xt::range(0, 1)), last = take(a, d, xt::range(n - 1, n));
      for (ptrdiff_t k = 0; k < nb; ++k) {
        Xf grown = xt::concatenate(xt::xtuple(left, first), d);
        left = std::move(grown);
      }
      for (ptrdiff_t k = 0; k < ne; ++k) {
        Xf grown = xt::concatenate(xt::xtuple(right, last), d);
        right = std::move(grown);
      }
    }
    Xf next = xt::concatenate(xt::xtuple(left, a, right), d);
    a = std::move(next);
  }
  return a;
}
}  // namespace

TEST_CASE("Pad: random pads match the xtensor reference (constant, reflect, edge)") {
  std::mt19937 rng(17);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (const char* m : {"constant", "reflect", "edge"}) {
    for (const Shape& shape : {Shape{7, 13}, Shape{3, 5, 7}, Shape{1, 4, 2}}) {
      for (int iter = 0; iter < 4; ++iter) {
        const int64_t rank = static_cast<int64_t>(shape.size());
        std::vector<int64_t> pads(2 * rank);
        for (int64_t d = 0; d < rank; ++d) {
          // Crop at most 1 from each side; reflect needs pads below the cropped size.
          const int64_t b = pick(shape[d] > 2 ? -1 : 0, 3), e = pick(shape[d] > 2 ? -1 : 0, 3);
          const int64_t kept = shape[d] - std::max<int64_t>(-b, 0) - std::max<int64_t>(-e, 0);
          const bool ok =
              std::string(m) != "reflect" || std::max(b, e) < std::max<int64_t>(kept, 1);
          pads[d] = ok ? b : std::min<int64_t>(b, 0);
          pads[d + rank] = ok ? e : std::min<int64_t>(e, 0);
        }
        const Tensor x = test::random_f32(shape, iter);
        const Tensor got = run_op(OpKind::Pad, {x, ints(pads), Tensor::scalar(0.5f)}, mode(m))[0];
        const Xf want = reference_pad(x, pads, m, 0.5f);
        check_xt(got, want, 0, 0);
      }
    }
  }
}

TEST_CASE("Pad: errors") {
  const Tensor x = iota<float>({2, 3});
  CHECK(contains(op_error(OpKind::Pad, {x, ints({1, 1})}), "pads has 2 values but needs 4"));
  CHECK(contains(op_error(OpKind::Pad, {x, ints({0, 3, 0, 0})}, mode("reflect")),
                 "reflect pads 3, 0 on axis 1 must be smaller than its size 3"));
  CHECK(
      contains(op_error(OpKind::Pad, {x, ints({2, 0, 0, 0})}, mode("reflect")), "must be smaller"));
  CHECK(contains(op_error(OpKind::Pad, {x, ints({0, 1, 0, 1})}, mode("wrap")),
                 "unknown Pad mode 'wrap'"));
  CHECK(contains(op_error(OpKind::Pad, {x, ints({0, -2, 0, -2})}),
                 "crop more than axis 1 of size 3"));
  CHECK(contains(op_error(OpKind::Pad, {Tensor(DType::f32, {0}), ints({1, 0})}, mode("edge")),
                 "empty"));
  CHECK(
      contains(op_error(OpKind::Pad, {x, ints({0, 0, 0, 0}), Tensor::scalar(1.0)}), "same dtype"));
  CHECK(contains(op_error(OpKind::Pad, {x, ints({0, 0, 0, 0}), {}, ints({1, -1})}),
                 "Pad axis 1 is repeated"));
}

TEST_CASE("Pad: huge pads are sized without tables, an empty output with a huge dim runs") {
  // Found by fuzz_onnx_load: constant pads of 2^51 made the shape rule, run at load, build a
  // 2^51-entry index table for the padded axis.
  const int64_t huge = int64_t{1} << 51;
  GraphBuilder gb;
  const ValueId v = gb.pad(gb.input("x", DType::f32, {2, 3}), gb.ints({0, huge, 0, 0}));
  CHECK(gb.build().value(v).shape == DimList{2, huge + 3});
  // Nothing to write: the kernel must not build the padded axis's table either.
  const Tensor y = run_op(OpKind::Pad, {Tensor(DType::f32, {0, 3}), ints({0, huge, 0, 0})}, {}, 1,
                          {false, true})[0];
  CHECK(y.shape() == Shape{0, huge + 3});
  // A scalar has no axis 0 (the axes input indexed a table of rank 0 entries).
  CHECK(contains(op_error(OpKind::Pad, {Tensor::scalar(1.0f), ints({1, 1}), {}, ints({0})}),
                 "Pad axis 0 is out of range for rank 0"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(Pad, constant_value) {
  const ValueId x = s.input(DType::f32, {n, 3});
  s.output(s.b.pad(x, s.b.ints({1, 0, 0, 2}), s.b.scalar(0.5f)));
}

SG_LOWERING_SAMPLE(Pad, reflect) {
  const ValueId x = s.input(DType::f32, {n, 3});
  s.output(s.b.pad(x, s.b.ints({0, 2, 0, 1}), Attributes{{"mode", std::string("reflect")}}));
}

SG_LOWERING_SAMPLE(Pad, edge_and_crop) {
  const ValueId x = s.input(DType::f32, {n, 3});
  s.output(s.b.pad(x, s.b.ints({2, 1, 1, -1}), Attributes{{"mode", std::string("edge")}}));
}

// Reflect padding along a dim of n (the dynamic kernel needs that dim above both pads).
SG_LOWERING_SAMPLE(Pad, reflect_rows) {
  const ValueId x = s.input(DType::f32, {n + 2, 3});
  s.output(s.b.pad(x, s.b.ints({2, 0, 1, 0}), Attributes{{"mode", std::string("reflect")}}));
}

SG_LOWERING_SAMPLE(Pad, attribute_value_saturates) {
  const ValueId x = s.input(DType::u8, {n, 2}, 0, 200);
  s.output(s.b.node(OpKind::Pad, {x}, {{"pads", Ints{0, 1, 1, 0}}, {"value", 1e10}})[0]);
}
