// Winograd F(2,3) along a conv's last spatial dim (see winograd.h).
#include "ops/winograd.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>

namespace sgraph::ops {

namespace {
std::atomic<int> mode_{0};  // set_winograd_for_testing
}  // namespace

WinogradWeights::WinogradWeights(const float* w, int64_t M, int64_t C, int64_t KH)
    : u_(static_cast<size_t>(4 * M * C * KH)), mk_(M * C * KH) {
  const int64_t K = C * KH;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      const float* g = w + (m * K + k) * 3;
      const float t[4] = {g[0], (g[0] + g[1] + g[2]) * 0.5f, (g[0] - g[1] + g[2]) * 0.5f, g[2]};
      for (int p = 0; p < 4; ++p) {
        u_[static_cast<size_t>((p * M + m) * K + k)] = t[p];
        finite_ = finite_ && std::isfinite(t[p]);
      }
    }
}

void winograd_input(const WinogradShape& s, const float* src, float* v, int64_t n, int64_t c0,
                    int64_t c1) {
  const int64_t K = s.K(), P = s.P(), T = s.pairs(), Ws = s.Ws;
  // Pairs whose 4 columns lie inside the source; the last may read past its end (odd OW), where
  // the columns count as 0 (they reach only the output past the end, which is not written).
  const int64_t full = std::min(T, std::max<int64_t>(0, (Ws - 2) / 2));
  float* vn = v + n * 4 * K * P;
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t kh = 0; kh < s.KH; ++kh) {
      const int64_t k = c * s.KH + kh;
      for (int64_t oh = 0; oh < s.OH; ++oh) {
        const float* row = src + ((n * s.C + c) * s.Hs + oh * s.sh + kh * s.dh) * Ws;
        float* v0 = vn + k * P + oh * T;  // V_p [K, P]: a row of positions per k
        float* v1 = v0 + K * P;
        float* v2 = v1 + K * P;
        float* v3 = v2 + K * P;
        for (int64_t t = 0; t < full; ++t) {
          const float* d = row + 2 * t;
          v0[t] = d[0] - d[2];
          v1[t] = d[1] + d[2];
          v2[t] = d[2] - d[1];
          v3[t] = d[1] - d[3];
        }
        for (int64_t t = full; t < T; ++t) {
          float d[4];
          for (int64_t j = 0; j < 4; ++j) d[j] = 2 * t + j < Ws ? row[2 * t + j] : 0.0f;
          v0[t] = d[0] - d[2];
          v1[t] = d[1] + d[2];
          v2[t] = d[2] - d[1];
          v3[t] = d[1] - d[3];
        }
      }
    }
}

void winograd_product(const WinogradShape& s, const WinogradWeights& u, const float* v, float* y,
                      int64_t n, int p, int64_t n0, int64_t n1) {
  const int64_t P = s.P(), M = s.M;  // Y_p [M, P] = U_p V_p, its columns [n0, n1)
  gemm_columns<float>(M, P, s.K(), u.point(p), false, v + (n * 4 + p) * s.K() * P, false,
                      y + (n * 4 + p) * M * P, n0, n1);
}

bool winograd_output(const WinogradShape& s, const float* y, float* out, int64_t n, int64_t m0,
                     int64_t m1) {
  const int64_t M = s.M, P = s.P(), T = s.pairs(), OW = s.OW, plane = s.OH * OW;
  const int64_t even = OW / 2;  // pairs with both outputs inside the row
  float check = 0;  // NaN when some output written is not finite (x - x is NaN for inf and NaN)
  for (int64_t m = m0; m < m1; ++m) {
    const float* y0 = y + (n * 4 * M + m) * P;  // Y_p [M, P]: row m
    const float* y1 = y0 + M * P;
    const float* y2 = y1 + M * P;
    const float* y3 = y2 + M * P;
    float* o = out + (n * M + m) * plane;
    for (int64_t oh = 0; oh < s.OH; ++oh, o += OW, y0 += T, y1 += T, y2 += T, y3 += T) {
      for (int64_t t = 0; t < even; ++t) {
        const float a = y0[t] + y1[t] + y2[t], b = y1[t] - y2[t] - y3[t];
        o[2 * t] = a;
        o[2 * t + 1] = b;
        check += (a - a) + (b - b);
      }
      if (even < T) {  // the odd row's last output
        const float a = y0[even] + y1[even] + y2[even];
        o[2 * even] = a;
        check += a - a;
      }
    }
  }
  return check == 0;
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
  gemm<float>(s.M, plane, s.K() * 3, w, false, col, false, out + n * s.M * plane);
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
