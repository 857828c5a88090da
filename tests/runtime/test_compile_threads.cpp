// A plan's regions compiled at once: a Session hands all of a plan's compiles to the JIT together,
// on up to the JIT's compile threads (synchronously, or on that many background threads), and the
// JIT compiles code another thread is already compiling only once. Every result still matches the
// interpreter's; background compiles may run at a lower priority than calls. Each test slows the
// JIT's compiles down (Jit::delay_compiles_for_testing), so compiles meant to overlap certainly
// do; the JIT's own count says how many ran at once.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "runtime/background_compiler.h"
#include "runtime/runtime_impl.h"
#include "runtime/session_graphs.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

struct SlowJit {
  explicit SlowJit(int ms) { jit::Jit::delay_compiles_for_testing(ms); }
  ~SlowJit() { jit::Jit::delay_compiles_for_testing(0); }
};

// Two regions of the same code (same ops and shapes, different biases).
Graph twins() {
  GraphBuilder b("twins");
  ValueId x = b.input("x", DType::f32, {4, 8});
  ValueId y = b.input("y", DType::f32, {4, 8});
  b.output(b.relu(b.add(x, b.constant("bx", random_f32({8}, 1)))), "p");
  b.output(b.relu(b.add(y, b.constant("by", random_f32({8}, 2)))), "q");
  return b.build();
}

// The JIT a Session with these options compiles with, on `threads` compile threads.
std::shared_ptr<jit::Jit> jit_of(const SessionOptions& o, int threads) {
  std::shared_ptr<jit::Jit> j = o.runtime->impl().jit({o.cache_dir, o.cache_max_bytes});
  j->split_compiles(threads);
  return j;
}

}  // namespace

TEST_CASE("Session: a plan's regions compile at once, on the JIT's compile threads") {
  const SlowJit slow(300);
  for (const int threads : {1, 2, 3}) {
    CAPTURE(threads);
    SessionOptions o{.warmup_runs = 1, .threads = 1};
    o.runtime = Runtime::create();
    std::shared_ptr<jit::Jit> j = jit_of(o, threads);
    Session s(three_regions(), o);
    const std::vector<Tensor> in{random_f32({4, 8}, 7)};
    s.run(in);  // the warm-up call plans and compiles
    const Report r = s.report();
    REQUIRE(r.regions.size() == 3);
    for (const RegionReport& reg : r.regions) CHECK(reg.compiled);
    CHECK(r.compilations == 3);
    const jit::Jit::CompileStats st = j->compile_stats();
    CHECK(st.compiles == 3);
    CHECK(st.most_at_once == threads);  // 1: one after another, as before
    // Each compile took at least the delay; together they took less wall time when they ran
    // at once (three 300-ms compiles on 3 threads: ~0.3 s of wall time, 0.9 s summed).
    CHECK(r.compile_ms_total >= 3 * 300);
    if (threads == 3) {
      CHECK(r.compile_wall_ms < 0.7 * r.compile_ms_total);
      CHECK(contains(r.to_text(), " ms of wall time: several at once)\n"));
      CHECK(contains(r.to_json(), "\"compile_wall_ms\": "));
    }
    check_like_interpreter(s, three_regions(), in);
    CHECK(s.report().kernel_calls == 3);
  }
}

TEST_CASE("Session: two regions of the same code compiled at once make one compile") {
  const SlowJit slow(300);  // both jobs reach the JIT while the first one's compile runs
  SessionOptions o{.warmup_runs = 1, .threads = 1};
  o.runtime = Runtime::create();
  std::shared_ptr<jit::Jit> j = jit_of(o, 2);
  Session s(twins(), o);
  const std::vector<Tensor> in{random_f32({4, 8}, 3), random_f32({4, 8}, 4)};
  s.run(in);
  const Report r = s.report();
  REQUIRE(r.regions.size() == 2);
  CHECK(j->compile_stats().compiles == 1);  // the other waited for it, not compiled it again
  CHECK(r.compilations == 1);
  CHECK(r.regions[0].cache_hit != r.regions[1].cache_hit);  // either may be the one compiling
  for (const RegionReport& reg : r.regions) CHECK(reg.compiled);
  check_like_interpreter(s, twins(), in);  // the shared kernel reads each region's own bias
  CHECK(j->live_kernels() == 1);
}

TEST_CASE("Background compilation: a plan's regions compile at once on several threads") {
  const SlowJit slow(300);
  SessionOptions o{.warmup_runs = 1, .threads = 1};
  o.background_compile = true;
  o.runtime = Runtime::create();
  std::shared_ptr<jit::Jit> j = jit_of(o, 2);
  Session s(three_regions(), o);
  const std::vector<Tensor> in{random_f32({4, 8}, 9)};
  check_like_interpreter(s, three_regions(), in);  // plans; the compiles start
  check_like_interpreter(s, three_regions(), in);  // interpreted or not, the same results
  s.wait_compiled();
  check_like_interpreter(s, three_regions(), in);
  const Report r = s.report();
  REQUIRE(r.regions.size() == 3);
  for (const RegionReport& reg : r.regions) CHECK(reg.compiled);
  const jit::Jit::CompileStats st = j->compile_stats();
  CHECK(st.compiles == 3);
  CHECK(st.most_at_once == 2);
  CHECK(r.compile_wall_ms > 0);
  CHECK(r.compile_wall_ms < r.compile_ms_total);
}

TEST_CASE("BackgroundCompiler::run_all: jobs at once on up to the threads given, errors kept") {
  std::atomic<int> now{0}, most{0};
  const auto job = [&](bool fail) {
    return [&, fail]() -> jit::CompiledRegion {
      const int n = ++now;
      for (int m = most.load(); n > m && !most.compare_exchange_weak(m, n);) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      --now;
      if (fail) throw std::runtime_error("no memory");
      return {};
    };
  };
  for (const int threads : {1, 2, 4}) {
    CAPTURE(threads);
    most = 0;
    std::vector<BackgroundCompiler::Queued> jobs;
    for (uint64_t id = 1; id <= 5; ++id) jobs.push_back({id, job(id == 3)});
    const std::vector<BackgroundCompiler::Done> done =
        BackgroundCompiler::run_all(std::move(jobs), threads);
    REQUIRE(done.size() == 5);
    CHECK(most == threads);
    uint64_t ids = 0;
    for (const BackgroundCompiler::Done& d : done) {
      ids += d.job;
      CHECK(d.error.empty() == (d.job != 3));
      if (d.job == 3) CHECK(contains(d.error, "no memory"));
    }
    CHECK(ids == 15);
  }
}

#ifdef __linux__
TEST_CASE(
    "BackgroundCompiler: background jobs at the priority asked for, run_all's at the caller's") {
  const auto my_priority = [] {
    return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  };
  const int caller = my_priority();
  std::atomic<int> seen{-100};
  const auto note = [&]() -> jit::CompiledRegion {
    seen = my_priority();
    return {};
  };
  {
    BackgroundCompiler bg(2, 10);  // SessionOptions::background_nice = 10
    bg.submit(1, note);
    bg.wait_idle();
    REQUIRE(bg.take_done().size() == 1);
    CHECK(seen == std::min(caller + 10, 19));  // (nice values end at 19)
  }
  seen = -100;
  {
    BackgroundCompiler bg(1);  // the default, background_nice = 0: the callers' priority
    bg.submit(1, note);
    bg.wait_idle();
    CHECK(seen == caller);
  }
  for (const int threads : {1, 2}) {
    seen = -100;
    std::vector<BackgroundCompiler::Queued> jobs;
    jobs.push_back({1, note});
    jobs.push_back({2, note});
    REQUIRE(BackgroundCompiler::run_all(std::move(jobs), threads).size() == 2);
    CHECK(seen == caller);
  }
  CHECK(my_priority() == caller);  // the caller's own is untouched
}
#endif
