// One Session shared by many threads: every call's result is the serial result, while guards
// miss, a re-plan and background compiles happen under load; warm_up(); shared runtimes.
//
// The stress case's size: SGRAPH_STRESS_CALLS calls per thread (default 10,000, in every preset:
// ~60 s under TSan, the TSan preset's longest test).
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

#include "runtime/background_compiler.h"
#include "sgraph/onnx.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// x[n,16] -> MatMul -> Add -> Relu -> MatMul -> Softmax -> Mul(2) -> y, and ReduceSum(x) -> s.
Graph block() {
  GraphBuilder b("block");
  ValueId x = b.input("x", DType::f32, {Dim("n"), 16});
  ValueId w1 = b.constant("w1", random_f32({16, 16}, 1));
  ValueId b1 = b.constant("b1", random_f32({16}, 2));
  ValueId w2 = b.constant("w2", random_f32({16, 16}, 3));
  ValueId h = b.relu(b.add(b.matmul(x, w1), b1));
  ValueId y = b.mul(b.softmax(b.matmul(h, w2), Attributes{{"axis", int64_t{-1}}}), b.scalar(2.0f));
  b.output(y, "y");
  b.output(b.reduce_sum(x, b.ints({1}), Attributes{{"keepdims", int64_t{0}}}), "s");
  return b.build();
}

// Kernels' parallel loops run on oneTBB, whose synchronisation ThreadSanitizer cannot see (the
// library is not instrumented): under TSan every kernel runs on its calling thread.
#ifdef __SANITIZE_THREAD__
constexpr int kKernelThreads = 1;
#else
constexpr int kKernelThreads = 2;
#endif

int stress_calls() {
  const char* env = std::getenv("SGRAPH_STRESS_CALLS");
  return env ? std::max(1, std::atoi(env)) : 10000;
}

// Equal up to float rounding: same shape, and each element within 1e-5 + 1e-4 |want|.
bool close(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) return false;
  const float* g = got.data<float>();
  const float* w = want.data<float>();
  for (int64_t i = 0; i < want.numel(); ++i)
    if (!(std::abs(double(g[i]) - w[i]) <= 1e-5 + 1e-4 * std::abs(double(w[i])))) return false;
  return true;
}

struct Feed {
  std::vector<Tensor> inputs, want;
};

// Feeds of rows n in `sizes`, with the interpreter's outputs.
std::vector<Feed> feeds(const Graph& g, const std::vector<int64_t>& sizes, uint32_t seed) {
  Session ref(g, SessionOptions{.interpret_only = true});
  std::vector<Feed> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Feed f;
    f.inputs = {random_f32({sizes[i], 16}, seed + static_cast<uint32_t>(i))};
    f.want = ref.run(f.inputs);
    out.push_back(std::move(f));
  }
  return out;
}

// `threads` threads make `calls` calls each on `s`, cycling through `fs` from different offsets;
// returns how many outputs differ from the interpreter's (beyond float rounding).
int64_t hammer(Session& s, const std::vector<Feed>& fs, int threads, int calls) {
  std::atomic<int64_t> mismatches{0}, errors{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int c = 0; c < calls; ++c) {
        const Feed& f = fs[static_cast<size_t>(t * 7 + c) % fs.size()];
        try {
          const std::vector<Tensor> out = s.run(f.inputs);
          for (size_t k = 0; k < out.size(); ++k) mismatches += !close(out[k], f.want[k]);
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  for (std::thread& th : pool) th.join();
  return mismatches + errors;
}

}  // namespace

TEST_CASE("Concurrency: 16 threads on one Session match the interpreter through a re-plan") {
  const Graph g = block();
  // Warm-up at n = 4 only: every op stable, one static region compiled for n = 4. Under load the
  // rows vary, so its guard misses, it is re-planned (n becomes a symbol) and compiled again,
  // all while the other threads keep calling.
  Session s(g, SessionOptions{.warmup_runs = 2, .max_guard_misses = 4, .threads = 1});
  const std::vector<Feed> fs = feeds(g, {4, 4, 5, 9, 4, 17, 1, 4, 33}, 100);
  s.run(fs[0].inputs);
  s.run(fs[1].inputs);
  REQUIRE(s.planned());
  REQUIRE(s.report().regions.size() >= 1);
  const int calls = stress_calls();
  CHECK(hammer(s, fs, 16, calls) == 0);
  const Report r = s.report();
  CHECK(r.replans >= 1);
  CHECK(r.kernel_calls > 0);
  bool dynamic = false;
  for (const RegionReport& reg : r.regions) dynamic |= reg.dynamic && reg.compiled;
  INFO(r.to_text());
  CHECK(dynamic);
  CHECK(r.call_states >= 1);
  CHECK(r.call_states <= 16);
  // Every call counted once: calls through the kernels plus misses cover all calls made after
  // the warm-up on the regions' plans (each region runs once per call).
  CHECK(r.kernel_calls + r.guard_misses <= int64_t{16} * calls * int64_t(r.regions.size() + 2));
}

TEST_CASE("Concurrency: the bundled encoder block, 16 threads cycling its data sets") {
  // The model and data sets of the README's demo: seq varies between data sets, so the warm-up
  // on the first makes a static plan, and serving the others re-plans under load.
  const std::string dir = std::string(SGRAPH_SOURCE_DIR) + "/examples/models/tiny_encoder_block";
  const Graph g = load_onnx(dir + "/model.onnx");
  std::vector<Feed> fs;
  Session ref(g, SessionOptions{.interpret_only = true});
  for (int k = 0; k < 5; ++k) {
    const std::string set = dir + "/test_data_set_" + std::to_string(k);
    Feed f;
    for (int i = 0; i < 2; ++i)
      f.inputs.push_back(load_tensor_pb(set + "/input_" + std::to_string(i) + ".pb"));
    f.want = ref.run(f.inputs);
    fs.push_back(std::move(f));
  }
  Session s(g, SessionOptions{.warmup_runs = 2, .threads = kKernelThreads});
  s.run(fs[0].inputs);
  s.run(fs[0].inputs);
  REQUIRE(s.planned());
  CHECK(hammer(s, fs, 16, std::max(1, stress_calls() / 10)) == 0);
  CHECK(s.report().kernel_calls > 0);
}

TEST_CASE("Concurrency: calls during background compilation match, then use the kernels") {
  const Graph g = block();
  BackgroundCompiler::delay_jobs_for_testing(200);  // a slow compile
  Session s(g, SessionOptions{.warmup_runs = 2, .threads = 1, .background_compile = true});
  const std::vector<Feed> fs = feeds(g, {6, 6}, 200);
  s.run(fs[0].inputs);
  s.run(fs[1].inputs);
  CHECK(s.compiling());
  const int64_t bad = hammer(s, fs, 8, 200);
  BackgroundCompiler::delay_jobs_for_testing(0);
  CHECK(bad == 0);
  s.wait_compiled();
  CHECK_FALSE(s.compiling());
  const int64_t before = s.report().kernel_calls;
  CHECK(hammer(s, fs, 8, 50) == 0);
  CHECK(s.report().kernel_calls >= before + 8 * 50);
}

TEST_CASE("Concurrency: per_signature sessions serve many threads too") {
  const Graph g = block();
  Session s(g, SessionOptions{.threads = 1, .mode = CompileMode::per_signature});
  const std::vector<Feed> fs = feeds(g, {3, 8, 3, 5}, 300);
  CHECK(hammer(s, fs, 8, 100) == 0);
  CHECK(s.report().signatures == 3);
}

TEST_CASE("Session::warm_up: given data sets plan before the first live call") {
  const Graph g = block();
  const std::vector<Feed> fs = feeds(g, {4, 9, 2}, 400);
  Session s(g, SessionOptions{.warmup_runs = 5, .threads = 1});
  // A wrong data set is rejected before anything runs: nothing is observed.
  CHECK_THROWS_WITH_AS(s.warm_up({fs[0].inputs, {random_f32({4, 15}, 1)}}),
                       doctest::Contains("warm_up data set 1"), Error);
  CHECK(s.report().warmup_runs == 0);
  CHECK_THROWS_AS(s.warm_up({}), Error);
  s.warm_up({fs[0].inputs, fs[1].inputs, fs[2].inputs});
  REQUIRE(s.planned());
  Report r = s.report();
  CHECK(r.warmup_runs == 3);
  CHECK_FALSE(op_named(r, "y").stable);  // n varied over the data sets: dynamic over n
  REQUIRE_FALSE(r.regions.empty());
  CHECK(r.regions[0].dynamic);
  // The first live call runs the kernel (no warm-up left), at a size warm-up never saw.
  const std::vector<Feed> live = feeds(g, {13}, 500);
  const std::vector<Tensor> out = s.run(live[0].inputs);
  CHECK(close(out[0], live[0].want[0]));
  CHECK(s.report().kernel_calls >= 1);
  CHECK(s.report().guard_misses == 0);
  // Interpret-only and per-signature Sessions have nothing to warm up.
  Session plain(g, SessionOptions{.interpret_only = true});
  CHECK_THROWS_AS(plain.warm_up({fs[0].inputs}), Error);
}

TEST_CASE("Runtime: Sessions of one runtime share kernels, and a Session releases its own") {
  const Graph g = block();
  const std::vector<Feed> fs = feeds(g, {4, 4}, 600);
  auto rt = Runtime::create();
  SessionOptions o{.warmup_runs = 2, .threads = 1};
  o.cache_dir = "";
  o.runtime = rt;
  size_t live = 0;
  {
    Session a(g, o);
    for (const Feed& f : fs) a.run(f.inputs);
    REQUIRE(a.report().compilations >= 1);
    live = rt->live_kernels();
    CHECK(live >= 1);
    Session b(g, o);
    for (const Feed& f : fs) b.run(f.inputs);
    const Report rb = b.report();
    CHECK(rb.compilations == 0);  // the same code: a's kernels
    for (const RegionReport& reg : rb.regions)
      if (reg.compiled) CHECK(reg.cache_hit);
    CHECK(rt->live_kernels() == live);
    CHECK(close(b.run(fs[0].inputs)[0], fs[0].want[0]));
  }
  CHECK(rt->live_kernels() == 0);
  // A Session of another runtime compiles afresh.
  SessionOptions other = o;
  other.runtime = Runtime::create();
  Session c(g, other);
  for (const Feed& f : fs) c.run(f.inputs);
  CHECK(c.report().compilations >= 1);
}
