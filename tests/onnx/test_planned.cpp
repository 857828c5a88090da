// The planned model (save_planned_onnx): regions as model-local functions, the warm-up record in
// the metadata; read back, a Session plans at once, as the warmed-up one did, and gives the
// interpreter's results from its first call.
#include <algorithm>
#include <filesystem>
#include <set>

#include "onnx/proto_builder.h"
#include "runtime/session_graphs.h"

using namespace sgraph;
using namespace sgraph::test;
namespace fs = std::filesystem;

namespace test_planned {  // this file's own names (the tests build as unity sources)

namespace {

const std::string kTestData = SGRAPH_SOURCE_DIR "/../shared/testdata";

// Each region as the set of its nodes' names (node order differs after reading back).
std::set<std::set<std::string>> regions_of(const Report& r) {
  std::set<std::set<std::string>> out;
  for (const RegionReport& reg : r.regions) out.emplace(reg.nodes.begin(), reg.nodes.end());
  return out;
}

std::map<std::string, bool> stability(const Report& r) {
  std::map<std::string, bool> out;
  for (const OpReport& o : r.ops) out[o.node] = o.stable;
  return out;
}

}  // namespace

TEST_CASE("Planned model: regions as functions, read back planned, kernels from the first call") {
  Session a(split_mlp(), unfolded({.warmup_runs = 3}));
  for (int64_t batch : {2, 2, 5}) a.run({random_f32({batch, 4}, 10)});
  REQUIRE(a.planned());
  const Report want = a.report();
  const std::string bytes = save_planned_onnx_bytes(a);

  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(bytes));
  CHECK(m.functions_size() == static_cast<int>(want.regions.size()));
  size_t in_regions = 0;
  for (const RegionReport& r : want.regions) in_regions += r.nodes.size();
  CHECK(m.graph().node_size() ==
        static_cast<int>(want.ops.size() - in_regions + want.regions.size()));
  for (const auto& f : m.functions()) CHECK(f.domain() == "sgraph.region");

  Session b(load_onnx_bytes(bytes, "planned"), unfolded({}));
  REQUIRE(b.planned());
  const Report got = b.report();
  CHECK(got.warmup_record == "loaded");
  CHECK(regions_of(got) == regions_of(want));
  CHECK(stability(got) == stability(want));
  CHECK(got.symbols == want.symbols);
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  for (int64_t batch : {5, 2, 7}) {
    const Tensor x = random_f32({batch, 4}, static_cast<uint32_t>(batch));
    check_tensors_close(b.run({x})[0], ref.run({x})[0]);
  }
  const Report after = b.report();
  for (const RegionReport& r : after.regions) {
    CHECK_MESSAGE(r.compiled, r.why_interpreted);
    CHECK(r.active_from_call == 1);
    CHECK(r.kernel_calls == 3);
  }
  CHECK(after.warmup_runs == 3);
  // Not planned yet: nothing to write.
  Session fresh(split_mlp(), unfolded({}));
  CHECK(contains(error_of([&] { (void)save_planned_onnx_bytes(fresh); }), "has planned"));
}

TEST_CASE("Planned model: each shared test model reads back with the plan it was written with") {
  REQUIRE_MESSAGE(fs::is_directory(kTestData), "shared testdata missing at " << kTestData);
  for (const char* name :
       {"real/owwjs_hello_deepa", "real/ppocr_mobile_v2_cls", "real/silero_vad_legacy",
        "real/silero_vad_v5", "synthetic/cnn_bn_gap", "synthetic/mlp3", "synthetic/small_cnn",
        "synthetic/text_encoder", "synthetic/tiny_causal_block", "synthetic/tiny_encoder_block"}) {
    const std::string model = name;
    CAPTURE(model);
    const std::string dir = kTestData + "/" + name;
    // Warmed up on the graph as sgraph writes it (older op forms are written anew).
    Graph g = load_onnx_bytes(save_onnx_bytes(load_onnx(dir + "/model.onnx")), name);
    const std::vector<std::vector<Tensor>> sets = load_data_set_inputs(dir);
    REQUIRE_FALSE(sets.empty());
    // Without the JIT: the plan is the same, and nothing is compiled (fast, in every preset).
    Session a(std::move(g), SessionOptions{.jit = false});
    a.warm_up(sets);
    const Report want = a.report();
    Session b(load_onnx_bytes(save_planned_onnx_bytes(a), name), SessionOptions{.jit = false});
    REQUIRE(b.planned());
    const Report got = b.report();
    CHECK(got.warmup_record == "loaded");
    CHECK(got.warmup_runs == static_cast<int>(sets.size()));
    CHECK(regions_of(got) == regions_of(want));
    CHECK(stability(got) == stability(want));
    CHECK(got.symbols == want.symbols);
    for (const std::vector<Tensor>& set : sets) {
      const std::vector<Tensor> x = b.run(set), y = a.run(set);
      REQUIRE(x.size() == y.size());
      for (size_t i = 0; i < x.size(); ++i) check_tensors_close(x[i], y[i]);
    }
    const Report served = b.report();
    CHECK(served.warmup_runs == static_cast<int>(sets.size()));  // no call warmed up
    // Subgraphs (If branches) planned in the warm-up are planned from their records when first
    // run; the others go on warming up from the runs their records hold.
    for (const Report& sub : want.subgraphs) {
      CAPTURE(sub.graph);
      const auto it = std::find_if(served.subgraphs.begin(), served.subgraphs.end(),
                                   [&](const Report& r) { return r.graph == sub.graph; });
      REQUIRE(it != served.subgraphs.end());
      if (!sub.planned) {
        CAPTURE(it->warmup_record);
        if (sub.warmup_runs == 0) {
          CHECK(it->warmup_record.empty());
        } else {
          CHECK(it->warmup_record.rfind("loaded: " + std::to_string(sub.warmup_runs) + " of ", 0) ==
                0);
          // The served calls that took the branch went on with its warm-up.
          CHECK(it->warmup_runs >= sub.warmup_runs);
        }
        continue;
      }
      CHECK(it->planned);
      CHECK(it->warmup_record == "loaded");
      CHECK(it->warmup_runs == sub.warmup_runs);
      CHECK(regions_of(*it) == regions_of(sub));
      CHECK(stability(*it) == stability(sub));
    }
  }
}

TEST_CASE("Planned model: a model with If branches, compiled, matches the interpreter") {
  const std::string dir = kTestData + "/real/silero_vad_legacy";
  Graph g = load_onnx_bytes(save_onnx_bytes(load_onnx(dir + "/model.onnx")), "silero");
  const std::vector<std::vector<Tensor>> sets = load_data_set_inputs(dir);
  Session a(g, SessionOptions{.jit = false});
  a.warm_up(sets);
  const std::string bytes = save_planned_onnx_bytes(a);
  // Its regions are in If branches: functions called from inside the branches.
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(bytes));
  int in_branches = 0;
  for (const auto& n : m.graph().node())
    for (const auto& attr : n.attribute())
      for (const auto& inner : attr.g().node()) in_branches += inner.domain() == "sgraph.region";
  CHECK(in_branches >= 1);
  CHECK(m.functions_size() >= in_branches);
  Session ref(g, SessionOptions{.interpret_only = true});
  for (int mode = 0; mode < 3; ++mode) {
    CAPTURE(mode);  // 0: interpreted, 1: compiled after a warm-up, 2: compiled from the record
    Session b(load_onnx_bytes(bytes, "planned"),
              SessionOptions{.interpret_only = mode == 0, .use_warmup_record = mode == 2});
    for (int pass = 0; pass < 2; ++pass)
      for (const std::vector<Tensor>& set : sets) {
        const std::vector<Tensor> x = b.run(set), y = ref.run(set);
        REQUIRE(x.size() == y.size());
        for (size_t i = 0; i < x.size(); ++i) check_tensors_close(x[i], y[i], 1e-3, 1e-4);
      }
  }
}

}  // namespace test_planned
