// Threads the system will not start (a process or container thread limit): every place the library
// starts threads of its own does the work on the threads it has instead, so a Session still
// computes what the interpreter does, compiles what it can, and never aborts or hangs. The
// failures are injected (fail_thread_starts_for_testing): the next N thread starts fail as
// std::thread's constructor fails, with std::system_error.
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "ir/threads.h"
#include "jit/parallel.h"
#include "runtime/background_compiler.h"
#include "runtime/runtime_impl.h"
#include "runtime/session_graphs.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// Thread starts fail while it lives.
struct NoThreads {
  explicit NoThreads(int n = 1'000'000) { fail_thread_starts_for_testing(n); }
  ~NoThreads() { fail_thread_starts_for_testing(0); }
};

// Jobs that note the thread each ran on.
struct Threads {
  std::mutex mu;
  std::set<std::thread::id> seen;
  BackgroundCompiler::Job job(int ms = 50) {
    return [this, ms]() -> jit::CompiledRegion {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      std::lock_guard lock(mu);
      seen.insert(std::this_thread::get_id());
      return {};
    };
  }
};

}  // namespace

TEST_CASE("try_start_thread: true and a running thread, or false and the reason") {
  std::vector<std::thread> threads;
  std::atomic<int> ran{0};
  CHECK(try_start_thread(threads, [&] { ++ran; }));
  {
    const NoThreads none(1);
    std::string why;
    CHECK_FALSE(try_start_thread(
        threads, [&] { ++ran; }, &why));
    CHECK(contains(why, "thread start failed"));
  }
  CHECK(try_start_thread(threads, [&] { ++ran; }));  // one failure only: this one starts
  REQUIRE(threads.size() == 2);
  for (std::thread& t : threads) t.join();
  CHECK(ran == 2);
}

TEST_CASE("BackgroundCompiler::run_all: the caller is one of the threads, and all of them alone") {
  for (const bool starts : {true, false}) {
    CAPTURE(starts);
    std::optional<NoThreads> none;
    if (!starts) none.emplace();
    Threads t;
    std::vector<BackgroundCompiler::Queued> jobs;
    for (uint64_t id = 1; id <= 4; ++id) jobs.push_back({id, t.job()});
    const std::vector<BackgroundCompiler::Done> done =
        BackgroundCompiler::run_all(std::move(jobs), 2);
    REQUIRE(done.size() == 4);
    for (const BackgroundCompiler::Done& d : done) CHECK(d.error.empty());
    // Two threads: one started and the caller (each busy 50 ms per job, so both take some);
    // with no thread started, the caller alone.
    CHECK(t.seen.count(std::this_thread::get_id()) == 1);
    CHECK(t.seen.size() == (starts ? 2u : 1u));
  }
}

TEST_CASE("BackgroundCompiler: no thread to compile on ends the job with that error at once") {
  BackgroundCompiler bg(2);
  Threads t;
  {
    const NoThreads none;
    bg.submit(1, t.job());
    CHECK(bg.has_done());
    bg.wait_idle();  // (nothing queued is left waiting for a thread)
    const std::vector<BackgroundCompiler::Done> done = bg.take_done();
    REQUIRE(done.size() == 1);
    CHECK(done[0].job == 1);
    CHECK(contains(done[0].error, "no compiler thread could be started"));
    CHECK(t.seen.empty());  // it never ran
  }
  bg.submit(2, t.job());  // threads start again: it runs on one
  bg.wait_idle();
  const std::vector<BackgroundCompiler::Done> done = bg.take_done();
  REQUIRE(done.size() == 1);
  CHECK(done[0].error.empty());
  CHECK(t.seen.size() == 1);
  CHECK(t.seen.count(std::this_thread::get_id()) == 0);
}

TEST_CASE("Session: with no thread to be had, a plan's regions compile one after another") {
  SessionOptions o{.warmup_runs = 1, .threads = 1};
  o.runtime = Runtime::create();
  std::shared_ptr<jit::Jit> j = o.runtime->impl().jit({o.cache_dir, o.cache_max_bytes});
  j->split_compiles(3, 1);  // at once on 3 threads, and every module in 3 parts, if it could
  const NoThreads none;
  Session s(three_regions(), o);
  const std::vector<Tensor> in{random_f32({4, 8}, 7)};
  s.run(in);
  const Report r = s.report();
  REQUIRE(r.regions.size() == 3);
  for (const RegionReport& reg : r.regions) CHECK(reg.compiled);
  CHECK(j->compile_stats().compiles == 3);
  CHECK(j->compile_stats().most_at_once == 1);
  check_like_interpreter(s, three_regions(), in);
  CHECK(s.report().kernel_calls == 3);
}

TEST_CASE("Background compilation with no thread to be had: interpreted, with the reason") {
  SessionOptions o{.warmup_runs = 1, .threads = 1};
  o.background_compile = true;
  o.runtime = Runtime::create();
  const NoThreads none;
  Session s(three_regions(), o);
  const std::vector<Tensor> in{random_f32({4, 8}, 9)};
  check_like_interpreter(s, three_regions(), in);  // plans: no thread takes the compiles
  s.wait_compiled();                               // returns: nothing waits for a thread
  check_like_interpreter(s, three_regions(), in);
  const Report r = s.report();
  REQUIRE(r.regions.size() == 3);
  for (const RegionReport& reg : r.regions) {
    CHECK_FALSE(reg.compiled);
    CHECK_FALSE(reg.compiling);
    CHECK(contains(reg.why_interpreted, "no compiler thread could be started"));
  }
  CHECK(r.kernel_calls == 0);
}

TEST_CASE("sgraph_parallel_for with no helper thread to be had covers its range on the caller") {
  // (Release builds run parallel loops on oneTBB's pool, which starts its threads itself; this
  // checks the plain threads of ThreadSanitizer builds, the ones try_start_thread starts.)
  const NoThreads none;
  KernelContext ctx(4);
  std::vector<std::atomic<int>> counts(1000);
  void* ptrs[] = {&counts};
  sgraph_parallel_for(
      &ctx,
      [](void* const* p, int64_t begin, int64_t end) {
        auto& c = *static_cast<std::vector<std::atomic<int>>*>(p[0]);
        for (int64_t i = begin; i < end; ++i) c[static_cast<size_t>(i)].fetch_add(1);
      },
      ptrs, 1000);
  for (const std::atomic<int>& c : counts) CHECK(c.load() == 1);
}
