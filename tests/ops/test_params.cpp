// The parameter decoders of src/ops/params.h against hand-computed values: Slice (negative
// starts and steps, clamping, the opset-1 attributes), Pad (negative pads, axes, the opset-2
// value), reduction axes (negative axes, noop_with_empty_axes), Gemm and Transpose defaults, and
// each error a user can trigger (thrown without node context).
#include <limits>

#include "ops/params.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;
using ops::SliceAxis;

namespace test_params {  // this file's own names (the tests build as unity sources)

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Node node(OpKind op, Attributes attrs = {}) { return Node{op, "n", {}, {}, std::move(attrs)}; }

// slice_params with the opset-10 inputs; {} leaves axes or steps out.
std::vector<SliceAxis> slice(const Shape& in, const Tensor& starts, const Tensor& ends,
                             const Tensor& axes = {}, const Tensor& steps = {}) {
  return ops::slice_params(node(OpKind::Slice), in, &starts, &ends,
                           axes.defined() ? &axes : nullptr, steps.defined() ? &steps : nullptr);
}

void check_axis(const SliceAxis& a, int64_t start, int64_t step, int64_t count) {
  CHECK(a.start == start);
  CHECK(a.step == step);
  CHECK(a.count == count);
}

template <class F>
std::string check_error(F&& f, std::string_view want) {
  const std::string e = error_of(std::forward<F>(f));
  CHECK_MESSAGE(contains(e, want), e);
  CHECK_MESSAGE(!contains(e, "node '"), e);  // no node context: the caller adds it
  return e;
}
}  // namespace

TEST_CASE("slice_params: inputs, dims not sliced keep start 0 step 1 count dim") {
  const auto r = slice({5, 4}, ints({1}), ints({4}), ints({0}));
  REQUIRE(r.size() == 2);
  check_axis(r[0], 1, 1, 3);
  check_axis(r[1], 0, 1, 4);
  // Without axes, starts go to the leading dims.
  const auto r2 = slice({5, 4}, ints({1, 1}), ints({5, 3}));
  check_axis(r2[0], 1, 1, 4);
  check_axis(r2[1], 1, 1, 2);
}

TEST_CASE("slice_params: negative starts, ends and axes") {
  // axis -1 of [5, 4]: start -3 -> 1, end -1 -> 3
  const auto r = slice({5, 4}, ints({-3}), ints({-1}), ints({-1}));
  check_axis(r[0], 0, 1, 5);
  check_axis(r[1], 1, 1, 2);
}

TEST_CASE("slice_params: negative steps") {
  check_axis(slice({7}, ints({5}), ints({1}), ints({0}), ints({-2}))[0], 5, -2, 2);  // 5, 3
  check_axis(slice({7}, ints({-1}), ints({kMin}), ints({0}), ints({-1}))[0], 6, -1, 7);
  // start kMax clamps to 6, end -8 + 7 = -1 (past element 0): 6, 3, 0
  check_axis(slice({7}, ints({kMax}), ints({-8}), ints({0}), ints({-3}))[0], 6, -3, 3);
}

TEST_CASE("slice_params: clamping") {
  check_axis(slice({5}, ints({-100}), ints({kMax}))[0], 0, 1, 5);
  check_axis(slice({5}, ints({kMin}), ints({2}))[0], 0, 1, 2);
  // Forward start clamps to dim: nothing read.
  check_axis(slice({5}, ints({10}), ints({20}))[0], 5, 1, 0);
  // Backward start below the axis clamps to 0: one element, so step 1.
  check_axis(slice({7}, ints({-100}), ints({kMin}), ints({0}), ints({-1}))[0], 0, 1, 1);
  // A step larger than the axis reads one element.
  check_axis(slice({7}, ints({2}), ints({kMax}), ints({0}), ints({kMax}))[0], 2, 1, 1);
  check_axis(slice({7}, ints({2}), ints({kMin}), ints({0}), ints({kMin}))[0], 2, 1, 1);
  // Empty dims: nothing read, start in [0, dim].
  check_axis(slice({0}, ints({0}), ints({kMin}), ints({0}), ints({-1}))[0], 0, 1, 0);
  check_axis(slice({0}, ints({-5}), ints({5}))[0], 0, 1, 0);
  // start after end, forward: nothing read.
  check_axis(slice({6}, ints({4}), ints({2}))[0], 4, 1, 0);
}

TEST_CASE("slice_params: opset-1 attributes") {
  const Node n =
      node(OpKind::Slice, {{"starts", Ints{1, 0}}, {"ends", Ints{3, -1}}, {"axes", Ints{1, 0}}});
  const auto r = ops::slice_params(n, {4, 6}, nullptr, nullptr, nullptr, nullptr);
  check_axis(r[0], 0, 1, 3);
  check_axis(r[1], 1, 1, 2);
  const Node no_axes = node(OpKind::Slice, {{"starts", Ints{2}}, {"ends", Ints{100}}});
  const auto r2 = ops::slice_params(no_axes, {4, 6}, nullptr, nullptr, nullptr, nullptr);
  check_axis(r2[0], 2, 1, 2);
  check_axis(r2[1], 0, 1, 6);
}

TEST_CASE("slice_params: errors") {
  check_error([] { slice({5}, ints({0}), ints({5}), ints({0}), ints({0})); },
              "Slice step for axis 0 is 0");
  check_error(
      [] {
        slice({5, 4}, ints({0, 0}), ints({1}));
      },
      "Slice needs as many ends, axes and steps as starts (2), got 1, 2 and 2");
  check_error(
      [] {
        slice({5, 4}, ints({0}), ints({1}), ints({0}), ints({1, 1}));
      },
      "Slice needs as many ends, axes and steps as starts (1)");
  check_error(
      [] {
        slice({5, 4}, ints({0}), ints({1}), ints({2}));
      },
      "Slice axis 2 is out of range for rank 2");
  check_error(
      [] {
        slice({5, 4}, ints({0}), ints({1}), ints({-3}));
      },
      "Slice axis -3 is out of range for rank 2");
  check_error(
      [] {
        slice({5, 4}, ints({0, 0}), ints({1, 1}), ints({0, -2}));
      },
      "Slice axis -2 is repeated");
  const Tensor starts = ints({0});
  check_error(
      [&] { ops::slice_params(node(OpKind::Slice), {5}, &starts, nullptr, nullptr, nullptr); },
      "Slice has a starts input but no ends input");
}

TEST_CASE("pad_params: attributes, negative pads and the opset-2 value") {
  const Node n = node(OpKind::Pad, {{"pads", Ints{1, -1, 2, 0}}, {"value", 1.5}});
  const ops::PadParams p = ops::pad_params(n, 2, nullptr, nullptr);
  CHECK(p.mode == ops::PadMode::constant);
  CHECK(p.begin == Ints{1, -1});
  CHECK(p.end == Ints{2, 0});
  CHECK(p.value == 1.5);
}

TEST_CASE("pad_params: pads and axes inputs, negative axes") {
  // The value attribute goes with the pads attribute: with a pads input it is 0.
  const Node n = node(OpKind::Pad, {{"mode", std::string("reflect")}, {"value", 7.0}});
  const Tensor pads = ints({2, -1}), axes = ints({-1});
  const ops::PadParams p = ops::pad_params(n, 3, &pads, &axes);
  CHECK(p.mode == ops::PadMode::reflect);
  CHECK(p.begin == Ints{0, 0, 2});
  CHECK(p.end == Ints{0, 0, -1});
  CHECK(p.value == 0.0);
  // Axes in any order: pads are [begins..., ends...] in the axes' order.
  const Tensor pads2 = ints({1, 2, 3, 4}), axes2 = ints({2, 0});
  const ops::PadParams q = ops::pad_params(node(OpKind::Pad), 3, &pads2, &axes2);
  CHECK(q.begin == Ints{2, 0, 1});
  CHECK(q.end == Ints{4, 0, 3});
  // Rank 0: no pads.
  const Tensor none = ints({});
  CHECK(ops::pad_params(node(OpKind::Pad), 0, &none, nullptr).begin.empty());
}

TEST_CASE("pad_mode: the known modes") {
  CHECK(ops::pad_mode(node(OpKind::Pad)) == ops::PadMode::constant);
  CHECK(ops::pad_mode(node(OpKind::Pad, {{"mode", std::string("edge")}})) == ops::PadMode::edge);
  CHECK(ops::pad_mode(node(OpKind::Pad, {{"mode", std::string("reflect")}})) ==
        ops::PadMode::reflect);
  CHECK(!ops::pad_mode(node(OpKind::Pad, {{"mode", std::string("wrap")}})).has_value());
}

TEST_CASE("pad_params: errors") {
  const Tensor two = ints({1, 1}), axes_bad = ints({2}), axes_rep = ints({0, -2});
  const Tensor four = ints({1, 1, 1, 1});
  check_error([&] { ops::pad_params(node(OpKind::Pad), 2, &two, nullptr); },
              "pads has 2 values but needs 4 (begin and end for 2 axes) for an input of rank 2");
  check_error([&] { ops::pad_params(node(OpKind::Pad), 2, &two, &axes_bad); },
              "Pad axis 2 is out of range for rank 2");
  check_error([&] { ops::pad_params(node(OpKind::Pad), 2, &four, &axes_rep); },
              "Pad axis 0 is repeated");
  check_error(
      [&] {
        ops::pad_params(node(OpKind::Pad, {{"mode", std::string("wrap")}}), 2, &four, nullptr);
      },
      "unknown Pad mode 'wrap' (expected constant, reflect or edge)");
}

TEST_CASE("reduced_dims: attribute and input axes, negative axes") {
  using B = std::vector<bool>;
  const Node attr = node(OpKind::ReduceSum, {{"axes", Ints{-1}}});
  CHECK(ops::reduced_dims(attr, 3, nullptr) == B{false, false, true});
  const Tensor axes = ints({0, -1});
  CHECK(ops::reduced_dims(attr, 3, &axes) == B{true, false, true});  // the input wins
  CHECK(ops::reduced_dims(node(OpKind::ReduceMax), 3, &axes) == B{true, false, true});
}

TEST_CASE("reduced_dims: empty axes and noop_with_empty_axes") {
  using B = std::vector<bool>;
  const Node all = node(OpKind::ReduceMean);
  const Node noop = node(OpKind::ReduceMean, {{"noop_with_empty_axes", int64_t{1}}});
  const Tensor empty = ints({}), one = ints({1});
  CHECK(ops::reduced_dims(all, 2, nullptr) == B{true, true});
  CHECK(ops::reduced_dims(all, 2, &empty) == B{true, true});
  CHECK(ops::reduced_dims(noop, 2, nullptr) == B{false, false});
  CHECK(ops::reduced_dims(noop, 2, &empty) == B{false, false});
  CHECK(ops::reduced_dims(noop, 2, &one) == B{false, true});
  CHECK(ops::reduced_dims(all, 0, nullptr).empty());
}

TEST_CASE("reduced_dims: errors") {
  const Node n = node(OpKind::ReduceSum);
  const Tensor twice = ints({1, -2}), out = ints({3}), zero = ints({0});
  const Tensor matrix = Tensor::from<int64_t>({1, 2}, {0, 1});
  check_error([&] { ops::reduced_dims(n, 3, &twice); }, "axis -2 appears twice in axes");
  check_error([&] { ops::reduced_dims(n, 3, &out); }, "axis 3 is out of range for rank 3");
  check_error([&] { ops::reduced_dims(n, 0, &zero); }, "axis 0 is out of range for rank 0");
  check_error([&] { ops::reduced_dims(n, 3, &matrix); }, "axes input must be 1-D");
}

TEST_CASE("gemm_params: defaults and attributes") {
  const ops::GemmParams d = ops::gemm_params(node(OpKind::Gemm));
  CHECK(!d.trans_a);
  CHECK(!d.trans_b);
  CHECK(d.alpha == 1.0);
  CHECK(d.beta == 1.0);
  const ops::GemmParams p = ops::gemm_params(
      node(OpKind::Gemm,
           {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 0.0}}));
  CHECK(p.trans_a);
  CHECK(p.trans_b);
  CHECK(p.alpha == 0.5);
  CHECK(p.beta == 0.0);
}

TEST_CASE("transpose_perm: default, given, errors") {
  CHECK(ops::transpose_perm(node(OpKind::Transpose), 3) == Ints{2, 1, 0});
  CHECK(ops::transpose_perm(node(OpKind::Transpose), 0).empty());
  const Node n = node(OpKind::Transpose, {{"perm", Ints{0, 2, 1}}});
  CHECK(ops::transpose_perm(n, 3) == Ints{0, 2, 1});
  check_error([&] { ops::transpose_perm(n, 2); }, "perm [0,2,1] is not a permutation of 0..1");
  check_error(
      [] {
        ops::transpose_perm(node(OpKind::Transpose, {{"perm", Ints{0, 0, 1}}}), 3);
      },
      "is not a permutation of 0..2");
}

TEST_CASE("op_axis: each op's default, negative axes, errors") {
  CHECK(ops::op_axis(node(OpKind::Softmax), 3) == 2);
  CHECK(ops::op_axis(node(OpKind::LayerNormalization), 2) == 1);
  CHECK(ops::op_axis(node(OpKind::Gather), 3) == 0);
  CHECK(ops::op_axis(node(OpKind::Split), 3) == 0);
  CHECK(ops::op_axis(node(OpKind::ArgMin), 3) == 0);
  CHECK(ops::op_axis(node(OpKind::Concat, axis(-2)), 3) == 1);
  CHECK(ops::op_axis(node(OpKind::LogSoftmax, axis(1)), 3) == 1);
  check_error([] { ops::op_axis(node(OpKind::Softmax, axis(3)), 3); },
              "axis 3 is out of range for rank 3");
  check_error([] { ops::op_axis(node(OpKind::Gather, axis(-4)), 3); },
              "axis -4 is out of range for rank 3");
  CHECK(!error_of([] { ops::op_axis(node(OpKind::Concat), 3); }).empty());  // axis is required
}

}  // namespace test_params
