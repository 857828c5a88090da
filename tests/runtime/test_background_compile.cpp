// Background compilation (SessionOptions::background_compile): calls go on through the
// interpreter while the kernels compile, never wait for the JIT, and switch to the kernels between
// calls; every result matches the interpreter's throughout.
#include <chrono>

#include "runtime/background_compiler.h"
#include "runtime/session_graphs.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// Slows every background compile down for one test.
struct SlowCompiles {
  explicit SlowCompiles(int ms) { BackgroundCompiler::delay_jobs_for_testing(ms); }
  ~SlowCompiles() { BackgroundCompiler::delay_jobs_for_testing(0); }
};

double ms_of(const auto& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

int64_t kernel_calls(const Session& s) { return s.report().kernel_calls; }

}  // namespace

TEST_CASE(
    "Background compilation: no call waits for a slow compile; kernels switch in between "
    "calls") {
  const SlowCompiles slow(1500);
  SessionOptions o{.warmup_runs = 2};
  o.background_compile = true;
  Session s(split_mlp(), unfolded(o));
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  const Tensor x = random_f32({3, 4}, 5);
  s.run({x});
  // The call that ends the warm-up plans and queues the compiles, and returns at once.
  CHECK(ms_of([&] { check_close(s.run({x})[0], ref.run({x})[0]); }) < 750);
  REQUIRE(s.planned());
  CHECK(s.compiling());
  Report r = s.report();
  REQUIRE(r.regions.size() == 2);
  for (const RegionReport& reg : r.regions) {
    CHECK(reg.compiling);
    CHECK_FALSE(reg.compiled);
    CHECK(contains(r.to_text(), "compiling in the background"));
  }
  // Calls while compiling: interpreted, no waiting.
  for (int i = 0; i < 3; ++i)
    CHECK(ms_of([&] { check_close(s.run({x})[0], ref.run({x})[0]); }) < 750);
  CHECK(kernel_calls(s) == 0);
  s.wait_compiled();
  CHECK_FALSE(s.compiling());
  check_close(s.run({x})[0], ref.run({x})[0]);  // call 6: the first through the kernels
  r = s.report();
  CHECK(r.compilations == 2);
  for (const RegionReport& reg : r.regions) {
    CHECK(reg.compiled);
    CHECK_FALSE(reg.compiling);
    CHECK(reg.active_from_call == 6);
    CHECK(reg.kernel_calls == 1);
  }
}

TEST_CASE("Background compilation: results match the interpreter on every call as kernels arrive") {
  SessionOptions o{.warmup_runs = 3};
  o.background_compile = true;
  Session s(split_mlp(), unfolded(o));
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  // The batch changes in warm-up: one static and one dynamic region.
  const int64_t batches[] = {2, 5, 3, 7, 1, 4, 9, 2, 6};
  for (int round = 0; round < 40; ++round) {
    const Tensor x = random_f32({batches[round % 9], 4}, static_cast<uint32_t>(round));
    check_close(s.run({x})[0], ref.run({x})[0]);
  }
  s.wait_compiled();
  const int64_t before = kernel_calls(s);
  const Tensor x = random_f32({8, 4}, 99);
  check_close(s.run({x})[0], ref.run({x})[0]);
  CHECK(kernel_calls(s) == before + 2);  // both regions through their kernels
  CHECK(s.report().compilations == 2);
}

TEST_CASE("Background compilation: a Session destroyed while compiling") {
  const SlowCompiles slow(300);
  SessionOptions o{.warmup_runs = 1};
  o.background_compile = true;
  {
    Session s(split_mlp(), unfolded(o));
    s.run({random_f32({3, 4}, 5)});
    CHECK(s.compiling());
  }  // joins the compile thread after its current job; the queued one is dropped
  Session s(split_mlp(), unfolded(o));
  s.run({random_f32({3, 4}, 5)});
  s.wait_compiled();
  s.run({random_f32({3, 4}, 6)});
  CHECK(kernel_calls(s) == 2);
}
