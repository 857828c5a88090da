// Facts about the JIT's target, from LLVM (kept out of public headers).
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/TargetParser/Host.h>

#include "jit/host.h"

namespace sgraph::jit {

std::string llvm_version() { return LLVM_VERSION_STRING; }
std::string host_cpu() { return llvm::sys::getHostCPUName().str(); }

}  // namespace sgraph::jit
