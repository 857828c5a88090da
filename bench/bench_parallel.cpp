// The cost of one parallel dispatch of a region kernel's loop nest (sgraph_parallel_for with a
// trivial nest), which sets the smallest region worth running on several threads
// (region_threads in src/jit/parallel.cpp):
//   build/release/bench/sgraph_bench --benchmark_filter=Parallel
// threads:1 is the direct call; `awake` dispatches back to back (the arena's workers still
// spinning), `asleep` waits 2 ms before each dispatch (outside the timing), as when interpreted
// ops run between kernel calls and the workers have gone to sleep.
#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>

#include "jit/parallel.h"

namespace {

void trivial_nest(void* const* ptrs, int64_t begin, int64_t end) {
  benchmark::DoNotOptimize(ptrs);
  benchmark::DoNotOptimize(begin);
  benchmark::DoNotOptimize(end);
}

void BM_Parallel_Dispatch_Awake(benchmark::State& state) {
  sgraph::KernelContext ctx(static_cast<int>(state.range(0)));
  for (auto _ : state) sgraph_parallel_for(&ctx, trivial_nest, nullptr, 1024);
}

void BM_Parallel_Dispatch_Asleep(benchmark::State& state) {
  sgraph::KernelContext ctx(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    state.PauseTiming();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    state.ResumeTiming();
    sgraph_parallel_for(&ctx, trivial_nest, nullptr, 1024);
  }
}

BENCHMARK(BM_Parallel_Dispatch_Awake)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Parallel_Dispatch_Asleep)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Iterations(500)
    ->UseRealTime();

}  // namespace
