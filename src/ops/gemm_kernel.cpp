// GEMM for the contraction ops: picks the float GEMM variant the CPU runs best (the variants are
// gemm_eigen.inc compiled per instruction set) and runs integers through a plain loop.
#include "ops/gemm_kernel.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <type_traits>

#include "ir/debug.h"
#include "sgraph/error.h"

namespace sgraph::ops {
namespace {

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

const GemmKernels& kernels_of(GemmIsa isa) {
  static const GemmKernels* const kKernels[] = {&gemm_base::kernels, &gemm_avx2::kernels,
                                                &gemm_avx512_eigen::kernels, &gemm_avx512::kernels};
  static_assert(std::size(kKernels) == std::size(kGemmIsas));
  return *kKernels[int(isa)];
}

GemmIsa best_supported() {
  for (GemmIsa isa : {GemmIsa::avx512, GemmIsa::avx2})
    if (gemm_isa_supported(isa)) return isa;
  return GemmIsa::base;
}

// C's columns [n0, n1) of op(A) * op(B): B's columns (rows when trans_b) from n0 and C's columns
// from n0, each row of C still N wide.
template <class T>
void float_gemm(const GemmKernels& k, int64_t M, int64_t N, int64_t K, const T* a, bool trans_a,
                const T* b, bool trans_b, T* c, T alpha, T beta, int64_t n0, int64_t n1) {
  if (M == 0 || n0 >= n1) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = n0; j < n1; ++j) c[i * N + j] = beta == T(0) ? T(0) : beta * c[i * N + j];
    return;
  }
  const T* bn = trans_b ? b + n0 * K : b + n0;
  const int64_t ldb = trans_b ? K : N;
  if constexpr (std::is_same_v<T, float>)
    k.f32(M, n1 - n0, K, a, trans_a, bn, ldb, trans_b, c + n0, N, alpha, beta);
  else
    k.f64(M, n1 - n0, K, a, trans_a, bn, ldb, trans_b, c + n0, N, alpha, beta);
}

}  // namespace

const char* gemm_isa_name(GemmIsa isa) {
  static constexpr const char* kNames[] = {"base", "avx2", "avx512_eigen", "avx512"};
  static_assert(std::size(kNames) == std::size(kGemmIsas));
  return kNames[int(isa)];
}

// Each variant needs every feature its translation unit was compiled with (CMakeLists.txt).
bool gemm_isa_supported(GemmIsa isa) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  switch (isa) {
    case GemmIsa::base:
      return true;
    case GemmIsa::avx2:
      return avx2;
    case GemmIsa::avx512_eigen:
    case GemmIsa::avx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  }
  return false;
}

GemmIsa gemm_isa() {
  static const GemmIsa isa = [] {
    const GemmIsa picked = pick_gemm_isa(std::getenv("SGRAPH_GEMM_ISA"));
    SG_LOG(1) << "GEMM: kernels for " << gemm_isa_name(picked);
    return picked;
  }();
  return isa;
}

GemmIsa pick_gemm_isa(const char* request) {
  const GemmIsa best = best_supported();
  if (request == nullptr || *request == '\0') return best;
  for (GemmIsa isa : kGemmIsas) {
    if (std::strcmp(request, gemm_isa_name(isa)) != 0) continue;
    if (gemm_isa_supported(isa)) return isa;
    SG_LOG(1) << "SGRAPH_GEMM_ISA=" << request << " ignored: this CPU cannot run it";
    return best;
  }
  SG_LOG(1) << "SGRAPH_GEMM_ISA=" << request
            << " ignored: not one of base, avx2, avx512_eigen, avx512";
  return best;
}

template <class T>
void gemm(int64_t M, int64_t N, int64_t K, const T* a, bool trans_a, const T* b, bool trans_b, T* c,
          T alpha, T beta) {
  if constexpr (std::is_floating_point_v<T>) {
    float_gemm(kernels_of(gemm_isa()), M, N, K, a, trans_a, b, trans_b, c, alpha, beta, 0, N);
  } else if (M != 0 && N != 0) {
    loop_gemm(M, N, K, a, trans_a, b, trans_b, c, alpha, beta);
  }
}

template <class T>
void gemm_with(GemmIsa isa, int64_t M, int64_t N, int64_t K, const T* a, bool trans_a, const T* b,
               bool trans_b, T* c, T alpha, T beta) {
  SG_ASSERT(gemm_isa_supported(isa)) << "this CPU cannot run the " << gemm_isa_name(isa) << " GEMM";
  float_gemm(kernels_of(isa), M, N, K, a, trans_a, b, trans_b, c, alpha, beta, 0, N);
}

template <class T>
void gemm_columns(int64_t M, int64_t N, int64_t K, const T* a, bool trans_a, const T* b,
                  bool trans_b, T* c, int64_t n0, int64_t n1, T alpha, T beta) {
  SG_ASSERT(0 <= n0 && n0 <= n1 && n1 <= N) << "columns [" << n0 << ", " << n1 << ") of " << N;
  float_gemm(kernels_of(gemm_isa()), M, N, K, a, trans_a, b, trans_b, c, alpha, beta, n0, n1);
}

namespace {
constexpr int64_t kAlign = 16;  // floats: 64 bytes

float* aligned(std::vector<float>& v) {
  const auto at = reinterpret_cast<std::uintptr_t>(v.data());
  return v.data() + (kAlign - (at / sizeof(float)) % kAlign) % kAlign;
}
}  // namespace

PackedB::PackedB(int64_t K, int64_t N, const float* b, bool trans_b)
    : PackedB(gemm_isa(), K, N, b, trans_b) {}

PackedB::PackedB(GemmIsa isa, int64_t K, int64_t N, const float* b, bool trans_b) {
  SG_ASSERT(K > 0 && N > 0) << "packing an empty GEMM operand";
  SG_ASSERT(gemm_isa_supported(isa)) << "this CPU cannot run the " << gemm_isa_name(isa) << " GEMM";
  const GemmKernels& k = kernels_of(isa);
  p_.isa = isa;
  p_.trans_b = trans_b;
  p_.K = K;
  p_.N = N;
  k.blocking_f32(K, N, &p_.kc, &p_.mc, &p_.nc, &p_.panel);
  int64_t at = 0;
  for (int64_t k0 = 0; k0 < K; k0 += p_.kc)
    for (int64_t n0 = 0; n0 < N; n0 += p_.mc) {
      offsets_.push_back(at);
      // (whole panels: a variant may pad the last one past N)
      const int64_t width = (std::min(p_.mc, N - n0) + p_.panel - 1) / p_.panel * p_.panel;
      at += (std::min(p_.kc, K - k0) * width + kAlign - 1) / kAlign * kAlign;
    }
  storage_.resize(static_cast<size_t>(at + kAlign));
  p_.offsets = offsets_.data();
  p_.data = aligned(storage_);
  k.pack_f32(p_, b);
}

namespace {

// The panels of a packed B's column block starting at column n0: ceil(its width / panel).
int64_t block_panels(const PackedGemmB& p, int64_t n0) {
  return (std::min(p.mc, p.N - n0) + p.panel - 1) / p.panel;
}

// The panels of all its column blocks.
int64_t packed_panels(const PackedGemmB& p) {
  int64_t n = 0;
  for (int64_t n0 = 0; n0 < p.N; n0 += p.mc) n += block_panels(p, n0);
  return n;
}

// The first column of panel u (counted over the blocks in order); p.N for the end.
int64_t panel_column(const PackedGemmB& p, int64_t u) {
  for (int64_t n0 = 0; n0 < p.N; n0 += p.mc) {
    if (u < block_panels(p, n0)) return n0 + u * p.panel;
    u -= block_panels(p, n0);
  }
  return p.N;
}

}  // namespace

int64_t packed_parts(const PackedGemmB& p, int64_t parts) {
  return std::max<int64_t>(1, std::min(parts, packed_panels(p)));
}

std::pair<int64_t, int64_t> packed_columns(const PackedGemmB& p, int64_t part, int64_t parts) {
  SG_ASSERT(parts >= 1 && part >= 0 && part < parts) << "part " << part << " of " << parts;
  if (parts == 1) return {0, p.N};
  const int64_t panels = packed_panels(p);
  return {panel_column(p, part * panels / parts), panel_column(p, (part + 1) * panels / parts)};
}

void gemm_packed(int64_t M, const float* a, bool trans_a, const PackedB& b, float* c, float alpha,
                 float beta, int64_t part, int64_t parts) {
  const PackedGemmB& p = b.view();
  if (M == 0) return;
  const auto [n0, n1] = packed_columns(p, part, parts);
  if (n0 >= n1) return;
  if (beta != 0 && beta != 1)
    for (int64_t i = 0; i < M; ++i) {
      float* row = c + i * p.N;
      for (int64_t j = n0; j < n1; ++j) row[j] *= beta;
    }
  kernels_of(p.isa).packed_f32(M, a, trans_a, p, c, alpha, n0, n1, /*add=*/beta != 0);
}

template void gemm<float>(int64_t, int64_t, int64_t, const float*, bool, const float*, bool, float*,
                          float, float);
template void gemm<double>(int64_t, int64_t, int64_t, const double*, bool, const double*, bool,
                           double*, double, double);
template void gemm<int32_t>(int64_t, int64_t, int64_t, const int32_t*, bool, const int32_t*, bool,
                            int32_t*, int32_t, int32_t);
template void gemm<int64_t>(int64_t, int64_t, int64_t, const int64_t*, bool, const int64_t*, bool,
                            int64_t*, int64_t, int64_t);
template void gemm_columns<float>(int64_t, int64_t, int64_t, const float*, bool, const float*, bool,
                                  float*, int64_t, int64_t, float, float);
template void gemm_columns<double>(int64_t, int64_t, int64_t, const double*, bool, const double*,
                                   bool, double*, int64_t, int64_t, double, double);
template void gemm_with<float>(GemmIsa, int64_t, int64_t, int64_t, const float*, bool, const float*,
                               bool, float*, float, float);
template void gemm_with<double>(GemmIsa, int64_t, int64_t, int64_t, const double*, bool,
                                const double*, bool, double*, double, double);

}  // namespace sgraph::ops
