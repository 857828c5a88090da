// The IR: builder, verification errors, attributes, printing.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
// x[batch,3] -> relu(x * w + b) with a named output.
Graph small_graph() {
  GraphBuilder b("small");
  ValueId x = b.input("x", DType::f32, {Dim("batch"), 3});
  ValueId w = b.constant("w", Tensor::from<float>({3}, {1, 2, 3}));
  ValueId bias = b.constant("b", Tensor::from<float>({1}, {-1}));
  b.output(b.relu(b.add(b.mul(x, w), bias)), "y");
  return b.build();
}
}  // namespace

TEST_CASE("GraphBuilder: names, dtypes, inferred static shapes") {
  GraphBuilder b("g");
  ValueId x = b.input("x", DType::f32, {2, 3});
  ValueId y = b.neg(x);
  ValueId z = b.greater(y, b.scalar(0.0f));
  b.output(z, "z");
  Graph g = b.build();
  CHECK(g.nodes.size() == 2);
  CHECK(g.nodes[0].name == "neg_0");
  CHECK(g.value(y).dtype == DType::f32);
  REQUIRE(g.value(y).shape.has_value());
  CHECK(*g.value(y).shape == DimList{2, 3});
  CHECK(g.value(g.outputs[0]).name == "z");
  CHECK(g.value(g.outputs[0]).dtype == DType::boolean);
}

TEST_CASE("Graph::to_string lists inputs, constants, nodes and outputs") {
  const std::string text = small_graph().to_string();
  CHECK(text ==
        "graph small(x: f32[batch,3]) {\n"
        "  w: f32[3] = constant\n"
        "  b: f32[1] = constant\n"
        "  mul_0: f32[batch,3] = Mul(x, w)\n"
        "  add_0: f32[batch,3] = Add(mul_0, b)\n"
        "  y: f32[batch,3] = Relu(add_0)\n"
        "  return y\n"
        "}\n");
}

TEST_CASE("Graph::to_string shows attributes and absent inputs") {
  GraphBuilder b("attrs");
  ValueId x = b.input("x", DType::f32, {4});
  b.output(b.leaky_relu(b.clip(x, kNoValue, b.scalar(1.0f)), Attributes{{"alpha", 0.5}}), "y");
  const std::string text = b.build().to_string();
  CHECK(contains(text, "clip_0: f32[4] = Clip(x, _, const_0)\n"));
  CHECK(contains(text, "y: f32[4] = LeakyRelu(clip_0) {alpha=0.5}\n"));
}

TEST_CASE("Builder errors point at the call and leave the builder usable") {
  GraphBuilder b("g");
  ValueId x = b.input("x", DType::f32, {2});
  ValueId i = b.input("i", DType::i64, {2});
  std::string e = error_of([&] { b.add(x, i); });
  CHECK(
      contains(e, "node 'add_0' (Add): inputs 0 and 1 must have the same dtype, got f32 and i64"));
  CHECK(
      contains(error_of([&] { b.add(x, ValueId{99}); }), "is not a value built before this node"));
  CHECK(contains(error_of([&] { b.input("x", DType::f32, {1}); }),
                 "a value named 'x' exists already"));
  b.output(b.add(x, x), "y");  // still fine after the failures
  Graph g = b.build();
  CHECK(g.nodes.size() == 1);
}

TEST_CASE("verify: dangling value, cycle, arity, duplicate names, unproduced output") {
  SUBCASE("dangling") {
    Graph g = small_graph();
    g.nodes[0].inputs[1] = 1000;
    CHECK(contains(error_of([&] { g.verify(); }),
                   "node 'mul_0' (Mul): input 1 refers to value id 1000"));
  }
  SUBCASE("value neither input nor produced") {
    Graph g = small_graph();
    const ValueId orphan = g.add_value("orphan", DType::f32);
    g.nodes[1].inputs[0] = orphan;
    CHECK(contains(error_of([&] { g.verify(); }), "'orphan' is neither a graph input"));
  }
  SUBCASE("cycle: a node consumes a later node's output") {
    Graph g = small_graph();
    g.nodes[0].inputs[0] = g.nodes[2].outputs[0];
    CHECK(contains(error_of([&] { g.verify(); }), "before node 'y' produces it (cycle"));
  }
  SUBCASE("arity") {
    Graph g = small_graph();
    g.nodes[2].inputs.push_back(g.inputs[0]);
    CHECK(contains(error_of([&] { g.verify(); }), "node 'y' (Relu): takes 1 inputs, got 2"));
  }
  SUBCASE("duplicate value names") {
    Graph g = small_graph();
    g.values[g.nodes[0].outputs[0]].name = "w";
    CHECK(contains(error_of([&] { g.verify(); }), "two values named 'w'"));
  }
  SUBCASE("graph output never produced") {
    Graph g = small_graph();
    g.outputs.push_back(g.add_value("ghost", DType::f32));
    CHECK(contains(error_of([&] { g.verify(); }), "graph output 'ghost' is never produced"));
  }
  SUBCASE("declared dtype disagrees with the op") {
    Graph g = small_graph();
    g.values[g.nodes[0].outputs[0]].dtype = DType::i32;
    CHECK(contains(error_of([&] { g.verify(); }), "declared i32 but the op produces f32"));
  }
  SUBCASE("required input missing") {
    Graph g = small_graph();
    g.nodes[1].inputs[1] = kNoValue;
    CHECK(contains(error_of([&] { g.verify(); }), "required input 1 is missing"));
  }
}

TEST_CASE("Attributes: typed getters, defaults and errors") {
  Attributes a{
      {"axis", int64_t{1}}, {"alpha", 0.5}, {"perm", Ints{1, 0}}, {"mode", std::string("edge")}};
  CHECK(a.get_int("axis") == 1);
  CHECK(a.get_int("missing", 7) == 7);
  CHECK(a.get_float("alpha") == 0.5);
  CHECK(a.get_float("axis") == 1.0);  // an int where a float is expected is fine
  CHECK(a.get_ints("perm") == Ints{1, 0});
  CHECK(a.get_string("mode") == "edge");
  a.set("axis", int64_t{2});
  CHECK(a.get_int("axis") == 2);
  CHECK(contains(error_of([&] { a.get_int("nope"); }), "missing required attribute 'nope'"));
  CHECK(contains(error_of([&] { a.get_ints("axis"); }), "attribute 'axis' must be ints, got 2"));
  CHECK(contains(error_of([&] { a.get_graph("perm"); }), "must be a graph"));
}

TEST_CASE("op names round-trip through the op table") {
  for (int i = 0; i < kNumOps; ++i) {
    const auto op = static_cast<OpKind>(i);
    CHECK(op_from_name(op_name(op)) == op);
  }
  CHECK_FALSE(op_from_name("NoSuchOp").has_value());
}

TEST_CASE("Graph::to_string prints subgraph attributes nested") {
  GraphBuilder body_b("then_branch");
  ValueId t = body_b.input("t", DType::f32, {2});
  body_b.output(body_b.neg(t), "neg_t");
  auto body = std::make_shared<const Graph>(body_b.build());

  Graph g;
  g.name = "outer";
  ValueId x = g.add_value("x", DType::f32, DimList{2});
  g.inputs.push_back(x);
  ValueId y = g.add_value("y", DType::f32, DimList{2});
  g.add_node(Node{OpKind::Identity, "holder", {x}, {y}, Attributes{{"body", body}}});
  g.outputs.push_back(y);
  const std::string text = g.to_string();
  CHECK(contains(text,
                 "  y: f32[2] = Identity(x)\n"
                 "    body = graph then_branch(t: f32[2]) {\n"
                 "      neg_t: f32[2] = Neg(t)\n"
                 "      return neg_t\n"
                 "    }\n"));
  CHECK(&g.nodes[0].attrs.get_graph("body") == body.get());
}

TEST_CASE("Shape inference carries symbolic dims through ops") {
  GraphBuilder b("sym");
  ValueId x = b.input("x", DType::f32, {Dim("batch"), 1, 4});
  ValueId y = b.input("y", DType::f32, {1, Dim("seq"), 4});
  ValueId z = b.input("z", DType::f32, {Dim("n")});
  ValueId u = b.input("u", DType::f32, {Dim("m")});
  ValueId unnamed = b.input("w", DType::f32, {Dim(), 4});
  Graph& g = b.graph();
  auto dims = [&](ValueId v) { return g.value(v).shape ? dims_str(*g.value(v).shape) : "none"; };
  CHECK(dims(b.add(x, y)) == "[batch,seq,4]");
  CHECK(dims(b.flatten(x, Attributes{{"axis", int64_t{1}}})) == "[batch,4]");
  CHECK(dims(b.reshape(x, b.ints({-1}))) == "[?]");  // 4*batch: not a symbol
  CHECK(dims(b.concat(z, z, Attributes{{"axis", int64_t{0}}})) == "[?]");
  CHECK(dims(b.add(z, u)) == "none");  // n vs m: known only when run
  CHECK(dims(b.relu(unnamed)) == "[?,4]");
  CHECK(dims(b.matmul(x, b.constant("k", Tensor::zeros(DType::f32, {4, 5})))) == "[batch,1,5]");
}
