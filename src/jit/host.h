// The JIT's target machine as LLVM sees it.
#pragma once
#include <string>

namespace sgraph::jit {
std::string llvm_version();  // e.g. "19.1.7"
std::string host_cpu();      // e.g. "znver4"
}  // namespace sgraph::jit
