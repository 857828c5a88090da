// try_start_thread's test hook (see threads.h).
#include "ir/threads.h"

#include <atomic>

namespace sgraph {
namespace {
std::atomic<int> failures_to_inject{0};
}  // namespace

bool detail::injected_thread_start_failure() {
  int n = failures_to_inject.load(std::memory_order_relaxed);
  while (n > 0)
    if (failures_to_inject.compare_exchange_weak(n, n - 1)) return true;
  return false;
}

void fail_thread_starts_for_testing(int n) { failures_to_inject.store(n); }

}  // namespace sgraph
