// Parallel loop nests for region kernels, and how many threads a region gets.
//
// A compiled region kernel outlines each of its loop nests into `nest(ptrs, begin, end)`, which
// runs the nest's outermost loop over [begin, end), and calls
//   sgraph_parallel_for(ctx, nest, ptrs, trip);
// with the `ctx` it was passed (a KernelContext*). The context holds the region's thread count,
// decided once per plan by region_threads() from the region's profiled warm-up time, and a oneTBB
// task arena of that concurrency, so a region never uses more threads than it was given.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace sgraph {

// The least work of a static loop nest that a multi-threaded kernel splits over its threads (the
// nest's elements times its body's instructions as emitted, a call as 30; see KernelBuilder):
// SGRAPH_PARALLEL_WORK, read when a kernel is built, or 2^19. The tests set 0, so that every
// parallel nest of a multi-threaded kernel is split, however small.
int64_t parallel_work();

// What a region kernel's ctx argument points at. One per region plan; safe to use from several
// threads at once.
struct KernelContext {
  explicit KernelContext(int threads);  // threads >= 1; 1: every nest runs on the calling thread
  ~KernelContext();
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  const int threads;
  // The TBB task arena (defined in parallel.cpp), of `threads` concurrency but at most the
  // machine's threads; null when threads == 1.
  struct Arena;
  std::unique_ptr<Arena> arena;
  // State the kernels' runtime helpers keep for the plan's life: the GEMM's packed constant
  // operands (jit/kernel_runtime.cpp), made on first use (once: calls on several threads may run
  // the kernel at once; the cache locks itself).
  std::once_flag gemm_cache_once;
  std::shared_ptr<void> gemm_cache;
};

// Failures inside the runtime helpers compiled kernels call (sgraph_parallel_for, the GEMM). No
// C++ exception may unwind through generated code, so each helper catches at its C boundary,
// records the failure for the thread that called the kernel, and returns; the kernel runs to its
// end (its outputs are then garbage) and its caller, which took the failure before the call, takes
// it after and throws sgraph::Error.
void record_kernel_failure(const char* what) noexcept;
// The first failure recorded on this thread since the last call (and clears it); "" when none.
std::string take_kernel_failure();
// Tests: the next `n` helper calls fail as if memory had run out.
void fail_kernel_helpers_for_testing(int n);
// Helpers: throws std::bad_alloc when a test asked for a failure.
void maybe_fail_for_testing();

// The threads this machine offers (the process's CPU affinity respected).
int hardware_threads();

// Threads for a region kernel whose ops took `profiled_ns` interpreted (median over the warm-up),
// at most `max_threads` (>= 1): 1, the calling thread, for regions too small to repay a parallel
// dispatch, then more for larger ones. Monotone in profiled_ns. `why` (if not null) gets the
// reason, e.g. "profiled 1.8 ms -> 2 threads".
int region_threads(int64_t profiled_ns, int max_threads, std::string* why);

// Tests and the fuzzers: from now on region_threads gives `n` threads whatever the profile and
// max_threads, so regions of small graphs run as parallel kernels (0: as profiled, the default).
void force_region_threads_for_testing(int n);

}  // namespace sgraph

// The helper compiled kernels call: runs nest(ptrs, b, e) over contiguous, non-empty ranges
// [b, e) that together cover [0, trip) once each, and returns when all are done. With a null ctx,
// a single thread, or trip < 2, it is one call nest(ptrs, 0, trip) on the calling thread (none
// when trip <= 0).
extern "C" void sgraph_parallel_for(void* ctx,
                                    void (*nest)(void* const* ptrs, int64_t begin, int64_t end),
                                    void* const* ptrs, int64_t trip);
