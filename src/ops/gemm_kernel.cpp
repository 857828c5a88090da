// GEMM for the contraction ops: Eigen for floats (the only translation unit that instantiates
// Eigen's product kernels), a plain loop for integers.
#include "ops/gemm_kernel.h"

#include <Eigen/Core>
#include <type_traits>

namespace sgraph::ops {
namespace {

template <class T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class T>
void eigen_gemm(int64_t M, int64_t N, int64_t K, const T* a, bool trans_a, const T* b, bool trans_b,
                T* c, T alpha, T beta) {
  Eigen::Map<RowMajor<T>> C(c, M, N);
  const Eigen::Map<const RowMajor<T>> A(a, trans_a ? K : M, trans_a ? M : K);
  const Eigen::Map<const RowMajor<T>> B(b, trans_b ? N : K, trans_b ? K : N);
  auto product = [&](const auto& x, const auto& y) {
    if (beta == T(0)) {
      C.noalias() = alpha * x * y;
    } else {
      if (beta != T(1)) C *= beta;
      C.noalias() += alpha * x * y;
    }
  };
  if (trans_a && trans_b)
    product(A.transpose(), B.transpose());
  else if (trans_a)
    product(A.transpose(), B);
  else if (trans_b)
    product(A, B.transpose());
  else
    product(A, B);
}

// Unsigned arithmetic: integer overflow wraps instead of being undefined.
template <class T>
void loop_gemm(int64_t M, int64_t N, int64_t K, const T* a, bool trans_a, const T* b, bool trans_b,
               T* c, T alpha, T beta) {
  using U = std::make_unsigned_t<T>;
  const int64_t a_row = trans_a ? 1 : K, a_col = trans_a ? M : 1;
  const int64_t b_row = trans_b ? 1 : N, b_col = trans_b ? K : 1;
  for (int64_t i = 0; i < M; ++i) {
    U* ci = reinterpret_cast<U*>(c + i * N);
    for (int64_t j = 0; j < N; ++j) ci[j] = beta == 0 ? U(0) : U(beta) * ci[j];
    for (int64_t k = 0; k < K; ++k) {
      const U aik = U(alpha) * U(a[i * a_row + k * a_col]);
      const T* bk = b + k * b_row;
      for (int64_t j = 0; j < N; ++j) ci[j] += aik * U(bk[j * b_col]);
    }
  }
}

}  // namespace

template <class T>
void gemm(int64_t M, int64_t N, int64_t K, const T* a, bool trans_a, const T* b, bool trans_b, T* c,
          T alpha, T beta) {
  if (M == 0 || N == 0) return;
  if constexpr (std::is_floating_point_v<T>) {
    if (K == 0) {
      for (int64_t i = 0; i < M * N; ++i) c[i] = beta == T(0) ? T(0) : beta * c[i];
      return;
    }
    eigen_gemm(M, N, K, a, trans_a, b, trans_b, c, alpha, beta);
  } else {
    loop_gemm(M, N, K, a, trans_a, b, trans_b, c, alpha, beta);
  }
}

template void gemm<float>(int64_t, int64_t, int64_t, const float*, bool, const float*, bool, float*,
                          float, float);
template void gemm<double>(int64_t, int64_t, int64_t, const double*, bool, const double*, bool,
                           double*, double, double);
template void gemm<int32_t>(int64_t, int64_t, int64_t, const int32_t*, bool, const int32_t*, bool,
                            int32_t*, int32_t, int32_t);
template void gemm<int64_t>(int64_t, int64_t, int64_t, const int64_t*, bool, const int64_t*, bool,
                            int64_t*, int64_t, int64_t);

}  // namespace sgraph::ops
