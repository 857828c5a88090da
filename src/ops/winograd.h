// A float convolution whose kernel is 3 wide along its last spatial dim, with stride and
// dilation 1 there, computed with Winograd's minimal filtering F(2,3) along that dim: each pair of
// neighbouring outputs takes 4 products per input channel and row tap instead of 6, so the GEMM
// behind the conv does 2/3 of the multiply-adds.
//
// Per image, with K = C * KH (input channel and row tap) and P = OH * T positions, T = ceil(OW / 2)
// pairs per output row, each pair t reading the 4 input columns d0..d3 = 2t .. 2t + 3:
//   V_p [P, K]  = B^T d:  d0 - d2, d1 + d2, d2 - d1, d1 - d3  (input transform)
//   U_p [M, K]  = G g:    g0, (g0 + g1 + g2) / 2, (g0 - g1 + g2) / 2, g2  (weights, once)
//   Y_p [M, P]  = U_p V_p^T, four GEMMs
//   out (2t)    = Y0 + Y1 + Y2,  out (2t + 1) = Y1 - Y2 - Y3  (output transform)
// F(2,3) is chosen over the larger tiles (F(4,3), F(6,3)) for its numerics: each output mixes
// only the input columns of its own window, with coefficients 0, +-1 and +-1/2, so its rounding
// error is bounded by its own window's magnitudes, like a plain dot product's (a larger tile
// cancels its neighbours' columns: a huge value next to a window swamps it), and an infinite or
// NaN input reaches exactly the outputs whose windows hold it. An image whose outputs are not all
// finite is recomputed the plain way (im2col + GEMM), so that inf and NaN come out as there
// (Winograd's sums of infinities of both signs would make NaN where the plain sum is inf).
//
// A 3x3 kernel of unit strides and dilations takes F(2x2,3x3) instead (`rows`): the same
// transforms along the rows too (V = B^T d B over 4x4 input patches, U = G g G^T, out = A^T Y A),
// 16 GEMMs over K = C and P = ceil(OH / 2) * ceil(OW / 2) positions: 4/9 of the plain
// multiply-adds. Being F(2,3) along each dim, each output still mixes only its own window.
//
// The input is a source [N, C, Hs, Ws], padded already: output (oh, ow) of tap (kh, kw) reads row
// oh * sh + kh * dh, column ow + kw. The output is [N, M, OH, OW]. The phases below work on
// independent items, so that a caller may run them on several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ops/gemm_kernel.h"

namespace sgraph::ops {

struct WinogradShape {
  int64_t N = 0, C = 0, Hs = 0, Ws = 0;  // the source
  int64_t M = 0, KH = 0;                 // the weights [M, C, KH, 3]
  int64_t sh = 1, dh = 1;                // row stride and dilation
  int64_t OH = 0, OW = 0;                // the output [N, M, OH, OW]
  bool rows = false;                     // F(2x2,3x3): KH 3, sh and dh 1

  int64_t K() const { return rows ? C : C * KH; }
  int64_t pairs() const { return (OW + 1) / 2; }
  int64_t row_steps() const { return rows ? (OH + 1) / 2 : OH; }  // pairs of rows, or rows
  int64_t P() const { return row_steps() * pairs(); }
  int points() const { return rows ? 16 : 4; }
};

// The weights [M, C, KH, 3] transformed and packed, once per constant.
class WinogradWeights {
 public:
  WinogradWeights(const float* w, int64_t M, int64_t C, int64_t KH, bool rows);
  const float* point(int p) const { return u_.data() + p * mk_; }  // U_p [M, K]
  // Whether every transformed weight is finite (weights near the float range's end may overflow
  // g0 + g1 + g2): when not, the conv is computed the plain way.
  bool finite() const { return finite_; }

 private:
  std::vector<float> u_;
  int64_t mk_ = 0;  // M * K: one point's floats
  bool finite_ = true;
};

// The input transform of image n, input channels [c0, c1): v is [N, points, K, P] (at most
// N * 2 * OH * (OW + 1) * K floats, with rows N * 4 * (OH + 1) * (OW + 1) * C: the bounds a
// caller sizing it from symbols can state).
void winograd_input(const WinogradShape& s, const float* src, float* v, int64_t n, int64_t c0,
                    int64_t c1);
// Y_p of image n, its columns [n0, n1) (positions): y is [N, points, M, P] (bounded as v, with M
// for K).
void winograd_product(const WinogradShape& s, const WinogradWeights& u, const float* v, float* y,
                      int64_t n, int p, int64_t n0, int64_t n1);
// The output transform of image n, output channels [m0, m1); whether every output written is
// finite.
bool winograd_output(const WinogradShape& s, const float* y, float* out, int64_t n, int64_t m0,
                     int64_t m1);
// Image n computed the plain way: im2col into `col` (C * KH * 3 * OH * OW floats), then one GEMM
// with the weights w [M, C, KH, 3].
void winograd_plain_image(const WinogradShape& s, const float* src, const float* w, float* col,
                          float* out, int64_t n);

// Whether the JIT computes a conv of these static sizes with F(2,3): enough output channels,
// dot products and output columns that the saved multiply-adds repay the transforms (see
// bench/README.md, "Winograd F(2,3)"); never with SGRAPH_WINOGRAD=0 in the environment. Tests
// and the fuzzers lower the bar to every conv that fits (force_winograd_for_testing), benchmarks
// compare with and without (set_winograd_for_testing: 1 always, -1 never, 0 where it pays).
bool winograd_pays(int64_t M, int64_t K, int64_t OW);
void force_winograd_for_testing(bool on);
void set_winograd_for_testing(int mode);

}  // namespace sgraph::ops
