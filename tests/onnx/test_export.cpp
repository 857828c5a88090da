// ONNX export: save_onnx_bytes then load_onnx_bytes gives the graph back — the shared test models
// (../shared/testdata) with bitwise the same interpreted outputs, builder-made graphs (older op
// forms, If branches whose names collide with the outer graph's), node groups written as
// model-local functions; the importer's inlining of model-local functions on hand-made models
// (a function called twice, nested calls, recursion, attribute references, the function's own
// opset); metadata_props both ways.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "onnx/proto_builder.h"

using namespace sgraph;
using namespace sgraph::test;
namespace fs = std::filesystem;

namespace {

const std::string kTestData = SGRAPH_SOURCE_DIR "/../shared/testdata";

std::string model_dir(const std::string& name) {
  REQUIRE_MESSAGE(fs::is_directory(kTestData), "shared testdata missing at " << kTestData);
  return kTestData + "/" + name;
}

Graph round_trip(const Graph& g, const OnnxSaveOptions& options = {}) {
  return load_onnx_bytes(save_onnx_bytes(g, options), g.name + " (exported)");
}

onnx::ModelProto exported(const Graph& g, const OnnxSaveOptions& options = {}) {
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(save_onnx_bytes(g, options)));
  return m;
}

std::vector<std::string> names_of(const Graph& g, const std::vector<ValueId>& ids) {
  std::vector<std::string> out;
  for (ValueId v : ids) out.push_back(v == kNoValue ? "_" : g.value(v).name);
  return out;
}

// Each node by name: its op, input and output names and attributes (branches printed whole), so
// graphs whose nodes are in another order compare equal.
std::map<std::string, std::string> node_table(const Graph& g) {
  std::map<std::string, std::string> t;
  for (const Node& n : g.nodes) {
    std::string s = std::string(op_name(n.op)) + "(";
    for (const std::string& i : names_of(g, n.inputs)) s += i + ",";
    s += ") -> ";
    for (const std::string& o : names_of(g, n.outputs)) s += o + ",";
    for (const auto& [k, v] : n.attrs) {
      const auto* sub = std::get_if<std::shared_ptr<const Graph>>(&v);
      s += " " + k + "=" + (sub ? (*sub)->to_string() : attr_str(v));
    }
    CHECK_MESSAGE(t.emplace(n.name, s).second, "node name " << n.name << " repeats");
  }
  return t;
}

void check_same_nodes(const Graph& a, const Graph& b) {
  const auto ta = node_table(a), tb = node_table(b);
  CHECK(ta.size() == tb.size());
  for (const auto& [name, s] : ta) {
    const auto it = tb.find(name);
    if (it == tb.end()) {
      FAIL_CHECK("node " << name << " is missing after the round trip");
      continue;
    }
    CHECK_MESSAGE(it->second == s, "node " << name << ":\n  " << s << "\n  " << it->second);
  }
  CHECK(names_of(a, a.inputs) == names_of(b, b.inputs));
  CHECK(names_of(a, a.outputs) == names_of(b, b.outputs));
}

void check_bitwise(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    REQUIRE(got[i].dtype() == want[i].dtype());
    REQUIRE(got[i].shape() == want[i].shape());
    CHECK(std::memcmp(got[i].raw_data(), want[i].raw_data(), got[i].nbytes()) == 0);
  }
}

// Both graphs interpreted on every data set of `dir` (at most `max_sets`): bitwise equal outputs.
void check_same_outputs(const Graph& a, const Graph& b, const std::string& dir,
                        size_t max_sets = 100) {
  Session sa(a, SessionOptions{.interpret_only = true});
  Session sb(b, SessionOptions{.interpret_only = true});
  const auto sets = load_data_set_inputs(dir);
  REQUIRE(!sets.empty());
  for (size_t k = 0; k < sets.size() && k < max_sets; ++k) {
    CAPTURE(k);
    check_bitwise(sb.run(sets[k]), sa.run(sets[k]));
  }
}

const char* const kModels[] = {"real/owwjs_hello_deepa",      "real/ppocr_mobile_v2_cls",
                               "real/silero_vad_legacy",      "real/silero_vad_v5",
                               "synthetic/cnn_bn_gap",        "synthetic/mlp3",
                               "synthetic/small_cnn",         "synthetic/text_encoder",
                               "synthetic/tiny_causal_block", "synthetic/tiny_encoder_block"};

// The groups the tests write as functions: `count` runs of up to `size` consecutive nodes spread
// over the node list (consecutive nodes of a topological order contract without a cycle).
std::vector<std::vector<int32_t>> spread_groups(const Graph& g, int count, int size) {
  std::vector<std::vector<int32_t>> groups;
  const auto n = static_cast<int32_t>(g.nodes.size());
  for (int k = 0; k < count; ++k) {
    std::vector<int32_t> group;
    for (int32_t i = k * n / count; i < (k + 1) * n / count && i < k * n / count + size; ++i)
      group.push_back(i);
    if (!group.empty()) groups.push_back(std::move(group));
  }
  return groups;
}

}  // namespace

// ---- the shared test models ------------------------------------------------------------------

TEST_CASE("ONNX export: each shared test model comes back the same, with the same outputs") {
  for (const char* name : kModels) {
    CAPTURE(name);
    const std::string dir = model_dir(name);
    const Graph g = load_onnx(dir + "/model.onnx");
    const Graph back = round_trip(g);
    if (std::string(name) == "real/ppocr_mobile_v2_cls") {
      // Opset 9: its Slice-1 keeps starts/ends/axes as attributes, which opset 17 takes as
      // inputs; the exported form is then a fixed point.
      CHECK(back.to_string() != g.to_string());
      CHECK(round_trip(back).to_string() == back.to_string());
      const auto ta = node_table(g), tb = node_table(back);
      REQUIRE(ta.size() == tb.size());
      std::vector<std::string> changed;
      for (const auto& [node, s] : ta)
        if (tb.at(node) != s) changed.push_back(node);
      CHECK(changed == std::vector<std::string>{"p2o.Slice.0"});
      CHECK(back.find_value("p2o.Slice.0/starts") != kNoValue);
    } else {
      CHECK(back.to_string() == g.to_string());
      check_same_nodes(g, back);
    }
    CHECK(back.name == g.name);
    for (const auto& [key, value] : g.metadata)
      if (key != "onnx.opset" && key != "onnx.producer") CHECK(back.metadata.at(key) == value);
    CHECK(back.metadata.at("onnx.opset") == "17");
    CHECK(back.metadata.at("onnx.producer").rfind("sgraph ", 0) == 0);
    check_same_outputs(g, back, dir);
  }
}

TEST_CASE("ONNX export: shared test models with node groups as functions come back the same") {
  for (const char* name : {"real/silero_vad_v5", "real/owwjs_hello_deepa",
                           "synthetic/tiny_encoder_block", "synthetic/text_encoder"}) {
    CAPTURE(name);
    const std::string dir = model_dir(name);
    const Graph g = load_onnx(dir + "/model.onnx");
    OnnxSaveOptions options;
    options.functions = spread_groups(g, 3, 12);
    const onnx::ModelProto m = exported(g, options);
    CHECK(m.functions_size() == static_cast<int>(options.functions.size()));
    size_t grouped = 0;
    for (const auto& group : options.functions) grouped += group.size();
    CHECK(m.graph().node_size() ==
          static_cast<int>(g.nodes.size() - grouped + options.functions.size()));
    const Graph back = load_onnx_bytes(m.SerializeAsString(), name);
    check_same_nodes(g, back);
    check_same_outputs(g, back, dir, 2);
  }
}

// ---- builder-made graphs -----------------------------------------------------------------------

namespace {

// x[n,4] -> matmul -> relu, sigmoid -> add -> tanh -> mul x -> y (and relu -> r).
// Nodes: 0 matmul, 1 relu, 2 sigmoid, 3 add, 4 tanh, 5 mul.
Graph two_branch_graph() {
  GraphBuilder b("two_branch");
  const ValueId x = b.input("x", DType::f32, {Dim("n"), 4});
  const ValueId w = b.constant("w", random_f32({4, 4}, 7));
  const ValueId h = b.matmul(x, w);
  const ValueId r = b.relu(h);
  const ValueId s = b.sigmoid(h);
  const ValueId t = b.tanh(b.add(r, s));
  b.output(b.mul(t, x), "y");
  b.output(r, "r");
  return b.build();
}

}  // namespace

TEST_CASE("ONNX export: two node groups become two model-local functions and come back") {
  const Graph g = two_branch_graph();
  OnnxSaveOptions options;
  options.functions = {{0, 1}, {3, 4}};
  options.function_names = {"front"};
  const onnx::ModelProto m = exported(g, options);
  CHECK(m.ir_version() == 8);
  REQUIRE(m.functions_size() == 2);
  const onnx::FunctionProto& f0 = m.functions(0);
  const onnx::FunctionProto& f1 = m.functions(1);
  CHECK(f0.domain() == "sgraph.region");
  CHECK(f0.name() == "front");
  CHECK(f1.name() == "region_1");
  CHECK(std::vector<std::string>(f0.input().begin(), f0.input().end()) ==
        std::vector<std::string>{"x", "w"});
  CHECK(std::vector<std::string>(f0.output().begin(), f0.output().end()) ==
        std::vector<std::string>{"matmul_0", "r"});
  CHECK(std::vector<std::string>(f1.input().begin(), f1.input().end()) ==
        std::vector<std::string>{"r", "sigmoid_0"});
  CHECK(std::vector<std::string>(f1.output().begin(), f1.output().end()) ==
        std::vector<std::string>{"tanh_0"});
  CHECK(f0.node_size() == 2);
  bool imports_domain = false;
  for (const auto& o : m.opset_import()) imports_domain |= o.domain() == "sgraph.region";
  CHECK(imports_domain);
  // The graph: front, sigmoid, region_1, mul (a topological order of the contracted graph).
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node()) ops.push_back(n.op_type());
  CHECK(ops == std::vector<std::string>{"front", "Sigmoid", "region_1", "Mul"});

  const Graph back = load_onnx_bytes(m.SerializeAsString(), "grouped.onnx");
  check_same_nodes(g, back);
  const Tensor x = random_f32({3, 4}, 11);
  Session a(g, SessionOptions{.interpret_only = true});
  Session b(back, SessionOptions{.interpret_only = true});
  check_bitwise(b.run({x}), a.run({x}));
}

TEST_CASE("ONNX export: groups that overlap, make a cycle or are malformed are errors") {
  const Graph g = two_branch_graph();
  auto error = [&](std::vector<std::vector<int32_t>> groups, Strings names = {}) {
    OnnxSaveOptions options;
    options.functions = std::move(groups);
    options.function_names = std::move(names);
    return error_of([&] { save_onnx_bytes(g, options); });
  };
  // matmul -> sigmoid (outside) -> add: contracting {matmul, add} would be a cycle.
  CHECK(contains(error({{0, 3}}), "cannot be contracted without a cycle"));
  CHECK(contains(error({{1}, {0, 3}}), "groups {1}"));
  CHECK(contains(error({{0, 1}, {1, 2}}),
                 "node 'r' (index 1) is in function group 0 and in "
                 "group 1: groups must be disjoint"));
  CHECK(contains(error({{2, 2}}), "groups must be disjoint"));
  CHECK(contains(error({{0}, {}}), "function group 1 is empty"));
  CHECK(contains(error({{0, 9}}), "lists node index 9, but the graph has 6 nodes"));
  CHECK(contains(error({{0}, {1}}, {"f", "f"}), "the same name 'f'"));
  CHECK(contains(error({{0}}, {"a", "b"}), "function_names has 2 names for 1 function groups"));
  CHECK(error({{0, 1, 2, 3, 4, 5}}).empty());  // the whole graph is one group
}

TEST_CASE("ONNX export: onnx_names keeps unique names and makes the others unique") {
  Graph g;
  g.add_value("a", DType::f32, DimList{2});
  g.add_value("", DType::f32, DimList{2});
  g.add_value("a", DType::f32, DimList{2});
  g.add_value("a_1", DType::f32, DimList{2});
  g.inputs = {0};
  g.add_node(Node{OpKind::Relu, "n", {0}, {1}, {}});
  g.add_node(Node{OpKind::Relu, "", {1}, {2}, {}});
  g.add_node(Node{OpKind::Relu, "n", {2}, {3}, {}});
  g.outputs = {3};
  const OnnxNames names = onnx_names(g);
  CHECK(names.values == std::vector<std::string>{"a", "value_1", "a_2", "a_1"});
  CHECK(names.nodes == std::vector<std::string>{"n", "Relu_1", "n_1"});
  // The file uses those names, and reads back with them.
  const Graph back = round_trip(g);
  CHECK(names_of(back, back.outputs) == std::vector<std::string>{"a_1"});
  CHECK(back.find_value("a_2") != kNoValue);
  CHECK(back.nodes.at(1).name == "Relu_1");
}

TEST_CASE("ONNX export: opset 17 unless a node needs 18, older op forms become inputs") {
  GraphBuilder b("forms");
  const ValueId x = b.input("x", DType::f32, {2, 3, 4});
  // The opset-1 Slice and opset-11 Squeeze/Unsqueeze/Split/ReduceSum forms, attributes only.
  const ValueId sl =
      b.slice(x, Attributes{{"starts", Ints{0, 1}}, {"ends", Ints{1, 3}}, {"axes", Ints{0, 2}}});
  const ValueId sq = b.squeeze(sl, Attributes{{"axes", Ints{0}}});
  const ValueId un = b.unsqueeze(sq, Attributes{{"axes", Ints{0}}});
  const auto parts = b.node(OpKind::Split, {un}, {{"axis", int64_t{1}}, {"split", Ints{1, 2}}}, 2);
  const ValueId rs =
      b.reduce_sum(parts[1], Attributes{{"axes", Ints{1}}, {"keepdims", int64_t{0}}});
  const ValueId rm = b.reduce_mean(x, Attributes{{"axes", Ints{2}}});
  const ValueId pd = b.pad(rs, Attributes{{"pads", Ints{1, 0, 0, 1}}, {"value", 2.5}});
  b.output(pd, "pd");
  b.output(parts[0], "p0");
  b.output(rm, "rm");
  const Graph g = b.build();

  onnx::ModelProto m = exported(g);
  REQUIRE(m.opset_import_size() == 1);
  CHECK(m.opset_import(0).version() == 17);
  std::map<std::string, const onnx::NodeProto*> by_op;
  for (const auto& n : m.graph().node()) by_op[n.op_type()] = &n;
  CHECK(by_op.at("Slice")->input_size() == 4);
  CHECK(by_op.at("Slice")->attribute_size() == 0);
  CHECK(by_op.at("Squeeze")->input_size() == 2);
  CHECK(by_op.at("Split")->input_size() == 2);
  CHECK(by_op.at("ReduceSum")->input_size() == 2);
  CHECK(by_op.at("Pad")->input_size() == 3);
  CHECK(by_op.at("ReduceMean")->input_size() == 1);  // opset 17: axes stays an attribute
  CHECK(by_op.at("Constant")->output(0).find('/') != std::string::npos);
  const Graph back = load_onnx_bytes(m.SerializeAsString(), "forms.onnx");
  CHECK(back.find_value("slice_0/starts") != kNoValue);
  CHECK(back.find_value("pd/value") != kNoValue);
  CHECK(round_trip(back).to_string() == back.to_string());
  const Tensor in = random_f32({2, 3, 4}, 3);
  Session sa(g, SessionOptions{.interpret_only = true});
  Session sb(back, SessionOptions{.interpret_only = true});
  check_bitwise(sb.run({in}), sa.run({in}));

  // Mish exists from opset 18 on, where ReduceMean takes its axes as an input too.
  GraphBuilder b18("mish");
  const ValueId y = b18.input("y", DType::f32, {2, 3});
  b18.output(b18.reduce_mean(b18.mish(y), Attributes{{"axes", Ints{1}}}), "out");
  const Graph g18 = b18.build();
  m = exported(g18);
  CHECK(m.opset_import(0).version() == 18);
  for (const auto& n : m.graph().node())
    if (n.op_type() == "ReduceMean") CHECK(n.input_size() == 2);
  const Graph back18 = round_trip(g18);
  const Tensor in18 = random_f32({2, 3}, 4);
  Session s1(g18, SessionOptions{.interpret_only = true});
  Session s2(back18, SessionOptions{.interpret_only = true});
  check_bitwise(s2.run({in18}), s1.run({in18}));
}

TEST_CASE("ONNX export: a Pad-2 value out of an integer tensor's range saturates as interpreted") {
  // The exported constant_value input is converted as the interpreter converts the attribute:
  // saturated to the integer type's range (a plain cast is undefined there), NaN to 0.
  const std::vector<std::pair<double, int32_t>> cases = {
      {1e12, INT32_MAX}, {-1e12, INT32_MIN}, {std::nan(""), 0}, {-7.9, -7}};
  for (const auto& [value, want] : cases) {
    CAPTURE(value);
    GraphBuilder b("pad_int");
    const ValueId x = b.input("x", DType::i32, {2, 2});
    b.output(b.pad(x, Attributes{{"pads", Ints{0, 1, 0, 0}}, {"value", value}}), "y");
    const Graph g = b.build();
    const Graph back = round_trip(g);
    const Tensor in = Tensor::from<int32_t>({2, 2}, {1, 2, 3, 4});
    Session sa(g, SessionOptions{.interpret_only = true});
    Session sb(back, SessionOptions{.interpret_only = true});
    const std::vector<Tensor> ya = sa.run({in}), yb = sb.run({in});
    REQUIRE(ya.at(0).shape() == Shape{2, 3});
    CHECK(ya.at(0).data<int32_t>()[0] == want);  // the padded column
    CHECK(ya.at(0).data<int32_t>()[1] == 1);
    check_bitwise(yb, ya);
  }
}

TEST_CASE("ONNX export: If branches read outer values by name and never shadow them") {
  // then: x_in * y_in, in a value named "x" (the outer input's name); else: returns its input.
  GraphBuilder tb("then");
  const ValueId ta = tb.input("x_in", DType::f32, {2});
  const ValueId tbv = tb.input("y_in", DType::f32, {2});
  tb.output(tb.mul(ta, tbv), "x");
  GraphBuilder eb("else");
  const ValueId ea = eb.input("x_in", DType::f32, {2});
  eb.input("y_in", DType::f32, {2});
  eb.output(ea);
  GraphBuilder b("branches");
  const ValueId cond = b.input("cond", DType::boolean, {});
  const ValueId x = b.input("x", DType::f32, {2});
  const ValueId y = b.input("y", DType::f32, {2});
  const auto out = b.node(OpKind::If, {cond, x, y},
                          {{"then_branch", std::make_shared<const Graph>(tb.build())},
                           {"else_branch", std::make_shared<const Graph>(eb.build())}},
                          1, "choose");
  b.output(out[0], "out");
  const Graph g = b.build();

  const onnx::ModelProto m = exported(g);
  REQUIRE(m.graph().node_size() == 1);
  const onnx::NodeProto& n = m.graph().node(0);
  CHECK(n.input_size() == 1);  // the condition; the branches read x and y by name
  for (const auto& a : n.attribute()) {
    CAPTURE(a.name());
    CHECK(a.g().input_size() == 0);
    for (const auto& bn : a.g().node()) {
      for (const std::string& i : bn.input()) CHECK((i == "x" || i == "y"));
      for (const std::string& o : bn.output()) CHECK((o != "x" && o != "y" && o != "cond"));
    }
  }
  // The else branch returns outer x through an Identity (ONNX Runtime rejects it otherwise).
  for (const auto& a : n.attribute())
    if (a.name() == "else_branch") {
      REQUIRE(a.g().node_size() == 1);
      CHECK(a.g().node(0).op_type() == "Identity");
      CHECK(a.g().output(0).name() == a.g().node(0).output(0));
    }
  const Graph back = load_onnx_bytes(m.SerializeAsString(), "branches.onnx");
  CHECK(back.nodes.at(0).attrs.get_graph("then_branch").find_value("x_1") != kNoValue);
  Session sa(g, SessionOptions{.interpret_only = true});
  Session sb(back, SessionOptions{.interpret_only = true});
  const Tensor xv = f32({2}, {1.5f, -2}), yv = f32({2}, {3, 4});
  for (bool c : {true, false})
    check_bitwise(sb.run({Tensor::scalar(c), xv, yv}), sa.run({Tensor::scalar(c), xv, yv}));
  // An If inside a function group: the body's branches read the body's names.
  OnnxSaveOptions options;
  options.functions = {{0}};
  const Graph grouped = round_trip(g, options);
  Session sc(grouped, SessionOptions{.interpret_only = true});
  for (bool c : {true, false})
    check_bitwise(sc.run({Tensor::scalar(c), xv, yv}), sa.run({Tensor::scalar(c), xv, yv}));
}

TEST_CASE("ONNX export: an attribute with no ONNX form is an error naming the node and op") {
  GraphBuilder sub("sub");
  sub.output(sub.relu(sub.input("s", DType::f32, {1})));
  GraphBuilder b("bad");
  const ValueId x = b.input("x", DType::f32, {1});
  b.output(b.relu(x, Attributes{{"body", std::make_shared<const Graph>(sub.build())}}));
  const Graph g = b.build();
  const std::string e = error_of([&] { save_onnx_bytes(g); });
  CHECK(contains(e, "node 'relu_0' (Relu): graph attribute 'body' has no ONNX form"));
}

TEST_CASE("ONNX export: metadata goes to metadata_props and back") {
  Graph g = two_branch_graph();
  g.metadata["author"] = "sgraph tests";
  g.metadata["sgraph.warmup_record"] = "{\"x\": 1}";
  g.metadata["onnx.opset"] = "9";  // the importer's own keys win over the file's
  const onnx::ModelProto m = exported(g);
  std::map<std::string, std::string> props;
  for (const auto& p : m.metadata_props()) props[p.key()] = p.value();
  CHECK(props == std::map<std::string, std::string>(g.metadata.begin(), g.metadata.end()));
  CHECK(m.graph().name() == "two_branch");
  const Graph back = round_trip(g);
  CHECK(back.metadata.at("author") == "sgraph tests");
  CHECK(back.metadata.at("sgraph.warmup_record") == "{\"x\": 1}");
  CHECK(back.metadata.at("onnx.opset") == "17");
  CHECK(back.name == "two_branch");
}

// ---- importing model-local functions -----------------------------------------------------------

namespace {

onnx::FunctionProto make_function(const std::string& domain, const std::string& name,
                                  const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& outputs,
                                  const std::vector<onnx::NodeProto>& nodes, int64_t opset = 13) {
  onnx::FunctionProto f;
  f.set_domain(domain);
  f.set_name(name);
  for (const auto& i : inputs) f.add_input(i);
  for (const auto& o : outputs) f.add_output(o);
  for (const auto& n : nodes) *f.add_node() = n;
  auto* op = f.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  return f;
}

// sqplus(x) = x * x + x, in domain "local".
onnx::FunctionProto sqplus() {
  return make_function("local", "sqplus", {"x"}, {"y"},
                       {make_node("Mul", {"x", "x"}, {"t"}, {}, "sq"),
                        make_node("Add", {"t", "x"}, {"y"}, {}, "add")});
}

onnx::ModelProto with_functions(onnx::ModelProto m, const std::vector<onnx::FunctionProto>& fs) {
  for (const auto& f : fs) *m.add_functions() = f;
  auto* op = m.add_opset_import();
  op->set_domain("local");
  op->set_version(1);
  return m;
}

}  // namespace

TEST_CASE(
    "ONNX import: a local function called twice is inlined, the second call's names prefixed") {
  const onnx::ModelProto m =
      with_functions(make_model(13,
                                {make_node("sqplus", {"in"}, {"a"}, {}, "call1", "local"),
                                 make_node("sqplus", {"a"}, {"b"}, {}, "call2", "local")},
                                {value_info("in", kF32, {2})}, {"b"}),
                     {sqplus()});
  const Graph g = load(m);
  std::vector<std::string> nodes;
  for (const Node& n : g.nodes) nodes.push_back(n.name + "=" + std::string(op_name(n.op)));
  CHECK(nodes == std::vector<std::string>{"sq=Mul", "add=Add", "call2/sq=Mul", "call2/add=Add"});
  std::vector<std::string> outs;
  for (const Node& n : g.nodes) outs.push_back(g.value(n.outputs[0]).name);
  CHECK(outs == std::vector<std::string>{"t", "a", "call2/t", "b"});
  Session s(g, SessionOptions{.interpret_only = true});
  check_close(s.run({f32({2}, {1, 2})})[0], {2}, {6, 42});  // a = 2, 6; b = 6, 42
}

TEST_CASE(
    "ONNX import: nested local function calls are inlined, names prefixed where they collide") {
  // outer(p) = -sqplus(p), calling sqplus as node "inner"; the model has a node "sq" of its own.
  const onnx::FunctionProto outer =
      make_function("local", "outer", {"p"}, {"q"},
                    {make_node("sqplus", {"p"}, {"u"}, {}, "inner", "local"),
                     make_node("Neg", {"u"}, {"q"}, {}, "neg")});
  const onnx::ModelProto m =
      with_functions(make_model(13,
                                {make_node("Relu", {"in"}, {"t"}, {}, "sq"),
                                 make_node("outer", {"t"}, {"out"}, {}, "call", "local")},
                                {value_info("in", kF32, {2})}, {"out"}),
                     {outer, sqplus()});
  const Graph g = load(m);
  std::vector<std::string> nodes;
  for (const Node& n : g.nodes) nodes.push_back(n.name);
  CHECK(nodes == std::vector<std::string>{"sq", "inner/sq", "add", "neg"});
  CHECK(g.find_value("inner/t") != kNoValue);  // "t" is the model's own value
  CHECK(g.find_value("u") != kNoValue);
  Session s(g, SessionOptions{.interpret_only = true});
  check_close(s.run({f32({2}, {-1, 2})})[0], {2}, {0, -6});
}

TEST_CASE("ONNX import: recursive local functions are an error, not a crash") {
  const onnx::FunctionProto self = make_function(
      "local", "self", {"x"}, {"y"}, {make_node("self", {"x"}, {"y"}, {}, "again", "local")});
  const std::string e1 = import_error(
      with_functions(make_model(13, {make_node("self", {"in"}, {"out"}, {}, "call", "local")},
                                {value_info("in", kF32, {2})}, {"out"}),
                     {self}));
  CHECK(contains(e1, "test.onnx: "));
  CHECK(contains(e1, "model-local function 'local.self' calls itself (local.self -> local.self)"));
  const onnx::FunctionProto ping = make_function(
      "local", "ping", {"x"}, {"y"}, {make_node("pong", {"x"}, {"y"}, {}, "", "local")});
  const onnx::FunctionProto pong = make_function(
      "local", "pong", {"x"}, {"y"}, {make_node("ping", {"x"}, {"y"}, {}, "", "local")});
  const std::string e2 = import_error(
      with_functions(make_model(13, {make_node("ping", {"in"}, {"out"}, {}, "call", "local")},
                                {value_info("in", kF32, {2})}, {"out"}),
                     {ping, pong}));
  CHECK(contains(e2, "calls itself (local.ping -> local.pong -> local.ping)"));
}

TEST_CASE("ONNX import: local function errors and edge cases") {
  const auto model = [](std::vector<onnx::NodeProto> nodes, std::vector<onnx::FunctionProto> fs) {
    return with_functions(make_model(13, std::move(nodes), {value_info("in", kF32, {2})}, {"out"}),
                          fs);
  };
  // An attribute taken from the call's attributes.
  onnx::NodeProto leaky = make_node("LeakyRelu", {"x"}, {"y"}, {}, "lr");
  onnx::AttributeProto ref = float_attr("alpha", 0.1f);
  ref.set_ref_attr_name("slope");
  *leaky.add_attribute() = ref;
  onnx::FunctionProto with_ref = make_function("local", "f", {"x"}, {"y"}, {leaky});
  with_ref.add_attribute("slope");
  CHECK(
      contains(import_error(model({make_node("f", {"in"}, {"out"}, {}, "c", "local")}, {with_ref})),
               "attribute 'alpha' of node 'lr' refers to the function's attribute 'slope' "
               "(attributes of model-local functions are not supported)"));
  // A body reading a name that is not its own.
  const onnx::FunctionProto leaks =
      make_function("local", "g", {"x"}, {"y"}, {make_node("Add", {"x", "in"}, {"y"}, {}, "add")});
  CHECK(contains(import_error(model({make_node("g", {"in"}, {"out"}, {}, "c", "local")}, {leaks})),
                 "node 'add' reads 'in', which is neither an input of the function"));
  // An unknown op of another domain still says so.
  CHECK(
      contains(import_error(model({make_node("h", {"in"}, {"out"}, {}, "c", "other")}, {sqplus()})),
               "unsupported op 'h' from domain 'other'"));
  // A function returning its input as is, and one value twice.
  const onnx::FunctionProto pass = make_function(
      "local", "pass", {"x"}, {"y", "z"},
      {make_node("Relu", {"x"}, {"r"}, {}, "relu"), make_node("Identity", {"x"}, {"y"}, {}, "id")});
  onnx::FunctionProto twice = pass;
  twice.set_name("twice");
  twice.clear_output();
  twice.add_output("x");
  twice.add_output("r");
  const Graph g =
      load(model({make_node("twice", {"in"}, {"out", "o2"}, {}, "c", "local")}, {twice}));
  Session s(g, SessionOptions{.interpret_only = true});
  check_close(s.run({f32({2}, {-1, 2})})[0], {2}, {-1, 2});
  // The function's opset decides its body's op versions: Softmax-11 coerces to 2-D.
  const onnx::FunctionProto soft =
      make_function("local", "soft", {"x"}, {"y"},
                    {make_node("Softmax", {"x"}, {"y"}, {int_attr("axis", 0)}, "softmax")}, 11);
  const Graph gs = load(model({make_node("soft", {"in"}, {"out"}, {}, "c", "local")}, {soft}));
  CHECK(std::any_of(gs.nodes.begin(), gs.nodes.end(),
                    [](const Node& n) { return n.op == OpKind::Flatten; }));
  // The model's own import keys win over metadata_props; other keys are kept.
  onnx::ModelProto md = model({make_node("Relu", {"in"}, {"out"})}, {});
  for (auto [k, v] : {std::pair{"onnx.opset", "3"}, std::pair{"license", "MIT"}}) {
    auto* p = md.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  const Graph gm = load(md);
  CHECK(gm.metadata.at("onnx.opset") == "13");
  CHECK(gm.metadata.at("license") == "MIT");
}

// ---- ONNX's node conformance models ----------------------------------------------------------

TEST_CASE("ONNX export: every ONNX node test model sgraph loads round-trips to the same outputs") {
  const std::string root = "/usr/share/libonnx-testdata/data/node";
  REQUIRE_MESSAGE(fs::is_directory(root), root << " missing (apt-get install libonnx-testdata)");
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path().string());
  std::sort(dirs.begin(), dirs.end());
  int loaded = 0, same = 0, not_run = 0;
  std::vector<std::string> failures;
  for (const std::string& dir : dirs) {
    Graph g;
    std::vector<std::vector<Tensor>> sets;
    std::vector<std::vector<Tensor>> want;
    try {
      g = load_onnx(dir + "/model.onnx");
      sets = load_data_set_inputs(dir);
      Session s(g, SessionOptions{.interpret_only = true});
      for (const auto& in : sets) want.push_back(s.run(in));
    } catch (const Error&) {
      ++not_run;  // sgraph does not load or run it: nothing to compare
      continue;
    }
    ++loaded;
    try {
      const Graph back = round_trip(g);
      Session s(back, SessionOptions{.interpret_only = true});
      bool ok = true;
      for (size_t k = 0; k < sets.size(); ++k) {
        const std::vector<Tensor> got = s.run(sets[k]);
        ok = ok && got.size() == want[k].size();
        for (size_t i = 0; ok && i < got.size(); ++i)
          ok = got[i].dtype() == want[k][i].dtype() && got[i].shape() == want[k][i].shape() &&
               std::memcmp(got[i].raw_data(), want[k][i].raw_data(), got[i].nbytes()) == 0;
      }
      if (ok)
        ++same;
      else
        failures.push_back(fs::path(dir).filename().string() + ": outputs differ");
    } catch (const Error& e) {
      failures.push_back(fs::path(dir).filename().string() + ": " + e.what());
    }
  }
  MESSAGE(same << " of " << loaded << " node test models that sgraph runs give bitwise the same "
               << "outputs after export and re-import (" << not_run << " it does not run)");
  for (const std::string& f : failures) MESSAGE(f);
  CHECK(loaded > 500);
  CHECK(failures.empty());
}

TEST_CASE("ONNX export: ops of another domain keep it, and the model imports it") {
  GraphBuilder b("momentum");
  const ValueId r = b.input("r", DType::f32, {});
  const ValueId t = b.input("t", DType::i64, {});
  const ValueId x = b.input("x", DType::f32, {2});
  const ValueId g = b.input("g", DType::f32, {2});
  const ValueId v = b.input("v", DType::f32, {2});
  const Attributes a{
      {"alpha", 0.5}, {"beta", 0.25}, {"norm_coefficient", 0.0}, {"mode", std::string("nesterov")}};
  for (ValueId o : b.node(OpKind::Momentum, {r, t, x, g, v}, a, 2, "step")) b.output(o);
  const Graph graph = b.build();
  const onnx::ModelProto m = exported(graph);
  REQUIRE(m.graph().node_size() == 1);
  CHECK(m.graph().node(0).domain() == "ai.onnx.preview.training");
  int64_t version = 0;
  for (const auto& o : m.opset_import())
    if (o.domain() == "ai.onnx.preview.training") version = o.version();
  CHECK(version == 1);
  const Graph back = load_onnx_bytes(m.SerializeAsString(), "momentum.onnx");
  check_same_nodes(graph, back);
  const std::vector<Tensor> in{Tensor::scalar(0.1f), Tensor::scalar(int64_t{1}), f32({2}, {1, 2}),
                               f32({2}, {2, 4}), f32({2}, {2, -2})};
  Session s0(graph, SessionOptions{.interpret_only = true});
  Session s1(back, SessionOptions{.interpret_only = true});
  check_bitwise(s1.run(in), s0.run(in));
}
