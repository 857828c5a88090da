// The machine's limits the fused kernels are measured against (see roofline.h):
//   build/release/bench/sgraph_bench --benchmark_filter=Roofline
// BM_Roofline_Copy/Triad show the STREAM-style bandwidth as benchmarks of their own; the other
// benchmarks report their rate as a fraction of the figures these functions measure once.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "jit/parallel.h"
#include "ops/gemm_kernel.h"
#include "roofline.h"

namespace sgraph::bench {
namespace {

constexpr int64_t kElems = int64_t{1} << 25;  // 128 MiB of floats per array

struct Arrays {
  std::vector<float> a = std::vector<float>(kElems, 1.0f), b = std::vector<float>(kElems, 2.0f),
                     c = std::vector<float>(kElems, 3.0f);
};
Arrays& arrays() {
  static Arrays arr;
  return arr;
}

struct Job {
  float *a, *b, *c;
  bool triad;
};

void nest(void* const* ptrs, int64_t begin, int64_t end) {
  const auto* job = reinterpret_cast<const Job*>(ptrs);
  const int64_t chunk = kElems / 64;  // 64 blocks split over the threads
  for (int64_t k = begin; k < end; ++k) {
    const int64_t lo = k * chunk, hi = lo + chunk;
    if (job->triad) {
      for (int64_t i = lo; i < hi; ++i) job->a[i] = job->b[i] + 3.0f * job->c[i];
    } else {
      std::memcpy(job->b + lo, job->a + lo, sizeof(float) * (hi - lo));
    }
  }
}

// One pass; returns the bytes it moved.
double pass(KernelContext& ctx, bool triad) {
  Arrays& arr = arrays();
  Job job{arr.a.data(), arr.b.data(), arr.c.data(), triad};
  sgraph_parallel_for(&ctx, nest, reinterpret_cast<void* const*>(&job), 64);
  return (triad ? 3.0 : 2.0) * sizeof(float) * static_cast<double>(kElems);
}

double best_rate(int threads, bool triad) {
  static std::mutex mu;
  static std::map<std::pair<int, bool>, double> cache;
  std::lock_guard lock(mu);
  if (auto it = cache.find({threads, triad}); it != cache.end()) return it->second;
  KernelContext ctx(threads);
  double best = 0;
  for (int rep = 0; rep < 8; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    const double bytes = pass(ctx, triad);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0) best = std::max(best, bytes / s);  // the first pass faults the pages in
  }
  return cache[{threads, triad}] = best;
}

}  // namespace

double copy_bandwidth(int threads) { return best_rate(threads, false); }
double triad_bandwidth(int threads) { return best_rate(threads, true); }

double sgemm_peak() {
  static const double peak = [] {
    const int64_t n = 1024;
    std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
    double best = 0;
    for (int rep = 0; rep < 4; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      ops::gemm<float>(n, n, n, a.data(), false, b.data(), false, c.data());
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, 2.0 * n * n * n / s);
    }
    return best;
  }();
  return peak;
}

namespace {

void BM_Roofline(benchmark::State& state, bool triad) {
  const int threads = static_cast<int>(state.range(0));
  KernelContext ctx(threads);
  pass(ctx, triad);  // fault the pages in
  double bytes = 0;
  for (auto _ : state) bytes = pass(ctx, triad);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_Roofline, Copy, false)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Roofline, Triad, true)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sgraph::bench
