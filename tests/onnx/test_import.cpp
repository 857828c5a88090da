// ONNX import: models built in memory with the protobuf classes, imported and run, checked
// against hand-computed values — declared dims, initializers in every data field, Constant
// nodes, If branches reading outer values, and every user error (each must name the file and,
// where there is one, the node and op). The old-op-version adapters: test_import_adapters.cpp.
#include <algorithm>
#include <cmath>
#include <fstream>

#include "onnx/proto_builder.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// Adds an import of `domain` at `version` to `m`.
void import_domain(onnx::ModelProto& m, const std::string& domain, int64_t version) {
  auto* op = m.add_opset_import();
  op->set_domain(domain);
  op->set_version(version);
}

const Node& node_named(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes)
    if (n.name == name) return n;
  FAIL("no node named " << name);
  return g.nodes.front();
}

std::vector<std::string> value_names(const Graph& g, const std::vector<ValueId>& ids) {
  std::vector<std::string> names;
  for (ValueId v : ids) names.push_back(g.value(v).name);
  return names;
}

}  // namespace

// ---- basic import ----------------------------------------------------------------------------

TEST_CASE("ONNX import: declared dims, initializers in every data field, metadata, outputs") {
  // Initializers: raw f32, float_data, int64_data, int32_data for bool/u8/i32, double_data.
  onnx::TensorProto raw = make_tensor("w_raw", f32({3}, {1, 2, 3}));
  onnx::TensorProto fl = tensor_header("w_float", kF32, {3});
  for (float v : {0.5f, -1.0f, 2.0f}) fl.add_float_data(v);
  onnx::TensorProto i64 = tensor_header("w_i64", kI64, {2});
  for (int64_t v : {int64_t{1} << 40, int64_t{-7}}) i64.add_int64_data(v);
  onnx::TensorProto bl = tensor_header("w_bool", kBool, {2, 2});
  for (int32_t v : {1, 0, 0, 1}) bl.add_int32_data(v);
  onnx::TensorProto u8 = tensor_header("w_u8", kU8, {3});
  for (int32_t v : {0, 200, 255}) u8.add_int32_data(v);
  onnx::TensorProto i32 = tensor_header("w_i32", kI32, {2});
  for (int32_t v : {-5, 123456}) i32.add_int32_data(v);
  onnx::TensorProto f64 = tensor_header("w_f64", kF64, {2});
  for (double v : {0.1, -1e300}) f64.add_double_data(v);

  onnx::ModelProto m = make_model(
      13,
      {make_node("Add", {"x", "w_raw"}, {"sum"}), make_node("Mul", {"x", "w_float"}, {"prod"}),
       make_node("Identity", {"w_i64"}, {"o_i64"}), make_node("Not", {"w_bool"}, {"o_bool"}),
       make_node("Identity", {"w_u8"}, {"o_u8"}), make_node("Identity", {"w_i32"}, {"o_i32"}),
       make_node("Identity", {"w_f64"}, {"o_f64"}), make_node("Add", {"z", "z"}, {"zz"})},
      {value_info("x", kF32, {Dim("batch"), 3}), value_info("z", kI64, {Dim(), 2, Dim()})},
      {"sum", "prod", "o_i64", "o_bool", "o_u8", "o_i32", "o_f64", "zz"},
      {raw, fl, i64, bl, u8, i32, f64});
  // z's last dim has an empty dim_param: unnamed, like a dim with neither field set.
  m.mutable_graph()
      ->mutable_input(1)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(2)
      ->set_dim_param("");
  // IR < 4 style: every initializer is also listed as a graph input.
  m.set_ir_version(3);
  for (const auto& t : m.graph().initializer())
    *m.mutable_graph()->add_input() =
        value_info(t.name(), t.data_type(), DimList(t.dims().begin(), t.dims().end()));
  m.set_producer_name("sgraph-test");
  m.set_producer_version("1.2");

  const Graph g = load(m);
  REQUIRE(g.inputs.size() == 2);
  CHECK(value_names(g, g.inputs) == std::vector<std::string>{"x", "z"});
  CHECK(g.value(g.inputs[0]).dtype == DType::f32);
  CHECK(g.value(g.inputs[0]).shape == std::optional<DimList>(DimList{Dim("batch"), Dim(3)}));
  CHECK(g.value(g.inputs[1]).dtype == DType::i64);
  CHECK(g.value(g.inputs[1]).shape == std::optional<DimList>(DimList{Dim(), Dim(2), Dim()}));
  CHECK(g.metadata.at("onnx.opset") == "13");
  CHECK(g.metadata.at("onnx.producer") == "sgraph-test 1.2");
  CHECK(value_names(g, g.outputs) ==
        std::vector<std::string>{"sum", "prod", "o_i64", "o_bool", "o_u8", "o_i32", "o_f64", "zz"});
  for (const char* name : {"w_raw", "w_float", "w_i64", "w_bool", "w_u8", "w_i32", "w_f64"})
    CHECK_MESSAGE(g.is_constant(g.find_value(name)), name);

  Session s(g);
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor z = iota<int64_t>({1, 2, 3}, 1);
  const std::vector<Tensor> out = s.run(std::vector<Tensor>{x, z});
  REQUIRE(out.size() == 8);
  check_close(out[0], {2, 3}, {2, 4, 6, 5, 7, 9});
  check_close(out[1], {2, 3}, {0.5, -2, 6, 2, -5, 12});
  CHECK(out[2].dtype() == DType::i64);
  CHECK(out[2].to_vector<int64_t>() == std::vector<int64_t>{int64_t{1} << 40, -7});
  CHECK(out[3].dtype() == DType::boolean);
  check_close(out[3], {2, 2}, {0, 1, 1, 0});
  CHECK(out[4].dtype() == DType::u8);
  check_close(out[4], {3}, {0, 200, 255});
  CHECK(out[5].dtype() == DType::i32);
  check_close(out[5], {2}, {-5, 123456});
  CHECK(out[6].dtype() == DType::f64);
  check_close(out[6], {2}, {0.1, -1e300}, 0, 0);
  check_close(out[7], {1, 2, 3}, {2, 4, 6, 8, 10, 12});

  // A symbolic batch dim accepts another batch size.
  check_close(s.run(std::vector<Tensor>{f32({1, 3}, {1, 1, 1}), z})[0], {1, 3}, {2, 3, 4});
}

TEST_CASE("ONNX import: load_onnx reads a file and names it in errors") {
  const onnx::ModelProto m =
      make_model(13, {make_node("Relu", {"x"}, {"y"})}, {value_info("x", kF32, {3})}, {"y"});
  TempPath path(".onnx");
  {
    std::ofstream out(path.str(), std::ios::binary);
    REQUIRE(m.SerializeToOstream(&out));
  }
  Session s(load_onnx(path.str()));
  check_close(s.run({f32({3}, {-1, 0, 2})})[0], {3}, {0, 0, 2});

  {
    std::ofstream out(path.str(), std::ios::binary);
    out << "not a model";
  }
  const std::string err = error_of([&] { load_onnx(path.str()); });
  CHECK(contains(err, path.str() + ": "));
  CHECK(contains(err, "not a valid ONNX model"));
}

TEST_CASE("ONNX import: Constant nodes become constants of the right dtype and shape") {
  onnx::TensorProto t = tensor_header("", kI32, {2, 2});
  for (int32_t v : {1, -2, 3, -4}) t.add_int32_data(v);
  const onnx::ModelProto m = make_model(
      13,
      {make_node("Constant", {}, {"c_tensor"}, {tensor_attr("value", t)}),
       make_node("Constant", {}, {"c_float"}, {float_attr("value_float", 2.5f)}),
       make_node("Constant", {}, {"c_floats"}, {floats_attr("value_floats", {1, -0.5f, 3})}),
       make_node("Constant", {}, {"c_int"}, {int_attr("value_int", -9)}),
       make_node("Constant", {}, {"c_ints"}, {ints_attr("value_ints", {4, 5})}),
       make_node("Add", {"c_tensor", "x"}, {"y"}), make_node("Mul", {"c_floats", "c_float"}, {"f"}),
       make_node("Add", {"c_ints", "c_int"}, {"i"})},
      {value_info("x", kI32, {2, 2})}, {"y", "f", "i"});
  const Graph g = load(m);
  struct Want {
    const char* name;
    DType dtype;
    Shape shape;
    std::vector<double> values;
  };
  for (const Want& w :
       {Want{"c_tensor", DType::i32, {2, 2}, {1, -2, 3, -4}},
        Want{"c_float", DType::f32, {}, {2.5}}, Want{"c_floats", DType::f32, {3}, {1, -0.5, 3}},
        Want{"c_int", DType::i64, {}, {-9}}, Want{"c_ints", DType::i64, {2}, {4, 5}}}) {
    CAPTURE(w.name);
    const ValueId v = g.find_value(w.name);
    REQUIRE(v != kNoValue);
    REQUIRE(g.is_constant(v));
    CHECK(g.value(v).initializer.dtype() == w.dtype);
    check_close(g.value(v).initializer, w.shape, w.values);
  }
  CHECK(g.nodes.size() == 3);  // constants are values, not nodes

  const auto out = Session(g).run({iota<int32_t>({2, 2}, 10)});
  check_close(out[0], {2, 2}, {11, 9, 15, 9});
  check_close(out[1], {3}, {2.5, -1.25, 7.5});
  check_close(out[2], {2}, {-5, -4});
}

// ---- If --------------------------------------------------------------------------------------

namespace {
// Outer graph: inputs cond, cond2, a, b; initializer c = {10, 20}.
//   If(cond) then: t1 = a + c; t2 = If(cond2) then a * b else b - c   (a, b, c: two levels up)
//            else: out0 = b (an outer value, directly); out1 = -a
onnx::ModelProto if_model() {
  const onnx::GraphProto inner_then =
      make_graph("inner_then", {make_node("Mul", {"a", "b"}, {"it"})}, {}, {"it"});
  const onnx::GraphProto inner_else =
      make_graph("inner_else", {make_node("Sub", {"b", "c"}, {"ie"})}, {}, {"ie"});
  const onnx::GraphProto then_branch = make_graph(
      "then",
      {make_node("Add", {"a", "c"}, {"t1"}),
       make_node("If", {"cond2"}, {"t2"},
                 {graph_attr("then_branch", inner_then), graph_attr("else_branch", inner_else)},
                 "inner_if")},
      {}, {"t1", "t2"});
  const onnx::GraphProto else_branch =
      make_graph("else", {make_node("Neg", {"a"}, {"e1"})}, {}, {"b", "e1"});
  return make_model(
      13,
      {make_node("If", {"cond"}, {"out0", "out1"},
                 {graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)},
                 "outer_if")},
      {value_info("cond", kBool, {}), value_info("cond2", kBool, {}), value_info("a", kF32, {2}),
       value_info("b", kF32, {2})},
      {"out0", "out1"}, {make_tensor("c", f32({2}, {10, 20}))});
}
}  // namespace

TEST_CASE("ONNX import: If branches read outer values, also from two levels up") {
  Session s(load(if_model()));
  const Tensor a = f32({2}, {1, 2}), b = f32({2}, {3, 4});
  const Tensor yes = Tensor::scalar(true), no = Tensor::scalar(false);
  auto out = s.run({yes, yes, a, b});
  check_close(out[0], {2}, {11, 22});
  check_close(out[1], {2}, {3, 8});
  out = s.run({yes, no, a, b});
  check_close(out[0], {2}, {11, 22});
  check_close(out[1], {2}, {-7, -16});
  out = s.run({no, yes, a, b});
  check_close(out[0], {2}, {3, 4});
  check_close(out[1], {2}, {-1, -2});
}

TEST_CASE("ONNX import: If nodes take the outer values their branches read as inputs") {
  const Graph g = load(if_model());
  CHECK(value_names(g, g.inputs) == std::vector<std::string>{"cond", "cond2", "a", "b"});
  REQUIRE(g.nodes.size() == 1);
  const Node& outer = node_named(g, "outer_if");
  CHECK(outer.op == OpKind::If);
  REQUIRE(!outer.inputs.empty());
  CHECK(g.value(outer.inputs[0]).name == "cond");
  // Every outer value read anywhere below, once each (in some order).
  std::vector<std::string> reads = value_names(g, {outer.inputs.begin() + 1, outer.inputs.end()});
  std::sort(reads.begin(), reads.end());
  CHECK(reads == std::vector<std::string>{"a", "b", "c", "cond2"});
  // The node's values are the outer graph's own (c is its initializer).
  CHECK(g.is_constant(g.find_value("c")));
  CHECK(std::find(outer.inputs.begin(), outer.inputs.end(), g.find_value("c")) !=
        outer.inputs.end());

  // Each branch takes those values as inputs, in the node's order, even ones it ignores.
  const std::vector<std::string> passed =
      value_names(g, {outer.inputs.begin() + 1, outer.inputs.end()});
  for (const char* key : {"then_branch", "else_branch"}) {
    CAPTURE(key);
    const Graph& br = outer.attrs.get_graph(key);
    CHECK(value_names(br, br.inputs) == passed);
    for (ValueId v : br.inputs) CHECK(!br.is_constant(v));
  }
  const Graph& else_g = outer.attrs.get_graph("else_branch");
  REQUIRE(else_g.outputs.size() == 2);
  CHECK(else_g.value(else_g.outputs[0]).name == "b");  // an outer value as a branch output

  // The nested If reads a, b, c through the then-branch's own inputs.
  const Graph& then_g = outer.attrs.get_graph("then_branch");
  const Node& inner = node_named(then_g, "inner_if");
  CHECK(then_g.value(inner.inputs[0]).name == "cond2");
  std::vector<std::string> inner_reads =
      value_names(then_g, {inner.inputs.begin() + 1, inner.inputs.end()});
  std::sort(inner_reads.begin(), inner_reads.end());
  CHECK(inner_reads == std::vector<std::string>{"a", "b", "c"});
  for (size_t i = 1; i < inner.inputs.size(); ++i)
    CHECK(std::find(then_g.inputs.begin(), then_g.inputs.end(), inner.inputs[i]) !=
          then_g.inputs.end());
}

TEST_CASE("ONNX import: If branches with different output dtypes are an error naming the node") {
  const onnx::GraphProto f = make_graph(
      "f", {make_node("Constant", {}, {"vf"}, {float_attr("value_float", 1)})}, {}, {"vf"});
  const onnx::GraphProto i =
      make_graph("i", {make_node("Constant", {}, {"vi"}, {int_attr("value_int", 1)})}, {}, {"vi"});
  const std::string err = import_error(
      make_model(13,
                 {make_node("If", {"cond"}, {"y"},
                            {graph_attr("then_branch", f), graph_attr("else_branch", i)}, "pick")},
                 {value_info("cond", kBool, {})}, {"y"}));
  CHECK(contains(err, "test.onnx: node 'pick' (If): "));
  CHECK(contains(err, "f32"));
  CHECK(contains(err, "i64"));

  // An error inside a branch names the file and the inner node.
  const onnx::GraphProto bad =
      make_graph("bad", {make_node("Nonsense", {"cond"}, {"z"}, {}, "inner")}, {}, {"z"});
  const std::string err2 = import_error(make_model(
      13,
      {make_node("If", {"cond"}, {"y"},
                 {graph_attr("then_branch", bad), graph_attr("else_branch", i)}, "pick")},
      {value_info("cond", kBool, {})}, {"y"}));
  CHECK(contains(err2, "test.onnx: "));
  CHECK(contains(err2, "'inner'"));
  CHECK(contains(err2, "Nonsense"));
}

// ---- errors ----------------------------------------------------------------------------------

namespace {
// Opset 9 (attribute forms of Slice and Pad): adapters, typed initializers and a Constant, for the
// corruption tests.
onnx::ModelProto mixed_model() {
  onnx::TensorProto w = tensor_header("w", kF32, {3});
  for (float v : {1.0f, 2.0f, 3.0f}) w.add_float_data(v);
  onnx::TensorProto shape = tensor_header("shape", kI64, {2});
  for (int64_t v : {-1, 6}) shape.add_int64_data(v);
  onnx::TensorProto k = tensor_header("k", kF32, {3});
  for (float v : {0.5f, 1.0f, 2.0f}) k.add_float_data(v);
  return make_model(
      9,
      {make_node("Constant", {}, {"k"}, {tensor_attr("value", k)}),
       make_node("Mul", {"x", "w"}, {"xw"}), make_node("Add", {"xw", "k"}, {"xk"}),
       make_node("Softmax", {"xk"}, {"sm"}),
       make_node("Clip", {"sm"}, {"cl"}, {float_attr("min", 0.1f), float_attr("max", 0.9f)}),
       make_node("Slice", {"cl"}, {"sl"},
                 {ints_attr("starts", {0}), ints_attr("ends", {1}), ints_attr("axes", {1})}),
       make_node("Pad", {"sl"}, {"pd"}, {ints_attr("pads", {0, 1, 0, 0, 0, 0})}),
       make_node("Reshape", {"pd", "shape"}, {"y"})},
      {value_info("x", kF32, {Dim("n"), 2, 3})}, {"y"}, {w, shape});
}
}  // namespace

TEST_CASE("ONNX import: the corruption-test model imports and runs") {
  // x = 0, so xk[0,i,:] = k = {0.5, 1, 2}; Softmax-1 runs over all 6 values of the batch, Clip
  // bounds them to [0.1, 0.9], Slice keeps i = 0, Pad adds a zero row before it, Reshape -> [1,6].
  const double s = 2 * (std::exp(0.5) + std::exp(1.0) + std::exp(2.0));
  std::vector<double> want = {0, 0, 0};
  for (double v : {0.5, 1.0, 2.0}) want.push_back(std::clamp(std::exp(v) / s, 0.1, 0.9));
  CHECK(want[3] == 0.1);  // the clip is exercised
  check_close(run_model(mixed_model(), {Tensor::zeros(DType::f32, {1, 2, 3})})[0], {1, 6}, want);
}

TEST_CASE("ONNX import: unreadable input is an error, never a crash") {
  SUBCASE("missing file") {
    const std::string err = error_of([] { load_onnx("/nonexistent/dir/model.onnx"); });
    CHECK(contains(err, "/nonexistent/dir/model.onnx"));
    CHECK(contains(err, "cannot open file"));
  }
  const std::string bytes = if_model().SerializeAsString();
  SUBCASE("truncated in half") {
    const std::string err =
        error_of([&] { load_onnx_bytes(bytes.substr(0, bytes.size() / 2), "test.onnx"); });
    CHECK(contains(err, "test.onnx: "));
    CHECK(contains(err, "not a valid ONNX model"));
  }
  SUBCASE("truncated anywhere, or one byte changed anywhere") {
    // Either it imports (and verifies) or it throws sgraph::Error naming the file; anything else
    // (another exception, a crash) fails.
    auto check_bytes = [](const std::string& b) {
      try {
        Session s(load_onnx_bytes(b, "test.onnx"));
      } catch (const Error& e) {
        CHECK(contains(e.what(), "test.onnx: "));
      }
    };
    for (const onnx::ModelProto& m : {if_model(), mixed_model()}) {
      const std::string full = m.SerializeAsString();
      for (size_t cut = 0; cut < full.size(); cut += 7) {
        CAPTURE(cut);
        check_bytes(full.substr(0, cut));
      }
      for (size_t at = 0; at < full.size(); ++at) {
        CAPTURE(at);
        for (unsigned char flip : {0x01, 0x04, 0x10, 0x80, 0xff}) {
          std::string changed = full;
          changed[at] = static_cast<char>(changed[at] ^ flip);
          check_bytes(changed);
        }
      }
    }
  }
  SUBCASE("random bytes") {
    for (uint32_t seed = 0; seed < 20; ++seed) {
      std::mt19937 rng(seed);
      std::string junk(64 + seed * 50, '\0');
      for (char& c : junk) c = static_cast<char>(rng());
      CAPTURE(seed);
      const std::string err = error_of([&] { load_onnx_bytes(junk, "junk.onnx"); });
      CHECK(contains(err, "junk.onnx: "));
    }
  }
  SUBCASE("empty") {
    CHECK(contains(error_of([] { load_onnx_bytes("", "e.onnx"); }), "e.onnx: "));
  }
}

TEST_CASE("ONNX import: unsupported ops name the op, domain and opset") {
  const auto in = std::vector{value_info("x", kF32, {2})};
  SUBCASE("unknown op in the default domain") {
    const std::string err = import_error(
        make_model(13, {make_node("FrobNicate", {"x"}, {"y"}, {}, "frob")}, in, {"y"}));
    CHECK(contains(err, "test.onnx: node 'frob' (FrobNicate): "));
    CHECK(contains(err, "ai.onnx"));
    CHECK(contains(err, "opset 13"));
  }
  SUBCASE("unnamed nodes get a name from their op and position") {
    const std::string err = import_error(make_model(
        13, {make_node("Relu", {"x"}, {"r"}), make_node("FrobNicate", {"r"}, {"y"})}, in, {"y"}));
    CHECK(contains(err, "test.onnx: node 'FrobNicate_1' (FrobNicate): "));
  }
  SUBCASE("op from another domain") {
    onnx::ModelProto m = make_model(
        13, {make_node("FusedGemm", {"x", "x"}, {"y"}, {}, "fg", "com.microsoft")}, in, {"y"});
    import_domain(m, "com.microsoft", 1);
    const std::string err = import_error(m);
    CHECK(contains(err, "test.onnx: node 'fg' (FusedGemm): "));
    CHECK(contains(err, "com.microsoft"));
  }
  SUBCASE("a declared but unused domain is ignored") {
    onnx::ModelProto m = make_model(13, {make_node("Relu", {"x"}, {"y"})}, in, {"y"});
    import_domain(m, "com.microsoft", 1);
    import_domain(m, "ai.onnx.ml", 3);
    Session s(load(m));
    check_close(s.run({f32({2}, {-1, 1})})[0], {2}, {0, 1});
  }
  SUBCASE("the default domain spelled ai.onnx") {
    onnx::ModelProto m =
        make_model(13, {make_node("Relu", {"x"}, {"y"}, {}, "", "ai.onnx")}, in, {"y"});
    m.mutable_opset_import(0)->set_domain("ai.onnx");
    check_close(run_model(m, {f32({2}, {-1, 1})})[0], {2}, {0, 1});
  }
  SUBCASE("no default opset import") {
    onnx::ModelProto m = make_model(13, {make_node("Relu", {"x"}, {"y"})}, in, {"y"});
    m.mutable_opset_import(0)->set_domain("com.microsoft");
    const std::string err = import_error(m);
    CHECK(contains(err, "test.onnx: "));
    CHECK(contains(err, "default ONNX opset"));
  }
  SUBCASE("opsets before 7: legacy broadcasting along an axis is rejected") {
    const auto in2 = std::vector{value_info("x", kF32, {2, 3}), value_info("b", kF32, {2})};
    const std::vector legacy = {int_attr("broadcast", 1), int_attr("axis", 0)};
    const std::string err = import_error(
        make_model(6, {make_node("Add", {"x", "b"}, {"y"}, legacy, "add")}, in2, {"y"}));
    CHECK(contains(err, "test.onnx: node 'add' (Add): "));
    CHECK(contains(err, "opset 6"));
    // Without an axis the old broadcasting is numpy's for a trailing operand.
    check_close(run_node(6, make_node("Add", {"x", "c"}, {"y"}, {int_attr("broadcast", 1)}),
                         {iota<float>({2, 3}), f32({3}, {10, 20, 30})})[0],
                {2, 3}, {10, 21, 32, 13, 24, 35});
  }
}

TEST_CASE("ONNX import: attribute, value and graph errors name the file and node") {
  const auto in = std::vector{value_info("x", kF32, {2})};
  SUBCASE("unsupported attribute type") {
    auto sparse = attr_named("sp", onnx::AttributeProto::SPARSE_TENSOR);
    const std::string err =
        import_error(make_model(13, {make_node("Relu", {"x"}, {"y"}, {sparse}, "r")}, in, {"y"}));
    CHECK(contains(err, "test.onnx: node 'r' (Relu): "));
    CHECK(contains(err, "'sp'"));
    CHECK(contains(err, "SPARSE_TENSOR"));
  }
  SUBCASE("Constant without a value") {
    const std::string err = import_error(make_model(
        13, {make_node("Constant", {}, {"k"}, {string_attr("value_string", "hi")}, "k0")}, {},
        {"k"}));
    CHECK(contains(err, "test.onnx: node 'k0' (Constant): "));
  }
  SUBCASE("node input never defined") {
    const std::string err = import_error(
        make_model(13, {make_node("Add", {"x", "ghost"}, {"y"}, {}, "add")}, in, {"y"}));
    CHECK(contains(err, "test.onnx: node 'add' (Add): "));
    CHECK(contains(err, "'ghost'"));
  }
  SUBCASE("an adapted op without its input") {
    for (const std::string op : {"Softmax", "Clip", "Upsample", "Dropout"}) {
      CAPTURE(op);
      const std::string err = import_error(make_model(
          10, {make_node(op, {}, {"y"}, {floats_attr("scales", {1, 2})}, "n0")}, in, {"y"}));
      CHECK(contains(err, "test.onnx: node 'n0' (" + op + "): "));
      CHECK(contains(err, "input 0"));
    }
  }
  SUBCASE("a value defined twice") {
    const std::string err = import_error(
        make_model(13, {make_node("Relu", {"x"}, {"y"}), make_node("Neg", {"x"}, {"y"}, {}, "neg")},
                   in, {"y"}));
    CHECK(contains(err, "test.onnx: node 'neg' (Neg): "));
    CHECK(contains(err, "'y'"));
  }
  SUBCASE("graph output never produced") {
    const std::string err =
        import_error(make_model(13, {make_node("Relu", {"x"}, {"y"})}, in, {"y", "nowhere"}));
    CHECK(contains(err, "test.onnx: "));
    CHECK(contains(err, "'nowhere'"));
  }
  SUBCASE("unsupported element type of an input") {
    const std::string err =
        import_error(make_model(13, {make_node("Relu", {"h"}, {"y"})},
                                {value_info("h", onnx::TensorProto::INT16, {2})}, {"y"}));
    CHECK(contains(err, "test.onnx: "));
    CHECK(contains(err, "'h'"));
    CHECK(contains(err, "code 5"));  // INT16's
  }
  SUBCASE("a node type error") {
    const std::string err =
        import_error(make_model(13, {make_node("MatMul", {"x", "w"}, {"y"}, {}, "mm")}, in, {"y"},
                                {make_tensor("w", iota<float>({3, 4}))}));
    CHECK(contains(err, "test.onnx: node 'mm' (MatMul): "));
  }
}

TEST_CASE("ONNX import: bad initializers name the file and the initializer") {
  const auto in = std::vector{value_info("x", kF32, {2, 2})};
  auto error_with = [&](const onnx::TensorProto& w) {
    return import_error(make_model(13, {make_node("Add", {"x", "w"}, {"y"})}, in, {"y"}, {w}));
  };
  SUBCASE("typed data that does not match the dims") {
    onnx::TensorProto w = tensor_header("w", kF32, {2, 2});
    for (float v : {1.0f, 2.0f, 3.0f}) w.add_float_data(v);
    const std::string err = error_with(w);
    CHECK(contains(err, "test.onnx: "));
    CHECK(contains(err, "'w'"));
    CHECK(contains(err, "[2,2]"));
  }
  SUBCASE("raw data that does not match the dims") {
    onnx::TensorProto w = make_tensor("w", f32({2, 2}, {1, 2, 3, 4}));
    w.set_raw_data(w.raw_data().substr(0, 12));
    const std::string err = error_with(w);
    CHECK(contains(err, "test.onnx: "));
    CHECK(contains(err, "'w'"));
  }
  SUBCASE("huge dims and little data") {
    onnx::TensorProto w = make_tensor("w", f32({1}, {1}));
    w.set_dims(0, int64_t{1} << 40);
    std::string err = error_with(w);
    CHECK(contains(err, "test.onnx: "));
    CHECK(contains(err, "'w'"));
    w.clear_raw_data();
    w.add_float_data(1);
    w.add_dims(int64_t{1} << 40);  // and an element count that overflows
    err = error_with(w);
    CHECK(contains(err, "test.onnx: "));
    CHECK(contains(err, "'w'"));
  }
  SUBCASE("negative dims") {
    onnx::TensorProto w = make_tensor("w", f32({0}, {}));
    w.set_dims(0, -1);
    CHECK(contains(error_with(w), "'w'"));
  }
  SUBCASE("external data") {
    onnx::TensorProto w = tensor_header("w", kF32, {2, 2});
    w.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* e = w.add_external_data();
    e->set_key("location");
    e->set_value("weights.bin");
    const std::string err = error_with(w);
    CHECK(contains(err, "test.onnx: "));
    CHECK(contains(err, "'w'"));
    CHECK(contains(err, "external"));
  }
  SUBCASE("unsupported element type") {
    onnx::TensorProto w = tensor_header("w", onnx::TensorProto::INT16, {2, 2});
    w.set_raw_data(std::string(8, '\0'));
    const std::string err = error_with(w);
    CHECK(contains(err, "test.onnx: "));
    CHECK(contains(err, "'w'"));
  }
  SUBCASE("unnamed initializer") {
    CHECK(contains(error_with(make_tensor("", f32({1}, {1}))), "test.onnx: "));
  }
}

TEST_CASE("ONNX import: the training optimizers come from domain ai.onnx.preview.training") {
  const std::string kTraining = "ai.onnx.preview.training";
  const auto in =
      std::vector{value_info("r", kF32, {}), value_info("t", kI64, {}), value_info("x", kF32, {1}),
                  value_info("g", kF32, {1}), value_info("h", kF32, {1})};
  const std::vector attrs = {float_attr("epsilon", 0)};
  auto adagrad = [&](const std::string& domain) {
    return make_node("Adagrad", {"r", "t", "x", "g", "h"}, {"x_new", "h_new"}, attrs, "step",
                     domain);
  };
  SUBCASE("a model importing that domain only") {
    onnx::ModelProto m = make_model(13, {adagrad(kTraining)}, in, {"x_new", "h_new"});
    m.mutable_opset_import(0)->set_domain(kTraining);
    m.mutable_opset_import(0)->set_version(1);
    // H_new = 0 + 3^2 = 9; X_new = 1 - 0.5 * 3 / 3.
    const auto out = run_model(m, {Tensor::scalar(0.5f), Tensor::scalar(int64_t{0}), f32({1}, {1}),
                                   f32({1}, {3}), f32({1}, {0})});
    check_close(out[0], {1}, {0.5});
    check_close(out[1], {1}, {9});
  }
  SUBCASE("not from the default domain") {
    const std::string err = import_error(make_model(13, {adagrad("")}, in, {"x_new", "h_new"}));
    CHECK(contains(err,
                   "node 'step' (Adagrad): unsupported op 'Adagrad' (domain ai.onnx, opset 13)"));
  }
  SUBCASE("the domain must be imported, at version 1") {
    CHECK(contains(import_error(make_model(13, {adagrad(kTraining)}, in, {"x_new", "h_new"})),
                   "node 'step' (Adagrad): the model does not import domain "
                   "'ai.onnx.preview.training'"));
    onnx::ModelProto m = make_model(13, {adagrad(kTraining)}, in, {"x_new", "h_new"});
    import_domain(m, kTraining, 2);
    CHECK(contains(import_error(m),
                   "the model imports domain 'ai.onnx.preview.training' at "
                   "version 2; sgraph knows its version 1 only"));
  }
  SUBCASE("default-domain ops are not in it") {
    onnx::ModelProto m =
        make_model(13, {make_node("Relu", {"x"}, {"y"}, {}, "relu", kTraining)}, in, {"y"});
    import_domain(m, kTraining, 1);
    CHECK(contains(import_error(m),
                   "node 'relu' (Relu): unsupported op 'Relu' from domain "
                   "'ai.onnx.preview.training'"));
  }
}
