// The backend-test folder runner: telling unknown ops from load errors, and replaying a folder's
// data sets through compiled kernels.
#include <fstream>

#include "onnx/backend_test.h"
#include "onnx/proto_builder.h"

using namespace sgraph;
using namespace sgraph::test;
namespace fs = std::filesystem;

namespace {

// A backend-test folder (model.onnx, test_data_set_0/) in the temp directory, removed at the end.
struct TestFolder {
  TempPath name{"_backend_test"};
  std::string dir = name.str();

  TestFolder(const onnx::ModelProto& m, const std::vector<Tensor>& inputs,
             const std::vector<Tensor>& outputs) {
    fs::create_directories(dir + "/test_data_set_0");
    std::ofstream(dir + "/model.onnx", std::ios::binary) << m.SerializeAsString();
    for (size_t i = 0; i < inputs.size(); ++i)
      save_tensor_pb(inputs[i], dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb");
    for (size_t j = 0; j < outputs.size(); ++j)
      save_tensor_pb(outputs[j], dir + "/test_data_set_0/output_" + std::to_string(j) + ".pb");
  }
  ~TestFolder() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

const Tensor kX = f32({4}, {-1, 2, -3, 4});

onnx::ModelProto relu_model() {
  return make_model(13, {make_node("Relu", {"x"}, {"y"})}, {value_info("x", kX)}, {"y"});
}

}  // namespace

TEST_CASE("backend test: unknown_op names an op the importer does not know, in any subgraph") {
  const auto in = std::vector{value_info("x", kX)};
  SUBCASE("known ops, even when the model does not load") {
    const onnx::ModelProto m = make_model(13, {make_node("Add", {"x", "ghost"}, {"y"})}, in, {"y"});
    CHECK(contains(import_error(m), "'ghost'"));
    const TestFolder f(m, {}, {});
    CHECK(unknown_op(f.dir + "/model.onnx").empty());
  }
  SUBCASE("an unknown op after one that fails to load") {
    const TestFolder f(
        make_model(13,
                   {make_node("Add", {"x", "ghost"}, {"a"}), make_node("FrobNicate", {"a"}, {"y"})},
                   in, {"y"}),
        {}, {});
    CHECK(unknown_op(f.dir + "/model.onnx") == "unsupported op 'FrobNicate'");
  }
  SUBCASE("another domain") {
    const TestFolder f(
        make_model(13, {make_node("Relu", {"x"}, {"y"}, {}, "r", "com.example")}, in, {"y"}), {},
        {});
    CHECK(unknown_op(f.dir + "/model.onnx") == "unsupported op 'Relu' from domain 'com.example'");
  }
  SUBCASE("inside an If branch") {
    const onnx::GraphProto then_branch =
        make_graph("then", {make_node("FrobNicate", {"x"}, {"t"})}, {}, {"t"});
    const onnx::GraphProto else_branch =
        make_graph("else", {make_node("Relu", {"x"}, {"e"})}, {}, {"e"});
    const TestFolder f(make_model(13,
                                  {make_node("If", {"c"}, {"y"},
                                             {graph_attr("then_branch", then_branch),
                                              graph_attr("else_branch", else_branch)})},
                                  {value_info("c", kBool, {}), value_info("x", kX)}, {"y"}),
                       {}, {});
    CHECK(unknown_op(f.dir + "/model.onnx") == "unsupported op 'FrobNicate'");
  }
  SUBCASE("a file that does not parse") {
    const TempPath p(".onnx");
    std::ofstream(p.str()) << "not a model";
    CHECK(unknown_op(p.str()).empty());
  }
}

TEST_CASE("backend test: replay_backend_test compares a run served by compiled kernels") {
  const SessionOptions jit{.warmup_runs = 1, .min_region_ops = 1, .jit = true};
  SUBCASE("a matching reference") {
    const TestFolder f(relu_model(), {kX}, {f32({4}, {0, 2, 0, 4})});
    const std::vector<ReplayResult> r =
        replay_backend_test(load_onnx(f.dir + "/model.onnx"), f.dir, Tolerance{}, jit);
    REQUIRE(r.size() == 1);
    CHECK(r[0].name == "test_data_set_0");
    CHECK(r[0].ok);
    CHECK(r[0].kernel_calls == 1);
    CHECK(r[0].outside.empty());
  }
  SUBCASE("a wrong reference fails, naming the output and element") {
    const TestFolder f(relu_model(), {kX}, {f32({4}, {0, 2, 0, 5})});
    const std::vector<ReplayResult> r =
        replay_backend_test(load_onnx(f.dir + "/model.onnx"), f.dir, Tolerance{}, jit);
    REQUIRE(r.size() == 1);
    CHECK_FALSE(r[0].ok);
    CHECK(r[0].kernel_calls == 1);
    CHECK(contains(r[0].error, "output 0: element 3"));
  }
  SUBCASE("without the JIT no kernel runs, and the op says why") {
    SessionOptions no_jit = jit;
    no_jit.jit = false;
    const TestFolder f(relu_model(), {kX}, {f32({4}, {0, 2, 0, 4})});
    const std::vector<ReplayResult> r =
        replay_backend_test(load_onnx(f.dir + "/model.onnx"), f.dir, Tolerance{}, no_jit);
    REQUIRE(r.size() == 1);
    CHECK(r[0].ok);
    CHECK(r[0].kernel_calls == 0);
    REQUIRE(r[0].outside.size() == 1);
    CHECK(contains(r[0].outside[0], "JIT disabled"));
  }
}
