// Parallel loop nests on oneTBB task arenas (one arena per region plan, of the region's thread
// count), and the per-region thread decision.
#include "jit/parallel.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "ir/threads.h"
#include "sgraph/error.h"

// ThreadSanitizer builds run parallel loops on plain threads: Debian's libtbb is not instrumented,
// so TSan cannot see its hand-offs of work between threads and would report every parallel loop.
// Plain std::threads (same chunks, same nesting) keep the kernels' own memory accesses checked.
#if defined(__SANITIZE_THREAD__)
#define SGRAPH_PLAIN_THREADS 1
#else
#define SGRAPH_PLAIN_THREADS 0
#endif

namespace sgraph {

namespace {

// Ranges per thread: a few, so a thread delayed by the (shared) machine does not hold everyone up.
constexpr int64_t kChunksPerThread = 4;

// Profiled (interpreted) time per thread a region kernel gets. A parallel dispatch of a trivial
// nest on 2 threads costs 0.7-1.5 us back to back (workers awake) and 5-13 us when the worker has
// gone to sleep between kernel calls, as it does while interpreted ops run
// (bench/bench_parallel.cpp, `sgraph_bench --benchmark_filter=Parallel` on the shared 2-core
// development machine; a direct call costs 10 ns). A fused kernel runs 3-20x faster than its
// interpreted ops (`--benchmark_filter=Fusion`: softmax 3.5x, an elementwise chain 22x), so a
// region profiled at 1 ms has a 50-300 us kernel: on 2 threads 25-150 us each, which repays even
// a cold dispatch. Two threads from kParallelMinNs: a region profiled at 0.5 ms has a 25-170 us
// kernel, 12-85 us each on 2 threads, which repays the dispatch but at the very end of that range
// (small_cnn at 16 images, profiled 0.67-1.1 ms from run to run, so planned on 1 thread or 2 by
// chance when the limit was 1 ms: its 0.23 ms kernel takes 0.135 ms on 2; the synthetic models'
// other regions and the real models' are profiled far from 0.5 ms and unchanged). Smaller regions
// run on the calling thread.
constexpr int64_t kNsPerThread = 500'000;
constexpr int64_t kParallelMinNs = 500'000;

std::string duration(int64_t ns) {
  char buf[32];
  const double x = static_cast<double>(ns);
  if (x < 1e6)
    std::snprintf(buf, sizeof buf, "%.3g us", x / 1e3);
  else if (x < 1e9)
    std::snprintf(buf, sizeof buf, "%.3g ms", x / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3g s", x / 1e9);
  return buf;
}

}  // namespace

int64_t parallel_work() {
  constexpr int64_t kDefault = int64_t{1} << 19;
  const char* env = std::getenv("SGRAPH_PARALLEL_WORK");
  if (!env || !*env) return kDefault;
  char* end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  return *end == '\0' && v >= 0 ? static_cast<int64_t>(v) : kDefault;
}

int hardware_threads() { return std::max(1, tbb::info::default_concurrency()); }

struct KernelContext::Arena {
  explicit Arena(int threads) : arena(threads) { arena.initialize(); }  // now, not on first use
  tbb::task_arena arena;
};

KernelContext::KernelContext(int t) : threads(t) {
  SG_ASSERT(threads >= 1) << "a kernel context needs at least one thread, got " << threads;
  // TBB's worker pool holds the machine's threads less one: an arena asking for more than that
  // gets no more, and TBB warns on stderr.
  if (threads > 1 && !SGRAPH_PLAIN_THREADS)
    arena = std::make_unique<Arena>(std::min(threads, hardware_threads()));
}

KernelContext::~KernelContext() = default;

namespace {
std::atomic<int> forced_region_threads{0};  // force_region_threads_for_testing
}  // namespace

void force_region_threads_for_testing(int n) { forced_region_threads.store(std::max(n, 0)); }

int region_threads(int64_t profiled_ns, int max_threads, std::string* why) {
  SG_ASSERT(max_threads >= 1) << "max_threads must be at least 1, got " << max_threads;
  if (const int forced = forced_region_threads.load(); forced > 0) {
    if (why != nullptr) *why = std::to_string(forced) + " threads (forced for testing)";
    return forced;
  }
  const int64_t wanted =
      profiled_ns < kParallelMinNs ? 1 : std::max<int64_t>(2, profiled_ns / kNsPerThread);
  std::string reason = "profiled " + duration(profiled_ns);
  int threads = 1;
  if (wanted < 2) {
    reason += " < " + duration(kParallelMinNs) + ": calling thread";
  } else if (max_threads == 1) {
    reason += ", at most 1 thread: calling thread";
  } else {
    threads = static_cast<int>(std::min<int64_t>(wanted, max_threads));
    reason += " -> " + std::to_string(threads) + " threads";
    if (threads < wanted) reason += " (the maximum)";
  }
  if (why != nullptr) *why = std::move(reason);
  return threads;
}

namespace {
thread_local bool kernel_failed = false;
thread_local std::string kernel_failure;  // its message, when there was memory for it
std::atomic<int> failures_to_inject{0};
}  // namespace

void record_kernel_failure(const char* what) noexcept {
  if (kernel_failed) return;  // the first failure is the cause
  kernel_failed = true;
  try {
    kernel_failure = what && *what ? what : "unknown failure";
  } catch (...) {
  }
}

std::string take_kernel_failure() {
  if (!kernel_failed) return "";
  kernel_failed = false;
  std::string what = std::exchange(kernel_failure, std::string{});
  return what.empty() ? "out of memory" : what;
}

void fail_kernel_helpers_for_testing(int n) { failures_to_inject.store(n); }

void maybe_fail_for_testing() {
  int n = failures_to_inject.load(std::memory_order_relaxed);
  while (n > 0)
    if (failures_to_inject.compare_exchange_weak(n, n - 1)) throw std::bad_alloc();
}

}  // namespace sgraph

namespace {

// Runs chunks 0 <= c < n, each once, on `threads` plain threads (the caller one of them); the
// first exception is rethrown on the caller.
template <class Chunk>
[[maybe_unused]] void run_on_plain_threads(int threads, int64_t n, const Chunk& chunk) {
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::exception_ptr first;
  auto work = [&] {
    try {
      for (int64_t c; (c = next.fetch_add(1)) < n;) chunk(c);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!first) first = std::current_exception();
      next.store(n);
    }
  };
  std::vector<std::thread> helpers;
  // (A helper that cannot be started leaves its chunks to the threads running.)
  for (int t = 1; t < threads && sgraph::try_start_thread(helpers, work); ++t) {
  }
  work();
  for (std::thread& h : helpers) h.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace

extern "C" void sgraph_parallel_for(void* ctx,
                                    void (*nest)(void* const* ptrs, int64_t begin, int64_t end),
                                    void* const* ptrs, int64_t trip) {
  if (trip <= 0) return;
  auto* k = static_cast<sgraph::KernelContext*>(ctx);
  try {  // (a nest may be C++ code, the GEMM's; TBB may fail to start tasks)
    sgraph::maybe_fail_for_testing();
    if (k == nullptr || k->threads <= 1 || trip < 2) {
      nest(ptrs, 0, trip);
      return;
    }
    // Chunk c of n covers [c*q + min(c, r), (c+1)*q + min(c+1, r)): sizes q or q+1, none empty.
    const int64_t n = std::min<int64_t>(trip, k->threads * sgraph::kChunksPerThread);
    const int64_t q = trip / n, r = trip % n;
    auto begin_of = [&](int64_t c) { return c * q + std::min(c, r); };
    // A helper the nest calls (a nested parallel loop, the GEMM) records its failure on the thread
    // that ran the chunk, a worker perhaps: it is carried to this call's thread as an exception.
    auto chunk = [&](int64_t c) {
      nest(ptrs, begin_of(c), begin_of(c + 1));
      if (std::string failed = sgraph::take_kernel_failure(); !failed.empty())
        throw std::runtime_error(failed);
    };
#if SGRAPH_PLAIN_THREADS
    run_on_plain_threads(k->threads, n, chunk);
#else
    k->arena->arena.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<int64_t>(0, n, 1),
          [&](const tbb::blocked_range<int64_t>& cs) {
            for (int64_t c = cs.begin(); c != cs.end(); ++c) chunk(c);
          },
          tbb::simple_partitioner());
    });
#endif
  } catch (const std::exception& e) {
    sgraph::record_kernel_failure(e.what());
  } catch (...) {
    sgraph::record_kernel_failure("unknown exception in a parallel loop");
  }
}
