// CompileMode::per_signature (the whole graph compiled per input signature) against the
// interpreter and against the profile-guided mode: results, and how often each compiles.
#include "runtime/session_graphs.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

const std::vector<std::string> kWeightRegion{"w_t", "w_scaled"};
const std::vector<std::string> kBatchRegion{"fc", "bias", "y"};

SessionOptions per_signature() {
  SessionOptions o;
  o.mode = CompileMode::per_signature;
  o.threads = 1;
  return o;
}

// Runs `batches` through `s`, checking every result against the interpreter.
void run_checked(Session& s, const std::vector<int64_t>& batches, uint32_t seed = 1) {
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  for (int64_t batch : batches) {
    CAPTURE(batch);
    const Tensor x = random_f32({batch, 4}, seed++);
    check_tensors_close(s.run({x})[0], ref.run({x})[0]);
  }
}

}  // namespace

TEST_CASE("per_signature: results equal the interpreter's as shapes change") {
  Session s(split_mlp(), unfolded(per_signature()));
  CHECK_FALSE(s.planned());
  run_checked(s, {2, 5, 2, 7, 5, 1, 1, 7});
  CHECK(s.planned());
  const Report r = s.report();
  CHECK(r.mode == "per_signature");
  CHECK(r.signatures == 4);
  CHECK(r.warmup_runs == 0);
  // The latest signature's plan: both regions, each with a kernel that has been called (batch 1,
  // then batch 7 twice).
  REQUIRE(r.regions.size() == 2);
  CHECK(r.regions[0].nodes == kWeightRegion);
  CHECK(r.regions[1].nodes == kBatchRegion);
  for (const RegionReport& reg : r.regions) {
    CHECK_MESSAGE(reg.compiled, reg.why_interpreted);
    CHECK(reg.kernel_calls == 1);  // the signature's first call was interpreted, the second not
  }
  CHECK(r.guard_misses == 0);
}

TEST_CASE("per_signature: the encoder block over changing batch and sequence lengths") {
  Session s(load_onnx(SGRAPH_SOURCE_DIR "/examples/models/tiny_encoder_block/model.onnx"),
            per_signature());
  Session ref(load_onnx(SGRAPH_SOURCE_DIR "/examples/models/tiny_encoder_block/model.onnx"),
              SessionOptions{.interpret_only = true});
  const std::vector<std::pair<int64_t, int64_t>> shapes{{1, 3}, {2, 8}, {1, 3}, {2, 5}, {2, 8}};
  uint32_t seed = 7;
  for (auto [batch, seq] : shapes) {
    CAPTURE(seq);
    Tensor mask(DType::i64, {batch, seq});
    for (int64_t i = 0; i < mask.numel(); ++i) mask.data<int64_t>()[i] = i % seq < seq - 1;
    const std::vector<Tensor> in{random_f32({batch, seq, 32}, seed++), mask};
    check_tensors_close(s.run(in)[0], ref.run(in)[0], 1e-4, 1e-5);
  }
  const Report r = s.report();
  CHECK(r.signatures == 3);
  // With every op stable the whole block is one region: one kernel per signature.
  REQUIRE(r.regions.size() == 1);
  CHECK(r.regions[0].nodes.size() == r.ops.size());
  CHECK(r.compilations == 3);
  CHECK(r.regions[0].kernel_calls == 1);  // {2,8}: interpreted once, then its kernel
}

TEST_CASE("per_signature: a repeated signature does not recompile, a new one recompiles all") {
  Session s(split_mlp(), unfolded(per_signature()));
  run_checked(s, {2});
  Report r = s.report();
  REQUIRE(r.regions.size() == 2);
  CHECK(r.compilations == 2);
  CHECK(r.compile_ms_total > 0);
  run_checked(s, {2, 2, 2}, 10);
  CHECK(s.report().compilations == 2);
  CHECK(s.report().compile_ms_total == r.compile_ms_total);
  // Batch 5: both regions again, the weight branch too although its shapes did not change (no
  // kernel is shared across signatures).
  run_checked(s, {5}, 20);
  r = s.report();
  CHECK(r.compilations == 4);
  CHECK(r.signatures == 2);
  for (const RegionReport& reg : r.regions) {
    CHECK(reg.compiles == 1);
    CHECK_FALSE(reg.cache_hit);
  }
  run_checked(s, {2, 5, 2, 5}, 30);
  r = s.report();
  CHECK(r.compilations == 4);
  CHECK(r.signatures == 2);
  CHECK(r.kernel_calls == 2 * (3 + 2) + 2 * 2);  // per region: batch 2 three + two, batch 5 two
}

TEST_CASE("profile_guided compiles each stable region once over the same cycling workload") {
  const std::vector<int64_t> cycle{2, 5, 7, 2, 5, 7, 2, 5, 7, 2, 5, 7, 2, 5, 7};
  Session guided(split_mlp(), unfolded({.threads = 1}));
  Session whole(split_mlp(), unfolded(per_signature()));
  run_checked(guided, cycle);
  run_checked(whole, cycle);
  // Profile-guided: the batch changed during warm-up, so only the weight branch is stable; its
  // one kernel is compiled once and called on every served run. The changed ops after the MatMul
  // are one dynamic region, also compiled once, and hit for every batch.
  const Report g = guided.report();
  REQUIRE(g.regions.size() == 2);
  CHECK(g.regions[0].nodes == kWeightRegion);
  CHECK(g.regions[1].dynamic);
  CHECK(g.compilations == 2);
  for (const RegionReport& reg : g.regions) {
    CHECK(reg.compiles == 1);
    CHECK(reg.kernel_calls == static_cast<int64_t>(cycle.size()) - 3);
    CHECK(reg.guard_misses == 0);
  }
  CHECK(g.signatures == 0);
  // Per signature: three signatures, two regions each.
  const Report w = whole.report();
  CHECK(w.signatures == 3);
  CHECK(w.compilations == 3 * 2);
}

TEST_CASE("profile_guided: a short last batch falls back, keeps the kernel, nothing recompiles") {
  // Training-style: batch 4, with a short last batch of 1 every third call.
  std::vector<int64_t> batches{4, 4, 4};
  for (int epoch = 0; epoch < 8; ++epoch) batches.insert(batches.end(), {4, 4, 1});
  Session guided(split_mlp(), unfolded({.max_guard_misses = 2, .threads = 1}));
  run_checked(guided, {4, 4, 4});
  REQUIRE(guided.report().regions.size() == 2);  // everything stable: both regions compiled
  CHECK(guided.report().compilations == 2);
  run_checked(guided, batches, 50);
  // The batch region misses its guard once per epoch, fewer times than its kernel runs: it
  // falls back for that call and stays planned (see SessionOptions::max_guard_misses).
  const Report g = guided.report();
  CHECK(g.replans == 0);
  REQUIRE(g.regions.size() == 2);
  int64_t misses = 0, calls = 0;
  for (const RegionReport& r : g.regions) {
    CHECK(r.compiles == 1);
    misses += r.guard_misses;
    calls += r.kernel_calls;
  }
  CHECK(misses == 8);                                            // the 8 short batches
  CHECK(calls == 2 * static_cast<int64_t>(batches.size()) - 8);  // the weight region always hits
  CHECK(g.compilations == 2);

  Session whole(split_mlp(), unfolded(per_signature()));
  run_checked(whole, batches, 50);
  CHECK(whole.report().signatures == 2);
  CHECK(whole.report().compilations == 2 * 2);
}

TEST_CASE("Report: mode and compilation figures in text and JSON") {
  Session s(split_mlp(), unfolded(per_signature()));
  run_checked(s, {2, 3});
  const Report r = s.report();
  CHECK(contains(r.to_text(), "compiled: 4 kernels in "));
  CHECK(contains(r.to_text(), " ms for 2 input signatures"));  // (then the wall time, if less)
  const std::string j = r.to_json();
  CHECK(contains(j, "\"mode\": \"per_signature\""));
  CHECK(contains(j, "\"compilations\": 4"));
  CHECK(contains(j, "\"signatures\": 2"));
  CHECK(contains(j, "\"compile_ms_total\": "));

  Session plain(split_mlp(),
                SessionOptions{.interpret_only = true, .mode = CompileMode::per_signature});
  run_checked(plain, {2, 3});
  CHECK(plain.report().mode == "interpret");
  CHECK(plain.report().compilations == 0);
  CHECK_FALSE(plain.planned());
  CHECK_FALSE(contains(plain.report().to_text(), "compiled:"));
}

TEST_CASE("per_signature: bad inputs throw, before and after a signature is compiled") {
  Session s(split_mlp(), unfolded(per_signature()));
  const std::string wrong_dtype = "input 'x' must be f32, got f64";
  CHECK(contains(error_of([&] { s.run({Tensor(DType::f64, {2, 4})}); }), wrong_dtype));
  CHECK(contains(error_of([&] { s.run(std::vector<Tensor>{}); }), "takes 1 inputs, got 0"));
  CHECK(s.report().signatures == 0);
  run_checked(s, {2});
  CHECK(contains(error_of([&] { s.run({Tensor(DType::f64, {2, 4})}); }), wrong_dtype));
  CHECK(contains(error_of([&] {
                   s.run(std::vector<Tensor>{random_f32({2, 4}, 1), random_f32({2, 4}, 2)});
                 }),
                 "takes 1 inputs, got 2"));
  CHECK(s.report().signatures == 1);
  run_checked(s, {2, 3}, 5);  // still serving
  CHECK(s.report().signatures == 2);
}
