// Facts about the JIT's target, from LLVM (kept out of public headers).
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/TargetParser/Host.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "jit/host.h"

namespace sgraph::jit {

std::string llvm_version() { return LLVM_VERSION_STRING; }
std::string host_cpu() { return llvm::sys::getHostCPUName().str(); }

namespace {
std::atomic<int> masked_tails_override{-1};  // (set_masked_tails_for_testing)
}  // namespace

void set_masked_tails_for_testing(int on) { masked_tails_override.store(on < 0 ? -1 : on != 0); }

bool masked_tails() {
  if (const int forced = masked_tails_override.load(std::memory_order_relaxed); forced >= 0)
    return forced != 0;
  static const bool on = [] {
    if (const char* env = std::getenv("SGRAPH_MASKED_TAILS"); env && *env)
      return std::strcmp(env, "0") != 0;
    const llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    const auto it = features.find("avx512f");
    return it != features.end() && it->second;
  }();
  return on;
}

}  // namespace sgraph::jit
