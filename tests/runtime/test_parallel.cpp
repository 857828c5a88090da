// Parallel loop nests (sgraph_parallel_for), the per-region thread decision, and the thread counts
// a Session gives its regions.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "jit/parallel.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// What a nest saw: how often each index ran, the ranges it was given and on which threads.
struct Coverage {
  explicit Coverage(int64_t trip) : counts(static_cast<size_t>(trip)) {}
  std::vector<std::atomic<int>> counts;
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::vector<std::thread::id> threads;
};

// The nest: ptrs[0] is a Coverage.
void record(void* const* ptrs, int64_t begin, int64_t end) {
  auto& c = *static_cast<Coverage*>(ptrs[0]);
  for (int64_t i = begin; i < end; ++i) c.counts[static_cast<size_t>(i)].fetch_add(1);
  std::lock_guard<std::mutex> lock(c.m);
  c.ranges.emplace_back(begin, end);
  c.threads.push_back(std::this_thread::get_id());
}

// How many indices did not run exactly once.
int64_t not_once(const Coverage& c) {
  return std::count_if(c.counts.begin(), c.counts.end(), [](auto& n) { return n.load() != 1; });
}

// Runs `record` over [0, trip) and checks every index ran once, in non-empty ranges.
void check_covers(KernelContext* ctx, int64_t trip) {
  Coverage c(trip);
  void* ptrs[] = {&c};
  sgraph_parallel_for(ctx, record, ptrs, trip);
  CHECK(not_once(c) == 0);
  for (auto [b, e] : c.ranges) CHECK(b < e);
  if (trip == 0) CHECK(c.ranges.empty());
}

// A graph of three elementwise ops (one region) over n floats.
Graph elementwise(int64_t n) {
  GraphBuilder b("elementwise");
  ValueId x = b.input("x", DType::f32, {n});
  b.output(b.relu(b.add(b.mul(x, b.scalar(0.5f)), b.scalar(0.25f))), "y");
  return b.build();
}

// Warms a Session over elementwise(n) up, checks one served run against a plain loop, and returns
// its report.
Report served(int64_t n, SessionOptions o) {
  Session s(elementwise(n), o);
  const Tensor x = random_f32({n}, 7);
  for (int i = 0; i < o.warmup_runs; ++i) s.run({x});
  REQUIRE(s.planned());
  const Tensor y = s.run({x})[0];
  REQUIRE(y.numel() == n);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i)
    wrong +=
        std::abs(y.data<float>()[i] - std::max(0.0f, x.data<float>()[i] * 0.5f + 0.25f)) > 1e-6f;
  CHECK(wrong == 0);
  return s.report();
}

}  // namespace

TEST_CASE("sgraph_parallel_for covers 0 <= i < trip exactly once in non-empty ranges") {
  for (int threads = 1; threads <= 4; ++threads) {
    KernelContext ctx(threads);
    for (int64_t trip : {0, 1, 2, 3, 7, 8, 15, 16, 17, 1000, 1001}) {
      CAPTURE(threads);
      CAPTURE(trip);
      check_covers(&ctx, trip);
    }
  }
}

TEST_CASE("sgraph_parallel_for splits work for several threads and not for one") {
  for (int threads = 1; threads <= 4; ++threads)
    for (int64_t trip : {2, 3, 7, 1000}) {
      CAPTURE(threads);
      CAPTURE(trip);
      KernelContext ctx(threads);
      Coverage c(trip);
      void* ptrs[] = {&c};
      sgraph_parallel_for(&ctx, record, ptrs, trip);
      const auto ranges = static_cast<int64_t>(c.ranges.size());
      if (threads == 1) {
        REQUIRE(ranges == 1);
        CHECK(c.ranges[0] == std::pair<int64_t, int64_t>{0, trip});
        CHECK(c.threads[0] == std::this_thread::get_id());
      } else {
        CHECK(ranges >= std::min<int64_t>(threads, trip));  // at least one per thread
        CHECK(ranges <= trip);
      }
    }
}

TEST_CASE("sgraph_parallel_for: a null context or a trip below 2 runs once on the calling thread") {
  KernelContext four(4);
  for (auto [ctx, trip] :
       {std::pair<KernelContext*, int64_t>{nullptr, 1000}, {nullptr, 1}, {&four, 1}}) {
    CAPTURE(trip);
    Coverage c(trip);
    void* ptrs[] = {&c};
    sgraph_parallel_for(ctx, record, ptrs, trip);
    REQUIRE(c.ranges.size() == 1);
    CHECK(c.ranges[0] == std::pair<int64_t, int64_t>{0, trip});
    CHECK(c.threads[0] == std::this_thread::get_id());
  }
}

TEST_CASE("sgraph_parallel_for: concurrent callers, on a shared context and on their own") {
  KernelContext shared(2);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      KernelContext own(t % 2 + 2);
      for (int it = 0; it < 50; ++it) {
        const int64_t trip = 100 + 37 * it + t;
        Coverage c(trip);
        void* ptrs[] = {&c};
        sgraph_parallel_for(it % 2 ? &shared : &own, record, ptrs, trip);
        failures += static_cast<int>(not_once(c));
      }
    });
  for (std::thread& c : callers) c.join();
  CHECK(failures.load() == 0);
}

TEST_CASE("sgraph_parallel_for: a nest may itself run parallel nests (from inside a worker)") {
  // The outer nest's ranges run on the outer arena's workers; each inner call dispatches from
  // there to a second arena, or to the same one.
  KernelContext outer(2), inner(3);
  for (KernelContext* in : {&inner, &outer}) {
    struct Nested {
      KernelContext* inner;
      std::deque<Coverage> per_row;  // Coverage cannot move
    } n{in, {}};
    constexpr int64_t kRows = 8, kCols = 500;
    for (int64_t r = 0; r < kRows; ++r) n.per_row.emplace_back(kCols);
    auto rows = [](void* const* ptrs, int64_t begin, int64_t end) {
      auto& st = *static_cast<Nested*>(ptrs[0]);
      for (int64_t r = begin; r < end; ++r) {
        void* p[] = {&st.per_row[static_cast<size_t>(r)]};
        sgraph_parallel_for(st.inner, record, p, kCols);
      }
    };
    void* ptrs[] = {&n};
    sgraph_parallel_for(&outer, rows, ptrs, kRows);
    for (const Coverage& c : n.per_row) CHECK(not_once(c) == 0);
  }
}

TEST_CASE("sgraph_parallel_for: a helper failing on a worker is the caller's failure") {
  // The inner loop's failure is recorded on the thread that ran the outer chunk; the outer call
  // must carry it to its caller, which takes failures after the kernel returns.
  KernelContext outer(2);
  struct Nested {
    std::thread::id caller;
    std::atomic<bool> injected{false};
    Coverage inner{64};
  } n;
  n.caller = std::this_thread::get_id();
  auto rows = [](void* const* ptrs, int64_t begin, int64_t end) {
    auto& st = *static_cast<Nested*>(ptrs[0]);
    for (int64_t r = begin; r < end; ++r) {
      if (std::this_thread::get_id() != st.caller && !st.injected.exchange(true))
        fail_kernel_helpers_for_testing(1);  // the next helper call, this row's
      void* p[] = {&st.inner};
      sgraph_parallel_for(nullptr, record, p, 64);
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // a worker takes some rows
    }
  };
  void* ptrs[] = {&n};
  take_kernel_failure();
  for (int attempt = 0; attempt < 50 && !n.injected.load(); ++attempt) {
    sgraph_parallel_for(&outer, rows, ptrs, 16);
    if (!n.injected.load()) CHECK(take_kernel_failure().empty());
  }
  fail_kernel_helpers_for_testing(0);
  REQUIRE(n.injected.load());  // (a worker ran some rows in 50 tries)
  const std::string failed = take_kernel_failure();
  CHECK(contains(failed, "alloc"));
  CHECK(take_kernel_failure().empty());  // taken once
}

TEST_CASE("region_threads: 1 for tiny regions, more for larger ones, monotone and capped") {
  std::string why;
  CHECK(region_threads(0, 8, &why) == 1);
  CHECK(contains(why, "calling thread"));
  CHECK(region_threads(12'000, 8, &why) == 1);  // 12 us: a dispatch would cost a good part of it
  CHECK(contains(why, "profiled 12 us <"));
  CHECK(region_threads(int64_t{1'000'000'000}, 8, &why) == 8);  // a second per run: everything
  CHECK(contains(why, "profiled 1 s -> 8 threads"));
  CHECK(region_threads(int64_t{1'000'000'000}, 1, &why) == 1);
  CHECK(contains(why, "calling thread"));
  CHECK(region_threads(5'000'000, 8, nullptr) >= 2);  // 5 ms
  // Two threads from 0.5 ms profiled (a kernel of ~25-170 us), the calling thread below.
  CHECK(region_threads(400'000, 8, &why) == 1);
  CHECK(contains(why, "profiled 400 us < 500 us: calling thread"));
  CHECK(region_threads(600'000, 8, &why) == 2);
  CHECK(contains(why, "profiled 600 us -> 2 threads"));
  for (int max_threads = 1; max_threads <= 8; ++max_threads) {
    int prev = 1;
    for (int64_t ns = 1; ns < int64_t{10'000'000'000}; ns = ns * 5 / 4 + 1) {
      CAPTURE(max_threads);
      CAPTURE(ns);
      const int t = region_threads(ns, max_threads, &why);
      CHECK(t >= prev);
      CHECK(t >= 1);
      CHECK(t <= max_threads);
      CHECK(contains(why, t == 1 ? "calling thread" : "-> " + std::to_string(t) + " threads"));
      prev = t;
    }
    CHECK(prev == max_threads);  // 10 s per run uses all of them
  }
}

TEST_CASE("Session: a heavy region gets several threads, a tiny one the calling thread") {
  constexpr int64_t kHeavy = int64_t{1} << 22, kTiny = 8;  // 4M floats (16 MiB), 8 floats
  const Report heavy = served(kHeavy, SessionOptions{.threads = 4});
  REQUIRE(heavy.regions.size() == 1);
  REQUIRE(heavy.regions[0].compiled);
  CHECK(heavy.regions[0].threads >= 2);
  CHECK(heavy.regions[0].threads <= 4);
  CHECK(contains(heavy.regions[0].threads_why,
                 "-> " + std::to_string(heavy.regions[0].threads) + " threads"));

  const Report tiny = served(kTiny, SessionOptions{.threads = 4});
  REQUIRE(tiny.regions.size() == 1);
  CHECK(tiny.regions[0].threads == 1);
  CHECK(contains(tiny.regions[0].threads_why, "calling thread"));

  const Report one = served(kHeavy, SessionOptions{.threads = 1});
  REQUIRE(one.regions.size() == 1);
  CHECK(one.regions[0].threads == 1);

  const Report dflt = served(kHeavy, SessionOptions{});  // the hardware's threads at most
  REQUIRE(dflt.regions.size() == 1);
  CHECK(dflt.regions[0].threads <= std::max(1u, std::thread::hardware_concurrency()));

  const Report interpreted = served(kHeavy, SessionOptions{.jit = false, .threads = 4});
  REQUIRE(interpreted.regions.size() == 1);
  CHECK(interpreted.regions[0].threads == 1);  // no kernel, nothing to run in parallel
}

TEST_CASE("Report: the threads of each region in text, JSON and DOT") {
  const Report r = served(int64_t{1} << 22, SessionOptions{.threads = 2});
  REQUIRE(r.regions.size() == 1);
  const RegionReport& reg = r.regions[0];
  REQUIRE(reg.threads == 2);
  CHECK(contains(r.to_text(), "\n  threads: 2 (" + reg.threads_why + ")\n"));
  const auto j = nlohmann::json::parse(r.to_json());
  CHECK(j["regions"][0]["threads"] == 2);
  CHECK(j["regions"][0]["threads_why"] == reg.threads_why);
  CHECK(contains(r.to_dot(), " us, 2 threads)\""));
}

TEST_CASE("Session: a negative thread count is an error") {
  CHECK(contains(error_of([] { Session(elementwise(4), SessionOptions{.threads = -1}); }),
                 "threads must be at least 0"));
}
