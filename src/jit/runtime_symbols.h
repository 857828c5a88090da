// The runtime helpers generated kernels call by name (sgraph_parallel_for, ...), with their
// addresses: the JIT defines each as an absolute symbol, so kernels link to them whether or not
// the process exports them (sgraph is usually linked statically into a service).
#pragma once

#include <span>
#include <utility>

namespace sgraph::jit {

std::span<const std::pair<const char*, void*>> runtime_symbols();

}  // namespace sgraph::jit
