// Half-precision models (f16/bf16 storage, f32 compute): the importer widens each half input and
// constant where it enters the graph and narrows each half output, Cast/CastLike to a half type
// round to it, and the graph's outputs come back in the declared half type.
#include <cmath>
#include <cstdint>

#include "onnx/proto_builder.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

constexpr int32_t kF16 = onnx::TensorProto::FLOAT16;
constexpr int32_t kBF16 = onnx::TensorProto::BFLOAT16;

// x f16 [3], w f16 [3] (an initializer, 0.25 each):
//   y = Add(Max(x, w), w)                          (f16: computed in f32, narrowed once)
//   z = Cast(Div(Cast(x, f32), 3), f16)            (f16: Cast rounds)
//   e = Cast(CastLike(Div(Cast(x, f32), 3), w), f32) - Div(Cast(x, f32), 3)   (f32: the rounding)
onnx::ModelProto half_model(int32_t half) {
  const DType t = half == kF16 ? DType::f16 : DType::bf16;
  const Tensor w = half_bits(t, half == kF16 ? std::vector<uint16_t>{0x3400, 0x3400, 0x3400}
                                             : std::vector<uint16_t>{0x3E80, 0x3E80, 0x3E80});
  return make_model(15,
                    {make_node("Max", {"x", "w"}, {"m"}), make_node("Add", {"m", "w"}, {"y"}),
                     make_node("Cast", {"x"}, {"xf"}, {int_attr("to", kF32)}),
                     make_node("Div", {"xf", "three"}, {"third"}),
                     make_node("Cast", {"third"}, {"z"}, {int_attr("to", half)}),
                     make_node("CastLike", {"third", "w"}, {"like"}),
                     make_node("Cast", {"like"}, {"likef"}, {int_attr("to", kF32)}),
                     make_node("Sub", {"likef", "third"}, {"e"})},
                    {value_info("x", half, {3})}, {"y", "z", "e"},
                    {make_tensor("w", w), make_tensor("three", Tensor::from<float>({1}, {3.0f}))});
}

}  // namespace

TEST_CASE("Half precision: an f16 model runs in f32 and returns f16, interpreted and compiled") {
  const onnx::ModelProto m = half_model(kF16);
  const Graph g = load(m);
  REQUIRE(g.values[g.inputs[0]].dtype == DType::f16);
  // x = [1, -2, 0.5]
  const Tensor x = half_bits(DType::f16, {0x3C00, 0xC000, 0x3800});
  Session interp(g, {.interpret_only = true});
  const std::vector<Tensor> out = interp.run({x});
  REQUIRE(out.size() == 3);
  CHECK(out[0].dtype() == DType::f16);
  CHECK(out[1].dtype() == DType::f16);
  CHECK(out[2].dtype() == DType::f32);
  // Max(x, 0.25) + 0.25 = [1.25, 0.5, 0.75]: 0x3D00, 0x3800, 0x3A00.
  CHECK(bits_of(out[0]) == std::vector<uint16_t>{0x3D00, 0x3800, 0x3A00});
  // x / 3 in f16: 1/3 -> 0x3555, -2/3 -> 0xB955, 1/6 -> 0x3155.
  CHECK(bits_of(out[1]) == std::vector<uint16_t>{0x3555, 0xB955, 0x3155});
  // CastLike rounded to f16: the difference is f16(x/3) - x/3, not 0.
  const std::vector<float> e = out[2].to_vector<float>();
  CHECK(e[0] == doctest::Approx(0.333251953125 - 1.0 / 3).epsilon(1e-3));
  CHECK(e[1] == doctest::Approx(-0.66650390625 + 2.0 / 3).epsilon(1e-3));
  CHECK(e[0] != 0.0f);

  Session jit(g, {.warmup_runs = 1, .min_region_ops = 1});
  jit.run({x});
  REQUIRE(jit.planned());
  const std::vector<Tensor> compiled = jit.run({x});
  CHECK(bits_of(compiled[0]) == bits_of(out[0]));
  CHECK(bits_of(compiled[1]) == bits_of(out[1]));
  CHECK(compiled[2].to_vector<float>() == e);
  CHECK(jit.report().kernel_calls > 0);
}

TEST_CASE("Half precision: a bf16 model, and f16 declared on an inner value") {
  onnx::ModelProto m = half_model(kBF16);
  *m.mutable_graph()->add_value_info() = value_info("m", kBF16, {3});
  const Graph g = load(m);
  // x = [1, -2, 0.5] in bf16.
  const Tensor x = half_bits(DType::bf16, {0x3F80, 0xC000, 0x3F00});
  const std::vector<Tensor> out = Session(g, {.interpret_only = true}).run({x});
  CHECK(out[0].dtype() == DType::bf16);
  CHECK(bits_of(out[0]) == std::vector<uint16_t>{0x3FA0, 0x3F00, 0x3F40});  // 1.25, 0.5, 0.75
  // 1/3 in bf16 is 0x3EAB (0.333984375); -2/3 is 0xBF2B.
  CHECK(bits_of(out[1])[0] == 0x3EAB);
  CHECK(bits_of(out[1])[1] == 0xBF2B);
}

TEST_CASE("Half precision: Cast between f16 and integers, bool and f64") {
  // f16 [2.5, -3.75, 70000 -> inf] to i32 (through f32: truncation, saturation), and back.
  const Tensor x = half_bits(DType::f16, {0x4100, 0xC380, 0x7C00});
  const Tensor i = run_node(13, make_node("Cast", {"x"}, {"y"}, {int_attr("to", kI32)}), {x})[0];
  CHECK(i.to_vector<int32_t>() == std::vector<int32_t>{2, -3, 2147483647});
  const Tensor b = Tensor::from<bool>({2}, {true, false});
  CHECK(bits_of(run_node(13, make_node("Cast", {"x"}, {"y"}, {int_attr("to", kF16)}), {b})[0]) ==
        std::vector<uint16_t>{0x3C00, 0});
  const Tensor d = Tensor::from<double>({2}, {0.1, 65504.0});
  CHECK(bits_of(run_node(13, make_node("Cast", {"x"}, {"y"}, {int_attr("to", kF16)}), {d})[0]) ==
        std::vector<uint16_t>{0x2E66, 0x7BFF});
}

TEST_CASE("Half precision: f16 data in int32_data, and a wrong count is an error") {
  onnx::TensorProto p = tensor_header("w", kF16, {2});
  p.add_int32_data(0x3C00);
  p.add_int32_data(0xC000);
  const onnx::ModelProto m = make_model(13, {make_node("Add", {"x", "w"}, {"y"})},
                                        {value_info("x", kF16, {2})}, {"y"}, {p});
  const Tensor y = Session(load(m)).run({half_bits(DType::f16, {0x3C00, 0x3C00})})[0];
  CHECK(bits_of(y) == std::vector<uint16_t>{0x4000, 0xBC00});  // 2, -1
  p.add_int32_data(0);
  const onnx::ModelProto bad = make_model(13, {make_node("Add", {"x", "w"}, {"y"})},
                                          {value_info("x", kF16, {2})}, {"y"}, {p});
  CHECK(contains(import_error(bad), "has 3 values in int32_data but its dims [2] need 2"));
}
