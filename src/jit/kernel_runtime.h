// Runtime helpers that region kernels call (C ABI; registered with the JIT in runtime_symbols.cpp).
//
//   sgraph_gemm_f32(ctx, batch, M, N, K, a, a_off, trans_a, b, b_off, trans_b, c, alpha)
// computes, for each batch item i, C_i = alpha * op(A_i) * op(B_i), where A_i starts at
// a + a_off[i] (a + 0 when a_off is null), B_i likewise, and C_i at c + i * M * N; matrices are
// dense row-major, op(A) is A^T when trans_a != 0. C is only written. With a KernelContext of
// several threads the batch items and row blocks are spread over them.
//
//   sgraph_gemm_const_b_f32(ctx, batch, M, N, K, a, a_off, trans_a, b, b_off, trans_b, c, alpha)
// is the same for a B that is a constant of the graph, the same matrix for every batch item
// (b_off null): it
// is packed once per plan (ops::PackedB, kept in ctx's gemm_cache by address) and every call
// multiplies by the packed copy. Without a ctx it is sgraph_gemm_f32.
//
//   sgraph_gemm_const_a_f32(ctx, batch, M, N, K, a, a_off, trans_a, b, b_off, trans_b, c, alpha)
// is the same for an A that is a constant of the graph (a conv's weights; each item's A_i, e.g.
// one group's, is packed once per plan by its address): when B is short (N <= K / 2) each call
// multiplies by the packed copies (C_i^T = op(B_i)^T * op(A_i)^T, transposed into C_i), else it
// is sgraph_gemm_f32, as it is without a ctx (force_const_a_packing_for_testing: packed at any N).
//
//   sgraph_conv_winograd_f32(ctx, w, M, C, KH, src, N, Hs, Ws, sh, dh, OH, OW, rows, v, y, out)
// computes a float conv of weights w [M, C, KH, 3] (a constant of the graph, transformed once per
// plan) over the padded source src [N, C, Hs, Ws] (row stride sh and dilation dh, unit along the
// columns) into out [N, M, OH, OW] with Winograd's F(2,3), or with rows != 0 (KH 3, sh and dh 1)
// F(2x2,3x3) (ops/winograd.h), using v and y as scratch (N * 2 * OH * (OW + 1) * C * KH and
// N * 2 * OH * (OW + 1) * M floats; with rows N * 4 * (OH + 1) * (OW + 1) * C and .. * M). An
// image whose outputs are not all finite is recomputed the plain way.
#pragma once

#include <cstdint>

extern "C" {
void sgraph_gemm_f32(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K, const float* a,
                     const int64_t* a_off, int64_t trans_a, const float* b, const int64_t* b_off,
                     int64_t trans_b, float* c, double alpha);
void sgraph_gemm_f64(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K, const double* a,
                     const int64_t* a_off, int64_t trans_a, const double* b, const int64_t* b_off,
                     int64_t trans_b, double* c, double alpha);
void sgraph_gemm_const_b_f32(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K,
                             const float* a, const int64_t* a_off, int64_t trans_a, const float* b,
                             const int64_t* b_off, int64_t trans_b, float* c, double alpha);
void sgraph_conv_winograd_f32(void* ctx, const float* w, int64_t M, int64_t C, int64_t KH,
                              const float* src, int64_t N, int64_t Hs, int64_t Ws, int64_t sh,
                              int64_t dh, int64_t OH, int64_t OW, int64_t rows, float* v, float* y,
                              float* out);
void sgraph_gemm_const_a_f32(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K,
                             const float* a, const int64_t* a_off, int64_t trans_a, const float* b,
                             const int64_t* b_off, int64_t trans_b, float* c, double alpha);
}

namespace sgraph {
// Tests (the differential fuzzers): sgraph_gemm_const_a_f32 multiplies by the packed copies at
// every N while on, so that the fuzzers' small convs, whose B is seldom short, reach that path.
void force_const_a_packing_for_testing(bool on);
}  // namespace sgraph
