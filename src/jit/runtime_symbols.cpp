// The table of runtime helpers kernels call (see runtime_symbols.h).
#include "jit/runtime_symbols.h"

#include "jit/kernel_runtime.h"
#include "jit/parallel.h"

namespace sgraph::jit {

std::span<const std::pair<const char*, void*>> runtime_symbols() {
  static const std::pair<const char*, void*> table[] = {
      {"sgraph_parallel_for", reinterpret_cast<void*>(&sgraph_parallel_for)},
      {"sgraph_gemm_f32", reinterpret_cast<void*>(&sgraph_gemm_f32)},
      {"sgraph_gemm_f64", reinterpret_cast<void*>(&sgraph_gemm_f64)},
      {"sgraph_gemm_const_b_f32", reinterpret_cast<void*>(&sgraph_gemm_const_b_f32)},
      {"sgraph_gemm_const_a_f32", reinterpret_cast<void*>(&sgraph_gemm_const_a_f32)},
      {"sgraph_conv_winograd_f32", reinterpret_cast<void*>(&sgraph_conv_winograd_f32)},
  };
  return table;
}

}  // namespace sgraph::jit
