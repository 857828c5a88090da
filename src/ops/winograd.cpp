// Winograd's F(2,3) along a conv's last spatial dim, and F(2x2,3x3) (see winograd.h).
#include "ops/winograd.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <string>

namespace sgraph::ops {

namespace {

std::atomic<int> mode_{0};  // set_winograd_for_testing

// G's rows: a 3-tap filter's 4 transformed values.
void filter_transform(const float* g, int64_t stride, float* t) {
  const float g0 = g[0], g1 = g[stride], g2 = g[2 * stride];
  t[0] = g0;
  t[1] = (g0 + g1 + g2) * 0.5f;
  t[2] = (g0 - g1 + g2) * 0.5f;
  t[3] = g2;
}

// B^T: 4 input values' transform (each output of the pair mixes only its own 3 values).
inline void data_transform(float d0, float d1, float d2, float d3, float& v0, float& v1, float& v2,
                           float& v3) {
  v0 = d0 - d2;
  v1 = d1 + d2;
  v2 = d2 - d1;
  v3 = d1 - d3;
}

// A^T: a pair's two outputs from its 4 transformed products.
inline void output_transform(float y0, float y1, float y2, float y3, float& a, float& b) {
  a = y0 + y1 + y2;
  b = y1 - y2 - y3;
}

// 1 when x is infinite or NaN (all exponent bits set): an integer test whose OR over a loop
// vectorises, where a float sum (x - x is NaN exactly then) would be a chain of dependent adds.
inline uint32_t not_finite(float x) {
  return (std::bit_cast<uint32_t>(x) & 0x7f800000u) == 0x7f800000u;
}

}  // namespace

WinogradWeights::WinogradWeights(const float* w, int64_t M, int64_t C, int64_t KH, bool rows) {
  const int64_t K = rows ? C : C * KH;
  mk_ = M * K;
  u_.resize(static_cast<size_t>((rows ? 16 : 4) * mk_));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      float t[16];
      if (rows) {  // G g G^T: along the 3 rows of each column, then along each row of those
        const float* g = w + (m * C + k) * 9;
        float cols[4][3];  // [transformed row][column]
        for (int64_t j = 0; j < 3; ++j) {
          float tj[4];
          filter_transform(g + j, 3, tj);
          for (int a = 0; a < 4; ++a) cols[a][j] = tj[a];
        }
        for (int a = 0; a < 4; ++a) filter_transform(cols[a], 1, t + 4 * a);
      } else {
        filter_transform(w + (m * K + k) * 3, 1, t);
      }
      for (int p = 0; p < (rows ? 16 : 4); ++p) {
        u_[static_cast<size_t>(p * mk_ + m * K + k)] = t[p];
        finite_ = finite_ && std::isfinite(t[p]);
      }
    }
}

void winograd_input(const WinogradShape& s, const float* src, float* v, int64_t n, int64_t c0,
                    int64_t c1) {
  const int64_t K = s.K(), P = s.P(), T = s.pairs(), Ws = s.Ws, KP = K * P;
  // Pairs whose 4 columns lie inside the source; the last may read past its end (odd OW), where
  // the columns count as 0 (they reach only the output past the end, which is not written).
  const int64_t full = std::min(T, std::max<int64_t>(0, (Ws - 2) / 2));
  float* vn = v + n * s.points() * KP;
  // Along a row r of the source (or of row-transformed values): the 4 values of each pair, into
  // V_(first + b) [K, P] at row k, positions from `at`.
  const auto along_row = [&](const float* r, int64_t first, int64_t k, int64_t at) {
    float* v0 = vn + first * KP + k * P + at;  // V_p [K, P]: a row of positions per k
    float* v1 = v0 + KP;
    float* v2 = v1 + KP;
    float* v3 = v2 + KP;
    for (int64_t t = 0; t < full; ++t) {
      const float* d = r + 2 * t;
      data_transform(d[0], d[1], d[2], d[3], v0[t], v1[t], v2[t], v3[t]);
    }
    for (int64_t t = full; t < T; ++t) {
      float d[4];
      for (int64_t j = 0; j < 4; ++j) d[j] = 2 * t + j < Ws ? r[2 * t + j] : 0.0f;
      data_transform(d[0], d[1], d[2], d[3], v0[t], v1[t], v2[t], v3[t]);
    }
  };
  if (!s.rows) {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t kh = 0; kh < s.KH; ++kh)
        for (int64_t oh = 0; oh < s.OH; ++oh)
          along_row(src + ((n * s.C + c) * s.Hs + oh * s.sh + kh * s.dh) * Ws, 0, c * s.KH + kh,
                    oh * T);
    return;
  }
  // F(2x2,3x3): per pair of output rows, the 4 source rows transformed down the columns (rows
  // past the source's end count as 0, as columns do), then each of those along its row.
  std::vector<float> e(static_cast<size_t>(4 * Ws));
  const std::vector<float> zero(static_cast<size_t>(Ws), 0.0f);
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t th = 0; th < s.row_steps(); ++th) {
      const float* r[4];
      for (int64_t i = 0; i < 4; ++i)
        r[i] = 2 * th + i < s.Hs ? src + ((n * s.C + c) * s.Hs + 2 * th + i) * Ws : zero.data();
      float* e0 = e.data();
      float* e1 = e0 + Ws;
      float* e2 = e1 + Ws;
      float* e3 = e2 + Ws;
      for (int64_t x = 0; x < Ws; ++x)
        data_transform(r[0][x], r[1][x], r[2][x], r[3][x], e0[x], e1[x], e2[x], e3[x]);
      for (int64_t a = 0; a < 4; ++a) along_row(e.data() + a * Ws, 4 * a, c, th * T);
    }
}

void winograd_product(const WinogradShape& s, const WinogradWeights& u, const float* v, float* y,
                      int64_t n, int p, int64_t n0, int64_t n1) {
  const int64_t P = s.P(), M = s.M;  // Y_p [M, P] = U_p V_p, its columns [n0, n1)
  gemm_columns<float>(M, P, s.K(), u.point(p), false, v + (n * s.points() + p) * s.K() * P, false,
                      y + (n * s.points() + p) * M * P, n0, n1);
}

bool winograd_output(const WinogradShape& s, const float* y, float* out, int64_t n, int64_t m0,
                     int64_t m1) {
  const int64_t M = s.M, P = s.P(), T = s.pairs(), OW = s.OW, plane = s.OH * OW, MP = M * P;
  const int64_t even = OW / 2;  // pairs with both outputs inside the row
  uint32_t bad = 0;             // some output written is infinite or NaN
  std::vector<float> z(s.rows ? static_cast<size_t>(8 * T) : 0);  // F(2x2,3x3): z_aj per pair
  for (int64_t m = m0; m < m1; ++m) {
    const float* ym = y + (n * s.points() * M + m) * P;  // Y_p [M, P]: row m
    float* o = out + (n * M + m) * plane;
    if (!s.rows) {
      const float *y0 = ym, *y1 = y0 + MP, *y2 = y1 + MP, *y3 = y2 + MP;
      for (int64_t oh = 0; oh < s.OH; ++oh, o += OW, y0 += T, y1 += T, y2 += T, y3 += T) {
        for (int64_t t = 0; t < even; ++t) {
          output_transform(y0[t], y1[t], y2[t], y3[t], o[2 * t], o[2 * t + 1]);
          bad |= not_finite(o[2 * t]) | not_finite(o[2 * t + 1]);
        }
        if (even < T) {  // the odd row's last output
          const float a = y0[even] + y1[even] + y2[even];
          o[2 * even] = a;
          bad |= not_finite(a);
        }
      }
      continue;
    }
    // F(2x2,3x3): A^T Y A per pair of rows and columns, in two passes of simple loops over the
    // pairs (one loop over all 16 points' rows kept 16 pointers live and did not vectorise):
    // along the columns, z_aj = (Y_a0 + Y_a1 + Y_a2, Y_a1 - Y_a2 - Y_a3); then down the rows.
    for (int64_t th = 0; th < s.row_steps(); ++th) {
      for (int64_t a = 0; a < 4; ++a) {
        const float* q0 = ym + 4 * a * MP + th * T;
        const float *q1 = q0 + MP, *q2 = q1 + MP, *q3 = q2 + MP;
        float* z0 = z.data() + 2 * a * T;
        float* z1 = z0 + T;
        for (int64_t t = 0; t < T; ++t) output_transform(q0[t], q1[t], q2[t], q3[t], z0[t], z1[t]);
      }
      const bool bottom = 2 * th + 1 < s.OH;
      for (int64_t i = 0; i < (bottom ? 2 : 1); ++i) {
        float* row = o + (2 * th + i) * OW;
        // Row i: z_0j + z_1j + z_2j, or z_1j - z_2j - z_3j, for output column 2t + j.
        const float sign = i == 0 ? 1.0f : -1.0f;
        const float* f0 = z.data() + (i == 0 ? 0 : 2) * T;  // z_0 or z_1, then z_1 or z_2, ...
        const float* f1 = f0 + 2 * T;
        const float* f2 = f1 + 2 * T;
        for (int64_t t = 0; t < even; ++t) {
          const float l = f0[t] + sign * (f1[t] + f2[t]),
                      r = f0[T + t] + sign * (f1[T + t] + f2[T + t]);
          row[2 * t] = l;
          row[2 * t + 1] = r;
          bad |= not_finite(l) | not_finite(r);
        }
        if (even < T) {
          const float l = f0[even] + sign * (f1[even] + f2[even]);
          row[2 * even] = l;
          bad |= not_finite(l);
        }
      }
    }
  }
  return bad == 0;
}

void winograd_plain_image(const WinogradShape& s, const float* src, const float* w, float* col,
                          float* out, int64_t n) {
  const int64_t plane = s.OH * s.OW;
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t kh = 0; kh < s.KH; ++kh)
      for (int64_t kw = 0; kw < 3; ++kw) {
        float* dst = col + ((c * s.KH + kh) * 3 + kw) * plane;
        for (int64_t oh = 0; oh < s.OH; ++oh) {
          const float* row = src + ((n * s.C + c) * s.Hs + oh * s.sh + kh * s.dh) * s.Ws + kw;
          for (int64_t ow = 0; ow < s.OW; ++ow) dst[oh * s.OW + ow] = row[ow];
        }
      }
  gemm<float>(s.M, plane, s.C * s.KH * 3, w, false, col, false, out + n * s.M * plane);
}

bool winograd_pays(int64_t M, int64_t K, int64_t OW) {
  // SGRAPH_WINOGRAD=0 turns it off (to compare numerics or speed with the plain GEMM).
  static const bool off = [] {
    const char* e = std::getenv("SGRAPH_WINOGRAD");
    return e != nullptr && std::string(e) == "0";
  }();
  const int mode = mode_.load(std::memory_order_relaxed);
  if (mode != 0) return mode > 0;
  return !off && M >= 16 && K >= 32 && OW >= 8;
}

void set_winograd_for_testing(int mode) { mode_.store(mode); }
void force_winograd_for_testing(bool on) { set_winograd_for_testing(on ? 1 : 0); }

}  // namespace sgraph::ops
