// The one GEMM entry point the contraction ops (MatMul, Gemm, Conv, ConvTranspose) call.
//
//   gemm<float>(M, N, K, a, /*trans_a=*/false, b, /*trans_b=*/true, c);  // c = a * b^T
//
// All matrices are dense and row-major: A is M x K (K x M when trans_a), B is K x N (N x K when
// trans_b), C is M x N. Computes C = alpha * op(A) * op(B) + beta * C; with beta == 0, C is only
// written, never read (it may be uninitialised). Float types run Eigen's blocked kernels
// (instantiated once, in gemm_kernel.cpp); integer types a plain loop that wraps on overflow.
#pragma once

#include <cstdint>

namespace sgraph::ops {

template <class T>
void gemm(int64_t M, int64_t N, int64_t K, const T* a, bool trans_a, const T* b, bool trans_b, T* c,
          T alpha = T(1), T beta = T(0));

extern template void gemm<float>(int64_t, int64_t, int64_t, const float*, bool, const float*, bool,
                                 float*, float, float);
extern template void gemm<double>(int64_t, int64_t, int64_t, const double*, bool, const double*,
                                  bool, double*, double, double);
extern template void gemm<int32_t>(int64_t, int64_t, int64_t, const int32_t*, bool, const int32_t*,
                                   bool, int32_t*, int32_t, int32_t);
extern template void gemm<int64_t>(int64_t, int64_t, int64_t, const int64_t*, bool, const int64_t*,
                                   bool, int64_t*, int64_t, int64_t);

}  // namespace sgraph::ops
