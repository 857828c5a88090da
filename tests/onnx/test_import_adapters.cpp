// ONNX import of older op versions: each adapter (Softmax and Hardmax before 13, Clip-6, Slice-1,
// Pad-2, axes as attributes, Upsample-7/9, Resize-10, Dropout) against hand-computed values, next
// to the current version of the same op.
#include <cmath>

#include "onnx/proto_builder.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("ONNX import: Softmax and LogSoftmax before opset 13 coerce the input to 2-D") {
  const Tensor x = iota<float>({2, 2, 3});  // x[b,i,k] = 6b + 3i + k
  // Opset 11, axis 1: softmax over the 6 values of each batch, which are 6b + j, j = 0..5.
  double s6 = 0;
  for (int j = 0; j < 6; ++j) s6 += std::exp(j);
  std::vector<double> soft11, logsoft11;
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 6; ++j) {
      soft11.push_back(std::exp(j) / s6);
      logsoft11.push_back(j - std::log(s6));
    }
  // Opset 13, axis 1: softmax over i only; the two values differ by 3.
  const double s2 = 1 + std::exp(3.0);
  std::vector<double> soft13, logsoft13;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 3; ++k) {
        soft13.push_back(std::exp(3.0 * i) / s2);
        logsoft13.push_back(3.0 * i - std::log(s2));
      }

  const auto axis1 = int_attr("axis", 1);
  check_close(run_node(11, make_node("Softmax", {"x"}, {"y"}, {axis1}), {x})[0], {2, 2, 3}, soft11);
  check_close(run_node(11, make_node("Softmax", {"x"}, {"y"}), {x})[0], {2, 2, 3}, soft11);
  check_close(run_node(11, make_node("LogSoftmax", {"x"}, {"y"}, {axis1}), {x})[0], {2, 2, 3},
              logsoft11);
  check_close(run_node(13, make_node("Softmax", {"x"}, {"y"}, {axis1}), {x})[0], {2, 2, 3}, soft13);
  check_close(run_node(13, make_node("LogSoftmax", {"x"}, {"y"}, {axis1}), {x})[0], {2, 2, 3},
              logsoft13);

  // The adapted graph keeps the ONNX output name and the input's shape.
  const Graph g = load(make_model(11, {make_node("Softmax", {"x"}, {"y"}, {axis1}, "sm")},
                                  {value_info("x", x)}, {"y"}));
  REQUIRE(g.outputs.size() == 1);
  CHECK(g.value(g.outputs[0]).name == "y");
  CHECK(g.value(g.outputs[0]).dtype == DType::f32);
}

TEST_CASE("ONNX import: Hardmax before opset 13 coerces the input to 2-D") {
  const Tensor x = iota<float>({2, 2, 3});  // x[b,i,k] = 6b + 3i + k
  // Opset 11 (axis 1 by default): one max over each batch's 6 values, the last; opset 13, axis 1:
  // one per (b, k) over i, at i = 1.
  const std::vector<double> hard11 = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1};
  const std::vector<double> hard13 = {0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1};
  const auto axis1 = int_attr("axis", 1);
  check_close(run_node(11, make_node("Hardmax", {"x"}, {"y"}), {x})[0], {2, 2, 3}, hard11);
  check_close(run_node(11, make_node("Hardmax", {"x"}, {"y"}, {axis1}), {x})[0], {2, 2, 3}, hard11);
  check_close(run_node(13, make_node("Hardmax", {"x"}, {"y"}, {axis1}), {x})[0], {2, 2, 3}, hard13);
}

TEST_CASE("ONNX import: Clip-6 bounds as attributes, Clip-11 bounds as inputs") {
  const Tensor x = f32({5}, {-3, -0.5f, 0, 1.5f, 4});
  const std::vector<double> both = {-1, -0.5, 0, 1.5, 2}, only_max = {-3, -0.5, 0, 1, 1};
  check_close(
      run_node(6, make_node("Clip", {"x"}, {"y"}, {float_attr("min", -1), float_attr("max", 2)}),
               {x})[0],
      {5}, both);
  check_close(run_node(10, make_node("Clip", {"x"}, {"y"}, {float_attr("max", 1)}), {x})[0], {5},
              only_max);
  // The attribute bounds take the input's dtype.
  const Tensor xd = Tensor::from<double>({3}, {-2, 0.25, 7});
  const Tensor yd = run_node(10, make_node("Clip", {"x"}, {"y"}, {float_attr("min", 0)}), {xd})[0];
  CHECK(yd.dtype() == DType::f64);
  check_close(yd, {3}, {0, 0.25, 7});

  // An integer input: the default bounds (+-inf) and out-of-range ones saturate to its range
  // (found by fuzz_onnx_load: a C++ cast of -inf to int8 is undefined behaviour).
  const Tensor xi = Tensor::from<int8_t>({3}, {-128, 5, 127});
  const Tensor yi = run_node(6, make_node("Clip", {"x"}, {"y"}, {}), {xi})[0];
  CHECK(yi.dtype() == DType::i8);
  check_close(yi, {3}, {-128, 5, 127});
  check_close(
      run_node(6, make_node("Clip", {"x"}, {"y"}, {float_attr("min", -1e9f), float_attr("max", 4)}),
               {xi})[0],
      {3}, {-128, 4, 4});

  const onnx::TensorProto lo = make_tensor("lo", Tensor::scalar(-1.0f));
  const onnx::TensorProto hi = make_tensor("hi", Tensor::scalar(2.0f));
  const onnx::TensorProto one = make_tensor("one", Tensor::scalar(1.0f));
  check_close(run_node(11, make_node("Clip", {"x", "lo", "hi"}, {"y"}), {x}, {lo, hi})[0], {5},
              both);
  check_close(run_node(13, make_node("Clip", {"x", "", "one"}, {"y"}), {x}, {one})[0], {5},
              only_max);
  check_close(run_node(13, make_node("Clip", {"x"}, {"y"}), {x})[0], {5}, {-3, -0.5, 0, 1.5, 4});
}

TEST_CASE("ONNX import: Slice-1 attributes and Slice-10 inputs") {
  const Tensor x = iota<float>({3, 4});  // [[0,1,2,3],[4,5,6,7],[8,9,10,11]]
  check_close(run_node(1,
                       make_node("Slice", {"x"}, {"y"},
                                 {ints_attr("starts", {1, 1}), ints_attr("ends", {3, 1000}),
                                  ints_attr("axes", {0, 1})}),
                       {x})[0],
              {2, 3}, {5, 6, 7, 9, 10, 11});
  // Without axes, starts/ends apply to the leading axes.
  check_close(
      run_node(9,
               make_node("Slice", {"x"}, {"y"}, {ints_attr("starts", {0}), ints_attr("ends", {2})}),
               {x})[0],
      {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});

  // Rows 0 and 2, columns 3, 2, 1.
  const std::vector<onnx::TensorProto> inits = {
      make_tensor("starts", ints({0, 3})), make_tensor("ends", ints({3, 0})),
      make_tensor("axes", ints({0, 1})), make_tensor("steps", ints({2, -1}))};
  check_close(run_node(10, make_node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}), {x},
                       inits)[0],
              {2, 3}, {3, 2, 1, 11, 10, 9});
  check_close(run_node(13, make_node("Slice", {"x", "s", "e", "a"}, {"y"}), {x},
                       {make_tensor("s", ints({-1})), make_tensor("e", ints({1000})),
                        make_tensor("a", ints({1}))})[0],
              {3, 1}, {3, 7, 11});
}

TEST_CASE("ONNX import: Pad-2 pads and value attributes, Pad-11 inputs") {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  // pads [x0_begin=0, x1_begin=1, x0_end=1, x1_end=0]
  check_close(run_node(2,
                       make_node("Pad", {"x"}, {"y"},
                                 {ints_attr("pads", {0, 1, 1, 0}), float_attr("value", 9)}),
                       {x})[0],
              {3, 3}, {9, 1, 2, 9, 3, 4, 9, 9, 9});
  check_close(
      run_node(10, make_node("Pad", {"x"}, {"y"}, {ints_attr("pads", {0, 1, 1, 0})}), {x})[0],
      {3, 3}, {0, 1, 2, 0, 3, 4, 0, 0, 0});
  check_close(run_node(10,
                       make_node("Pad", {"x"}, {"y"},
                                 {ints_attr("pads", {1, 0, 0, 1}), string_attr("mode", "edge")}),
                       {x})[0],
              {3, 3}, {1, 2, 2, 1, 2, 2, 3, 4, 4});
  check_close(run_node(11, make_node("Pad", {"x", "pads", "v"}, {"y"}), {x},
                       {make_tensor("pads", ints({0, 1, 1, 0})),
                        make_tensor("v", Tensor::scalar(9.0f))})[0],
              {3, 3}, {9, 1, 2, 9, 3, 4, 9, 9, 9});
}

TEST_CASE("ONNX import: Split, Squeeze, Unsqueeze, ReduceSum axes as attributes and inputs") {
  const Tensor x = iota<float>({2, 3});  // [[0,1,2],[3,4,5]]
  SUBCASE("Split") {
    auto y = run_node(
        11,
        make_node("Split", {"x"}, {"a", "b"}, {int_attr("axis", 1), ints_attr("split", {1, 2})}),
        {x});
    check_close(y[0], {2, 1}, {0, 3});
    check_close(y[1], {2, 2}, {1, 2, 4, 5});
    y = run_node(13, make_node("Split", {"x", "split"}, {"a", "b"}, {int_attr("axis", 1)}), {x},
                 {make_tensor("split", ints({2, 1}))});
    check_close(y[0], {2, 2}, {0, 1, 3, 4});
    check_close(y[1], {2, 1}, {2, 5});
    y = run_node(11, make_node("Split", {"x"}, {"a", "b"}), {x});  // equal halves of axis 0
    check_close(y[0], {1, 3}, {0, 1, 2});
    check_close(y[1], {1, 3}, {3, 4, 5});
  }
  SUBCASE("Squeeze") {
    const Tensor s = iota<float>({1, 2, 1});
    check_close(
        run_node(11, make_node("Squeeze", {"x"}, {"y"}, {ints_attr("axes", {0, 2})}), {s})[0], {2},
        {0, 1});
    check_close(run_node(13, make_node("Squeeze", {"x", "axes"}, {"y"}), {s},
                         {make_tensor("axes", ints({2}))})[0],
                {1, 2}, {0, 1});
  }
  SUBCASE("Unsqueeze") {
    check_close(
        run_node(11, make_node("Unsqueeze", {"x"}, {"y"}, {ints_attr("axes", {0, 3})}), {x})[0],
        {1, 2, 3, 1}, {0, 1, 2, 3, 4, 5});
    check_close(run_node(13, make_node("Unsqueeze", {"x", "axes"}, {"y"}), {x},
                         {make_tensor("axes", ints({-1}))})[0],
                {2, 3, 1}, {0, 1, 2, 3, 4, 5});
  }
  SUBCASE("ReduceSum") {
    check_close(run_node(11,
                         make_node("ReduceSum", {"x"}, {"y"},
                                   {ints_attr("axes", {1}), int_attr("keepdims", 0)}),
                         {x})[0],
                {2}, {3, 12});
    check_close(run_node(13, make_node("ReduceSum", {"x", "axes"}, {"y"}), {x},
                         {make_tensor("axes", ints({0}))})[0],
                {1, 3}, {3, 5, 7});
  }
}

TEST_CASE("ONNX import: Upsample-7, Upsample-9 and Resize-10 (nearest, asymmetric, floor)") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const std::vector<double> twice = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  const onnx::TensorProto scales = make_tensor("scales", f32({4}, {1, 1, 2, 2}));
  check_close(
      run_node(7,
               make_node("Upsample", {"x"}, {"y"},
                         {floats_attr("scales", {1, 1, 2, 2}), string_attr("mode", "nearest")}),
               {x})[0],
      {1, 1, 4, 4}, twice);
  check_close(run_node(9, make_node("Upsample", {"x", "scales"}, {"y"}), {x}, {scales})[0],
              {1, 1, 4, 4}, twice);
  check_close(run_node(10, make_node("Resize", {"x", "scales"}, {"y"}), {x}, {scales})[0],
              {1, 1, 4, 4}, twice);
  // Width 2 * 1.5 = 3: output column j reads input column floor(j / 1.5) = 0, 0, 1.
  check_close(run_node(9, make_node("Upsample", {"x", "s"}, {"y"}), {x},
                       {make_tensor("s", f32({4}, {1, 1, 1, 1.5f}))})[0],
              {1, 1, 2, 3}, {1, 1, 2, 3, 3, 4});
  // Linear: output column j samples input position j / 2, clamped to the last column.
  check_close(run_node(9, make_node("Upsample", {"x", "s"}, {"y"}, {string_attr("mode", "linear")}),
                       {f32({1, 1, 1, 2}, {1, 2})}, {make_tensor("s", f32({4}, {1, 1, 1, 2}))})[0],
              {1, 1, 1, 4}, {1, 1.5, 2, 2});
}

TEST_CASE("ONNX import: Dropout at inference is the identity, its mask all true, training fails") {
  const Tensor x = f32({3}, {1, -2, 3});
  check_close(run_node(10, make_node("Dropout", {"x"}, {"y"}, {float_attr("ratio", 0.5f)}), {x})[0],
              {3}, {1, -2, 3});
  const onnx::TensorProto ratio = make_tensor("ratio", Tensor::scalar(0.5f));
  const onnx::TensorProto off = make_tensor("off", Tensor::scalar(false));
  const onnx::TensorProto on = make_tensor("on", Tensor::scalar(true));
  check_close(
      run_node(13, make_node("Dropout", {"x", "ratio", "off"}, {"y"}), {x}, {ratio, off})[0], {3},
      {1, -2, 3});
  // Trailing empty output names are absent outputs.
  check_close(run_node(13, make_node("Dropout", {"x"}, {"y", ""}), {x})[0], {3}, {1, -2, 3});

  // The mask keeps every element: a bool tensor of x's shape, all true.
  const std::vector<Tensor> ym =
      run_node(13, make_node("Dropout", {"x", "ratio", "off"}, {"y", "mask"}), {x}, {ratio, off});
  REQUIRE(ym.size() == 2);
  check_close(ym[0], {3}, {1, -2, 3});
  REQUIRE(ym[1].dtype() == DType::boolean);
  CHECK(ym[1].shape() == Shape{3});
  for (int64_t i = 0; i < 3; ++i) CHECK(ym[1].data<bool>()[i]);

  const auto in = std::vector{value_info("x", x)};
  const std::string err = import_error(make_model(
      13, {make_node("Dropout", {"x", "ratio", "on"}, {"y"}, {}, "drop")}, in, {"y"}, {ratio, on}));
  CHECK(contains(err, "test.onnx: node 'drop' (Dropout): "));
  CHECK(contains(err, "training mode"));
}
