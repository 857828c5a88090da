// The JIT's target machine as LLVM sees it.
#pragma once
#include <string>

namespace sgraph::jit {
std::string llvm_version();  // e.g. "19.1.7"
std::string host_cpu();      // e.g. "znver4"

// Whether the kernels may treat a masked vector load or store as cheap: true where the host has
// AVX-512 (a mask register makes them one plain instruction), false on AVX2-only hosts, whose
// masked store (vmaskmovps) takes tens of cycles on AMD's cores. Decides whether a nest's short
// rows end in a masked vector (KernelBuilder::emit_loops; a row's inner loops, whose bodies repay
// it, are masked on every host). SGRAPH_MASKED_TAILS=1|0 overrides it; read once.
bool masked_tails();
// Tests: 1 or 0 makes masked_tails() say so in this process from now on; -1 undoes it.
void set_masked_tails_for_testing(int on);
}  // namespace sgraph::jit
