// The one GEMM entry point the contraction ops (MatMul, Gemm, Conv, ConvTranspose) call.
//
//   gemm<float>(M, N, K, a, /*trans_a=*/false, b, /*trans_b=*/true, c);  // c = a * b^T
//
// All matrices are dense and row-major: A is M x K (K x M when trans_a), B is K x N (N x K when
// trans_b), C is M x N. Computes C = alpha * op(A) * op(B) + beta * C; with beta == 0, C is only
// written, never read (it may be uninitialised). Integer types run a plain loop that wraps on
// overflow. Float types run Eigen's blocked kernels, or on AVX-512 for f32 a micro-kernel of
// sgraph's own, compiled once per instruction set
// (gemm_eigen.inc: baseline x86-64, AVX2+FMA, AVX-512) so that the library stays portable; the
// best variant the CPU runs is picked once, at the first call.
// SGRAPH_GEMM_ISA=base|avx2|avx512_eigen|avx512 forces one (ignored, with a log line at
// SGRAPH_DEBUG=1, when the CPU cannot run it).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

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

// gemm<T> (float or double) on C's columns [n0, n1) only (0 <= n0 <= n1 <= N), reading only
// op(B)'s columns [n0, n1): the column ranges of one product may be computed on different threads
// at once. Each range packs its columns of B and all of A, where a split of C's rows would pack
// all of B for every block.
template <class T>
void gemm_columns(int64_t M, int64_t N, int64_t K, const T* a, bool trans_a, const T* b,
                  bool trans_b, T* c, int64_t n0, int64_t n1, T alpha = T(1), T beta = T(0));

extern template void gemm_columns<float>(int64_t, int64_t, int64_t, const float*, bool,
                                         const float*, bool, float*, int64_t, int64_t, float,
                                         float);
extern template void gemm_columns<double>(int64_t, int64_t, int64_t, const double*, bool,
                                          const double*, bool, double*, int64_t, int64_t, double,
                                          double);

// The instruction sets the float GEMM is compiled for, weakest first: avx512_eigen is AVX-512 on
// Eigen's kernels only (the f32 micro-kernel of avx512 left out), picked only when asked for.
enum class GemmIsa { base, avx2, avx512_eigen, avx512 };
inline constexpr GemmIsa kGemmIsas[] = {GemmIsa::base, GemmIsa::avx2, GemmIsa::avx512_eigen,
                                        GemmIsa::avx512};

const char* gemm_isa_name(GemmIsa isa);  // "base", "avx2", "avx512_eigen", "avx512"
bool gemm_isa_supported(GemmIsa isa);    // whether this CPU runs that variant
// The variant gemm<float> and gemm<double> run (picked once).
GemmIsa gemm_isa();
// What gemm_isa() picks when SGRAPH_GEMM_ISA is `request` (nullptr: unset): that variant if the
// CPU runs it, else the best one it runs.
GemmIsa pick_gemm_isa(const char* request);

// gemm<T> (float or double) on a given variant, which the CPU must run: for tests and benchmarks.
template <class T>
void gemm_with(GemmIsa isa, int64_t M, int64_t N, int64_t K, const T* a, bool trans_a, const T* b,
               bool trans_b, T* c, T alpha = T(1), T beta = T(0));

extern template void gemm_with<float>(GemmIsa, int64_t, int64_t, int64_t, const float*, bool,
                                      const float*, bool, float*, float, float);
extern template void gemm_with<double>(GemmIsa, int64_t, int64_t, int64_t, const double*, bool,
                                       const double*, bool, double*, double, double);

// A constant float B operand (K x N, or N x K when trans_b) packed once into the panels one
// variant's kernels read, so that gemm_packed does not repack it on every call as gemm does —
// what inference runtimes do with weights (a 64 x 1024 x 1024 product whose B is not in cache
// spends about 15% of its time packing B). Packed for gemm_isa() unless a variant is given (tests,
// benchmarks). Holds K * N floats plus alignment; immutable once made.
struct PackedGemmB {
  GemmIsa isa = GemmIsa::base;
  bool trans_b = false;
  int64_t K = 0, N = 0;
  int64_t kc = 0, mc = 0, nc = 0;    // cache blocks along K, N, and M (rows of A packed at once)
  int64_t panel = 1;                 // columns of B per panel of the kernel's (a block is panels)
  const int64_t* offsets = nullptr;  // per (K block, N block), K blocks outer: its panel in data
  float* data = nullptr;             // 64-byte aligned
};

class PackedB {
 public:
  PackedB(int64_t K, int64_t N, const float* b, bool trans_b);  // K, N > 0
  PackedB(GemmIsa isa, int64_t K, int64_t N, const float* b, bool trans_b);
  const PackedGemmB& view() const { return p_; }
  int64_t bytes() const { return static_cast<int64_t>(storage_.size() * sizeof(float)); }

 private:
  std::vector<int64_t> offsets_;
  std::vector<float> storage_;
  PackedGemmB p_;
};

// C = alpha * op(A) * B + beta * C for a packed B: op(A) is M x b.K, C is M x b.N (row-major, as
// gemm). Runs the variant B was packed for. With parts > 1, only C's columns of part `part`
// (packed_columns): the parts of one product may run on different threads at once.
void gemm_packed(int64_t M, const float* a, bool trans_a, const PackedB& b, float* c,
                 float alpha = 1, float beta = 0, int64_t part = 0, int64_t parts = 1);
// The columns [first, second) of part `part` of `parts` (0 <= part < parts) of a packed B: B's
// panels split as evenly as they go (a part may be empty when there are fewer panels than parts).
std::pair<int64_t, int64_t> packed_columns(const PackedGemmB& p, int64_t part, int64_t parts);
// How many non-empty parts a packed B's columns split into: at most `parts`, at most its panels.
int64_t packed_parts(const PackedGemmB& p, int64_t parts);

// One variant's kernels (gemm_eigen.inc), each with gemm<T>'s contract for M, N, K > 0.
struct GemmKernels {
  // (M, N, K, a, trans_a, b, ldb, trans_b, c, ldc, alpha, beta): ldb and ldc are the distances
  // between rows of B (as stored) and of C, at least their widths.
  void (*f32)(int64_t, int64_t, int64_t, const float*, bool, const float*, int64_t, bool, float*,
              int64_t, float, float);
  void (*f64)(int64_t, int64_t, int64_t, const double*, bool, const double*, int64_t, bool, double*,
              int64_t, double, double);
  // Packed B: its cache blocks and panel width; packing b at offsets and data already set;
  // C += alpha * op(A) * B, A's packed rows in the calling thread's workspace.
  void (*blocking_f32)(int64_t K, int64_t N, int64_t* kc, int64_t* mc, int64_t* nc, int64_t* panel);
  void (*pack_f32)(const PackedGemmB&, const float* b);
  // Only C's columns [n_begin, n_end), each a panel boundary (packed_columns) or N. With add
  // false, C = alpha * op(A) * B there instead (C only written).
  void (*packed_f32)(int64_t M, const float* a, bool trans_a, const PackedGemmB&, float* c,
                     float alpha, int64_t n_begin, int64_t n_end, bool add);
};
namespace gemm_base {
extern const GemmKernels kernels;
}
namespace gemm_avx2 {
extern const GemmKernels kernels;
}
namespace gemm_avx512_eigen {
extern const GemmKernels kernels;
}
namespace gemm_avx512 {
extern const GemmKernels kernels;
}

}  // namespace sgraph::ops
