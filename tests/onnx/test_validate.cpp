// Model validation (src/onnx/validate.cpp): each class of model the ONNX spec rejects gets an
// error naming the file, the node where there is one, and the rule; valid models the ONNX
// checker alone would refuse still load.
#include "onnx/proto_builder.h"

using namespace sgraph;
using namespace sgraph::test;

namespace test_validate {  // this file's own names (the tests build as unity sources)

namespace {

// y = Relu(x), x f32 [2, 3], at `opset`.
onnx::ModelProto relu_model(int64_t opset = 13) {
  return make_model(opset, {make_node("Relu", {"x"}, {"y"}, {}, "act")},
                    {value_info("x", kF32, {2, 3})}, {"y"});
}

}  // namespace

TEST_CASE("ONNX validation: ir_version missing or newer than sgraph reads") {
  onnx::ModelProto m = relu_model();
  m.clear_ir_version();
  CHECK(contains(import_error(m), "test.onnx: the model has no ir_version"));
  m.set_ir_version(0);
  CHECK(contains(import_error(m), "has no ir_version"));
  m.set_ir_version(99);
  CHECK(contains(import_error(m), "ir_version 99 is newer than the newest sgraph reads"));
  // Newer than libonnx's checker (8) but known: loads, and is checked by the same rules.
  m.set_ir_version(10);
  CHECK(import_error(m).empty());
}

TEST_CASE("ONNX validation: opset imports out of range, twice, or conflicting") {
  onnx::ModelProto m = relu_model();
  m.mutable_opset_import(0)->set_version(0);
  CHECK(contains(import_error(m), "imports domain ai.onnx (default) at version 0"));
  m.mutable_opset_import(0)->set_version(400);
  CHECK(contains(import_error(m), "imports ONNX opset 400, newer than the newest sgraph knows"));
  m = relu_model();
  auto* again = m.add_opset_import();
  again->set_domain("ai.onnx");  // the default domain spelt out
  again->set_version(11);
  CHECK(contains(import_error(m), "imports domain ai.onnx (default) twice (versions 13 and 11)"));
  m = relu_model();
  auto* ml = m.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(-2);
  CHECK(contains(import_error(m), "imports domain ai.onnx.ml at version -2"));
}

TEST_CASE("ONNX validation: a graph input listed twice, a value produced twice") {
  onnx::ModelProto m = relu_model();
  *m.mutable_graph()->add_input() = value_info("x", kF32, {2, 3});
  CHECK(contains(import_error(m), "graph input 'x' is listed twice"));
  m = relu_model();
  *m.mutable_graph()->add_node() = make_node("Neg", {"x"}, {"y"}, {}, "again");
  const std::string e = import_error(m);
  CHECK(contains(e, "test.onnx: node 'again' (Neg): value 'y' is defined twice"));
}

TEST_CASE("ONNX validation: attributes not in the op's schema, or of the wrong type") {
  onnx::ModelProto m = relu_model();
  *m.mutable_graph()->mutable_node(0)->add_attribute() = int_attr("bogus", 1);
  std::string e = import_error(m);
  CHECK(contains(e, "test.onnx: node 'act' (Relu): the node breaks its ONNX schema (opset 13)"));
  CHECK(contains(e, "Unrecognized attribute: bogus"));
  // Softmax's axis as a float.
  m = make_model(13, {make_node("Softmax", {"x"}, {"y"}, {float_attr("axis", 1.0f)}, "sm")},
                 {value_info("x", kF32, {2, 3})}, {"y"});
  e = import_error(m);
  CHECK(contains(e, "node 'sm' (Softmax): attribute 'axis' must be an int"));
  // Gemm given one input: the schema's count.
  m = make_model(13, {make_node("Gemm", {"x"}, {"y"}, {}, "fc")}, {value_info("x", kF32, {2, 3})},
                 {"y"});
  CHECK(contains(import_error(m), "node 'fc' (Gemm)"));
}

TEST_CASE("ONNX validation: declared output and value_info types that contradict the graph") {
  onnx::ModelProto m = relu_model();
  *m.mutable_graph()->mutable_output(0) = value_info("y", kI64, {2, 3});
  std::string e = import_error(m);
  CHECK(contains(e,
                 "test.onnx: node 'act' (Relu): graph output 'y' is declared with element type 7"));
  CHECK(contains(e, "computes it as f32"));
  *m.mutable_graph()->mutable_output(0) = value_info("y", kF32, {2, 4});
  CHECK(contains(import_error(m),
                 "graph output 'y' is declared with size 4 along dim 1, but the "
                 "graph computes 3"));
  *m.mutable_graph()->mutable_output(0) = value_info("y", kF32, {2, 3, 1});
  CHECK(contains(import_error(m), "declared of rank 3, but the graph computes rank 2"));
  // Symbolic and unknown declared dims agree with anything; so does a matching declaration.
  *m.mutable_graph()->mutable_output(0) = value_info("y", kF32, {Dim("n"), Dim()});
  CHECK(import_error(m).empty());
  m = make_model(
      13, {make_node("Relu", {"x"}, {"h"}, {}, "act"), make_node("Neg", {"h"}, {"y"}, {}, "neg")},
      {value_info("x", kF32, {2, 3})}, {"y"});
  *m.mutable_graph()->add_value_info() = value_info("h", kF64, {2, 3});
  CHECK(contains(import_error(m), "value 'h' is declared with element type 11"));
}

TEST_CASE("ONNX validation: tensor data given twice, a Constant with two values") {
  onnx::TensorProto w = tensor_header("w", kF32, {1});
  w.add_float_data(2.0f);
  w.set_raw_data(std::string(4, '\0'));
  onnx::ModelProto m = make_model(13, {make_node("Mul", {"x", "w"}, {"y"}, {}, "mul")},
                                  {value_info("x", kF32, {2})}, {"y"}, {w});
  CHECK(contains(import_error(m), "test.onnx: "));
  CHECK(contains(import_error(m), "initializer 'w' breaks the ONNX spec: "));
  CHECK(contains(import_error(m), "one and only one value field"));
  onnx::TensorProto k = tensor_header("k", kF32, {1});
  k.add_float_data(1.0f);
  m = make_model(13,
                 {make_node("Constant", {}, {"c"},
                            {tensor_attr("value", k), float_attr("value_float", 2)}, "two"),
                  make_node("Mul", {"x", "c"}, {"y"}, {}, "mul")},
                 {value_info("x", kF32, {2})}, {"y"});
  CHECK(contains(import_error(m),
                 "node 'two' (Constant) has 2 value attributes; a Constant has "
                 "exactly one"));
}

TEST_CASE("ONNX validation: a model-local function calling itself is refused even when unused") {
  onnx::ModelProto m = relu_model();
  onnx::FunctionProto* f = m.add_functions();
  f->set_domain("local");
  f->set_name("loop");
  f->add_input("a");
  f->add_output("b");
  *f->add_node() = make_node("loop", {"a"}, {"b"}, {}, "self", "local");
  auto* op = f->add_opset_import();
  op->set_domain("");
  op->set_version(13);
  CHECK(contains(import_error(m), "model-local function 'local.loop' calls itself"));
}

TEST_CASE("ONNX validation: valid models the whole-model ONNX checker would refuse still load") {
  // The default domain spelt "ai.onnx" on a node.
  onnx::ModelProto m = relu_model();
  m.mutable_graph()->mutable_node(0)->set_domain("ai.onnx");
  CHECK(import_error(m).empty());
  // Graph outputs declaring no type (sgraph infers it).
  CHECK(import_error(relu_model()).empty());
  // Opset 18, newer than libonnx's schemas: Split's num_outputs.
  m = make_model(18, {make_node("Split", {"x"}, {"a", "b"}, {int_attr("num_outputs", 2)}, "split")},
                 {value_info("x", kF32, {4})}, {"a", "b"});
  CHECK(import_error(m).empty());
}

}  // namespace test_validate
