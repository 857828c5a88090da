// Winograd F(2,3) along a conv's last spatial dim (ops/winograd.h), its phases run as the JIT's
// runtime runs them, against a plain double-precision sum over each window.
#include <cmath>
#include <limits>
#include <random>

#include "ops/winograd.h"
#include "test_util.h"

using namespace sgraph::ops;

namespace {

struct Conv {
  WinogradShape s;
  std::vector<float> src, w;
};

Conv make(std::mt19937& rng, int64_t N, int64_t C, int64_t M, int64_t KH, int64_t sh, int64_t dh,
          int64_t OH, int64_t OW, int64_t extra_cols, bool rows = false) {
  Conv c;
  c.s = {.N = N,
         .C = C,
         .Hs = (OH - 1) * sh + (KH - 1) * dh + 1 + (rows ? extra_cols : 0),
         .Ws = OW + 2 + extra_cols,
         .M = M,
         .KH = KH,
         .sh = sh,
         .dh = dh,
         .OH = OH,
         .OW = OW,
         .rows = rows};
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  c.src.resize(static_cast<size_t>(N * C * c.s.Hs * c.s.Ws));
  c.w.resize(static_cast<size_t>(M * C * KH * 3));
  for (float& x : c.src) x = u(rng);
  for (float& x : c.w) x = u(rng);
  return c;
}

// The plain sum in double, and per output the sum of |w * x| its rounding error is bounded by.
void reference(const Conv& c, std::vector<double>* want, std::vector<double>* mag) {
  const WinogradShape& s = c.s;
  want->assign(static_cast<size_t>(s.N * s.M * s.OH * s.OW), 0.0);
  mag->assign(want->size(), 0.0);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t oh = 0; oh < s.OH; ++oh)
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          double sum = 0, abs = 0;
          for (int64_t ch = 0; ch < s.C; ++ch)
            for (int64_t kh = 0; kh < s.KH; ++kh)
              for (int64_t kw = 0; kw < 3; ++kw) {
                const double x = c.src[static_cast<size_t>(
                    ((n * s.C + ch) * s.Hs + oh * s.sh + kh * s.dh) * s.Ws + ow + kw)];
                const double g = c.w[static_cast<size_t>(((m * s.C + ch) * s.KH + kh) * 3 + kw)];
                sum += g * x;
                abs += std::abs(g * x);
              }
          const auto i = static_cast<size_t>(((n * s.M + m) * s.OH + oh) * s.OW + ow);
          (*want)[i] = sum;
          (*mag)[i] = abs;
        }
}

// The phases as sgraph_conv_winograd_f32 runs them (in uneven chunks of channels); per image,
// whether its outputs were all finite.
std::vector<bool> run(const Conv& c, std::vector<float>* out, int64_t chunk = 3) {
  const WinogradShape& s = c.s;
  const WinogradWeights u(c.w.data(), s.M, s.C, s.KH, s.rows);
  REQUIRE(u.finite());
  // The scratch as the JIT sizes it: [N, 2, OH, OW + 1, K] and [.., M]; with rows
  // [N, 4, OH + 1, OW + 1, C] and [.., M].
  const int64_t per_image = s.rows ? 4 * (s.OH + 1) * (s.OW + 1) : 2 * s.OH * (s.OW + 1);
  const int64_t bound = s.N * per_image;
  REQUIRE(s.points() * s.P() <= per_image);
  std::vector<float> v(static_cast<size_t>(bound * s.K())), y(static_cast<size_t>(bound * s.M));
  out->assign(static_cast<size_t>(s.N * s.M * s.OH * s.OW), std::nanf(""));
  std::vector<bool> finite;
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t c0 = 0; c0 < s.C; c0 += chunk)
      winograd_input(s, c.src.data(), v.data(), n, c0, std::min(s.C, c0 + chunk));
    for (int p = 0; p < s.points(); ++p) {
      const int64_t half = s.P() / 2;  // in two column ranges
      winograd_product(s, u, v.data(), y.data(), n, p, 0, half);
      winograd_product(s, u, v.data(), y.data(), n, p, half, s.P());
    }
    bool ok = true;
    for (int64_t m0 = 0; m0 < s.M; m0 += chunk)
      ok = winograd_output(s, y.data(), out->data(), n, m0, std::min(s.M, m0 + chunk)) && ok;
    finite.push_back(ok);
  }
  return finite;
}

}  // namespace

TEST_CASE("Winograd F(2,3): random convs against a plain double sum") {
  std::mt19937 rng(20261207);
  const auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int i = 0; i < 100; ++i) {
    // Odd and even widths, row strides and dilations, 1-3 row taps (1: a 1-D conv), a source
    // wider than the windows reach; one case in two F(2x2,3x3) (odd and even heights too).
    const bool rows = i % 2 == 1;
    const Conv c =
        rows ? make(rng, uniform(1, 3), uniform(1, 20), uniform(1, 40), 3, 1, 1, uniform(1, 9),
                    uniform(1, 19), uniform(0, 2), true)
             : make(rng, uniform(1, 3), uniform(1, 20), uniform(1, 40), uniform(1, 3),
                    uniform(1, 2), uniform(1, 2), uniform(1, 5), uniform(1, 19), uniform(0, 2));
    INFO("case " << i << ": N " << c.s.N << " C " << c.s.C << " M " << c.s.M << " KH " << c.s.KH
                 << " sh " << c.s.sh << " dh " << c.s.dh << " OH " << c.s.OH << " OW " << c.s.OW
                 << " Hs " << c.s.Hs << " Ws " << c.s.Ws << (rows ? " F(2x2,3x3)" : ""));
    std::vector<double> want, mag;
    reference(c, &want, &mag);
    std::vector<float> got;
    const std::vector<bool> finite = run(c, &got);
    for (bool f : finite) CHECK(f);
    // The coefficients are 0, +-1 and +-1/2: a few roundings more than a plain dot product.
    for (size_t j = 0; j < want.size(); ++j)
      CHECK_MESSAGE(std::abs(got[j] - want[j]) <= 1e-6 * mag[j] + 1e-30,
                    "output " << j << ": got " << got[j] << ", want " << want[j]);
  }
}

TEST_CASE("Winograd F(2,3): an output mixes only its own window's columns") {
  // A huge value in column 3 is outside output 0's window (columns 0-2) but inside its pair's
  // tile (columns 0-3). With F(2,3) output 0 keeps its precision; a transform that cancelled the
  // tile's other columns (F(4,3) and larger) would lose all of it.
  std::mt19937 rng(7);
  Conv c = make(rng, 1, 1, 1, 1, 1, 1, 1, 2, 0);
  c.src = {1.0f, 2.0f, 3.0f, 1e30f};
  c.w = {0.25f, -0.5f, 0.75f};
  std::vector<float> got;
  CHECK(run(c, &got).front());
  CHECK(got[0] == 0.25f * 1 - 0.5f * 2 + 0.75f * 3);
  CHECK(got[1] == doctest::Approx(0.25 * 2 - 0.5 * 3 + 0.75 * 1e30).epsilon(1e-6));
}

TEST_CASE("Winograd F(2x2,3x3): an output mixes only its own window's rows and columns") {
  // One 4x4 patch: huge values in row 3 and column 3, outside output (0, 0)'s window.
  std::mt19937 rng(7);
  Conv c = make(rng, 1, 1, 1, 3, 1, 1, 2, 2, 0, true);
  REQUIRE(c.src.size() == 16);
  for (size_t j = 0; j < 16; ++j) c.src[j] = j % 4 == 3 || j >= 12 ? 1e30f : float(j % 4 + 1);
  c.w = {0.25f, -0.5f, 0.75f, 1.0f, 0.5f, -0.25f, -1.0f, 0.125f, 2.0f};
  std::vector<float> got;
  CHECK(run(c, &got).front());
  double want = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) want += double{c.w[static_cast<size_t>(i * 3 + j)]} * (j + 1);
  CHECK(got[0] == doctest::Approx(want).epsilon(1e-6));
}

TEST_CASE("Winograd F(2,3): infinities and NaN are reported, the plain way reproduces them") {
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(11);
  int round = 0;
  for (const float bad : {inf, -inf, std::nanf(""), inf, std::nanf("")}) {
    const bool rows = round++ >= 3;  // the last two: F(2x2,3x3)
    CAPTURE(rows);
    Conv c = make(rng, 2, 4, 5, 3, 1, 1, 3, 6, 0, rows);
    // Image 1 holds the bad value; image 0 stays finite.
    c.src[static_cast<size_t>(((1 * c.s.C + 2) * c.s.Hs + 1) * c.s.Ws + 3)] = bad;
    std::vector<float> got;
    const std::vector<bool> finite = run(c, &got);
    CHECK(finite[0]);
    CHECK_FALSE(finite[1]);
    std::vector<float> col(static_cast<size_t>(c.s.C * c.s.KH * 3 * c.s.OH * c.s.OW));
    winograd_plain_image(c.s, c.src.data(), c.w.data(), col.data(), got.data(), 1);
    std::vector<double> want, mag;
    reference(c, &want, &mag);
    for (size_t j = 0; j < want.size(); ++j) {
      if (!std::isfinite(want[j])) {
        CHECK_MESSAGE((std::isnan(want[j]) ? std::isnan(got[j]) : got[j] == want[j]),
                      "output " << j << ": got " << got[j] << ", want " << want[j]);
        continue;
      }
      CHECK(std::abs(got[j] - want[j]) <= 1e-6 * mag[j] + 1e-30);
    }
  }
}

TEST_CASE("Winograd F(2,3): weights whose transform overflows are reported") {
  const float big = std::numeric_limits<float>::max();
  const std::vector<float> w = {big, big, big};
  CHECK_FALSE(WinogradWeights(w.data(), 1, 1, 1, false).finite());
  const std::vector<float> fine = {1.0f, -2.0f, 3.0f};
  CHECK(WinogradWeights(fine.data(), 1, 1, 1, false).finite());
}

TEST_CASE("Winograd F(2,3): used where it pays, everywhere when forced") {
  CHECK(winograd_pays(192, 192, 40));
  CHECK_FALSE(winograd_pays(8, 27, 80));  // a stem: 3 input channels
  CHECK_FALSE(winograd_pays(64, 64, 2));
  force_winograd_for_testing(true);
  CHECK(winograd_pays(2, 3, 1));
  force_winograd_for_testing(false);
  CHECK_FALSE(winograd_pays(2, 3, 1));
  set_winograd_for_testing(-1);
  CHECK_FALSE(winograd_pays(192, 192, 40));
  set_winograd_for_testing(0);
  CHECK(winograd_pays(192, 192, 40));
}
