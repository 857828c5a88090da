// The float GEMM: every variant this CPU runs (baseline, AVX2, AVX-512) against a plain
// double-precision triple loop, the dispatching gemm<T> on empty shapes, and how the variant is
// picked.
#include <cstdlib>
#include <thread>

#include "ops/gemm_kernel.h"
#include "test_util.h"

using namespace sgraph::ops;

namespace test_gemm_kernel {  // this file's own names (the tests build as unity sources)

namespace {

struct Case {
  int64_t M, N, K;
  bool ta, tb;
  double alpha, beta;
};

// One case's operands (floats, so the f32 and f64 runs see the same values; C0 is NaN when
// beta == 0, which the kernel must not read), the triple loop's result, and per element the
// magnitude |alpha| sum_k |a_ik b_kj| + |beta c0_ij| the rounding error is bounded by.
struct Problem {
  std::vector<double> a, b, c0, want, mag;
};

std::vector<double> random_floats(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

Problem make_problem(const Case& c, std::mt19937& rng) {
  Problem p;
  p.a = random_floats(c.M * c.K, rng);
  p.b = random_floats(c.K * c.N, rng);
  p.c0 = c.beta == 0 ? std::vector<double>(c.M * c.N, sgraph::test::kNaN)
                     : random_floats(c.M * c.N, rng);
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      double sum = 0, abs_sum = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        const double x =
            p.a[c.ta ? k * c.M + i : i * c.K + k] * p.b[c.tb ? j * c.K + k : k * c.N + j];
        sum += x;
        abs_sum += std::abs(x);
      }
      const double cij = c.beta == 0 ? 0 : c.beta * p.c0[i * c.N + j];
      p.want.push_back(c.alpha * sum + cij);
      p.mag.push_back(std::abs(c.alpha) * abs_sum + std::abs(cij));
    }
  return p;
}

// A length-K dot product in precision T is off by at most about K * eps_T / 2 times the sum of
// the absolute products, whatever the summation order; (K + 4) eps_T also covers alpha, beta and,
// for f64, the reference's own rounding. A wrong transpose or stride is off by far more.
template <class T>
void check_variant(GemmIsa isa, const Case& c, const Problem& p) {
  std::vector<T> a(p.a.begin(), p.a.end()), b(p.b.begin(), p.b.end()), y(p.c0.begin(), p.c0.end());
  gemm_with<T>(isa, c.M, c.N, c.K, a.data(), c.ta, b.data(), c.tb, y.data(), T(c.alpha), T(c.beta));
  const double tol = double(std::numeric_limits<T>::epsilon()) * double(c.K + 4);
  size_t bad = 0;
  while (bad < y.size() && std::abs(y[bad] - p.want[bad]) <= tol * p.mag[bad]) ++bad;
  CHECK_MESSAGE(bad == y.size(), gemm_isa_name(isa)
                                     << (sizeof(T) == 4 ? " f32" : " f64") << " M=" << c.M
                                     << " N=" << c.N << " K=" << c.K << " trans_a=" << c.ta
                                     << " trans_b=" << c.tb << " alpha=" << c.alpha
                                     << " beta=" << c.beta << ": element " << bad << " is "
                                     << (bad < y.size() ? double(y[bad]) : 0.0) << ", want "
                                     << (bad < y.size() ? p.want[bad] : 0.0));
}

// The same check through a B packed once for `isa` (f32 only), the product made whole or in
// `parts` parts of C's columns (packed_columns: they tile [0, N) in order).
void check_packed(GemmIsa isa, const Case& c, const Problem& p, int64_t parts = 1) {
  std::vector<float> a(p.a.begin(), p.a.end()), b(p.b.begin(), p.b.end());
  std::vector<float> y(p.c0.begin(), p.c0.end());
  const PackedB packed(isa, c.K, c.N, b.data(), c.tb);
  CHECK(packed.view().isa == isa);
  b.assign(b.size(), sgraph::test::kNaN);  // the product must read the packed copy only
  int64_t next = 0;
  for (int64_t part = parts - 1; part >= 0; --part) {  // (last first: no part relies on order)
    const auto [n0, n1] = packed_columns(packed.view(), parts - 1 - part, parts);
    CHECK(n0 == next);
    CHECK(n1 >= n0);
    next = n1;
    gemm_packed(c.M, a.data(), c.ta, packed, y.data(), float(c.alpha), float(c.beta), part, parts);
  }
  CHECK(next == c.N);
  CHECK(packed_parts(packed.view(), parts) <= parts);
  const double tol = double(std::numeric_limits<float>::epsilon()) * double(c.K + 4);
  size_t bad = 0;
  while (bad < y.size() && std::abs(y[bad] - p.want[bad]) <= tol * p.mag[bad]) ++bad;
  CHECK_MESSAGE(bad == y.size(),
                gemm_isa_name(isa) << " packed in " << parts << " parts, M=" << c.M << " N=" << c.N
                                   << " K=" << c.K << " trans_a=" << c.ta << " trans_b=" << c.tb
                                   << " alpha=" << c.alpha << " beta=" << c.beta << ": element "
                                   << bad << " is " << (bad < y.size() ? double(y[bad]) : 0.0)
                                   << ", want " << (bad < y.size() ? p.want[bad] : 0.0));
}

}  // namespace

TEST_CASE("GEMM: a packed B, on every variant the CPU runs, against a triple loop") {
  // Sizes crossing the cache blocks: K above kc, N above mc, M above the rows packed at once.
  constexpr Case kCases[] = {
      {1, 1, 1, false, false, 1, 0},
      {7, 33, 5, false, false, 1, 0},
      {300, 70, 1100, false, false, 1, 0},
      {64, 1030, 700, false, false, 1, 0},
      {257, 16, 2000, false, false, 1, 0},
      {64, 64, 64, false, false, 1, 0},
      // (tiles of rows of equal height, a short last panel of columns, K in equal blocks)
      {13, 31, 257, false, false, 1, 0},
      {227, 95, 513, false, false, 1, 0}};
  std::mt19937 rng(11);
  int n = 0;
  for (Case c : kCases)
    for (int trans = 0; trans < 4; ++trans, ++n) {
      c.ta = (trans & 1) != 0;
      c.tb = trans >= 2;
      c.alpha = n % 3 == 0 ? 1.0 : -0.75;
      c.beta = n % 3 == 2 ? 0.5 : n % 3 == 1 ? 1.0 : 0.0;
      const Problem p = make_problem(c, rng);
      for (GemmIsa isa : kGemmIsas)
        if (gemm_isa_supported(isa))
          for (int64_t parts : {1, 2, 3, 7}) check_packed(isa, c, p, parts);
    }
  const PackedB big(30, 40, std::vector<float>(1200, 1.0f).data(), false);
  CHECK(big.bytes() >= 1200 * 4);
  CHECK(big.view().isa == gemm_isa());
  CHECK(big.view().kc > 0);
}

TEST_CASE("GEMM: every variant the CPU runs against a triple loop, f32 and f64") {
  constexpr int64_t kSizes[] = {1, 7, 16, 33, 64, 257};
  constexpr double kAlphaBeta[][2] = {{1, 0}, {0.5, 1}, {-1.5, 0.25}};
  std::vector<GemmIsa> isas;
  for (GemmIsa isa : kGemmIsas)
    if (gemm_isa_supported(isa)) isas.push_back(isa);
  REQUIRE(isas.front() == GemmIsa::base);
  std::mt19937 rng(7);
  // Every M, N, K; the transposes and alpha/beta rotate so that each combination meets every size.
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j)
      for (int k = 0; k < 6; ++k) {
        const int trans = (i + j + k) % 4, ab = (i + 2 * j + k) % 3;
        const Case c{kSizes[i],  kSizes[j],         kSizes[k],        (trans & 1) != 0,
                     trans >= 2, kAlphaBeta[ab][0], kAlphaBeta[ab][1]};
        const Problem p = make_problem(c, rng);
        for (GemmIsa isa : isas) {
          check_variant<float>(isa, c, p);
          check_variant<double>(isa, c, p);
        }
      }
}

TEST_CASE("GEMM: products whose packing buffers are a thread's kept workspace") {
  // Blocks above Eigen's stack limit come from the calling thread's workspace: a small product,
  // then larger ones (the workspace grows), the first again (reused), and all on a new thread.
  constexpr Case kCases[] = {{300, 260, 200, false, false, 1, 0},
                             {520, 700, 600, true, false, 1, 0.5},
                             {64, 1440, 288, false, true, -1, 0},
                             {300, 260, 200, true, true, 0.5, 1}};
  std::mt19937 rng(17);
  std::vector<Problem> problems;
  for (const Case& c : kCases) problems.push_back(make_problem(c, rng));
  const auto run_all = [&] {
    for (size_t i = 0; i < std::size(kCases); ++i)
      for (GemmIsa isa : kGemmIsas)
        if (gemm_isa_supported(isa)) {
          check_variant<float>(isa, kCases[i], problems[i]);
          check_variant<double>(isa, kCases[i], problems[i]);
        }
  };
  run_all();
  std::thread other(run_all);  // (doctest's checks are thread-safe)
  other.join();
}

TEST_CASE("GEMM: C's columns in ranges, each range alone, f32 and f64") {
  constexpr Case kCases[] = {
      {5, 200, 37, false, false, 1, 0},  {64, 129, 300, true, false, -0.5, 1},
      {3, 70, 9, false, true, 1, 0.5},   {33, 300, 17, true, true, 2, 0},
      {1, 4097, 64, false, false, 1, 0}, {4, 50, 0, false, false, 1, 0.5},
      {2, 301, 129, false, true, 1, 0},  {6, 301, 129, false, false, -1, 0.5}};
  std::mt19937 rng(13);
  const auto run = [&]<class T>(const Case& c, const Problem& p, T) {
    INFO((sizeof(T) == 4 ? "f32" : "f64") << " M=" << c.M << " N=" << c.N << " K=" << c.K
                                          << " trans_a=" << c.ta << " trans_b=" << c.tb);
    std::vector<T> a(p.a.begin(), p.a.end()), b(p.b.begin(), p.b.end());
    std::vector<T> y(p.c0.begin(), p.c0.end());
    // Uneven ranges, one empty, computed last first: a range writes its columns only.
    const std::vector<int64_t> cuts = {0, c.N / 3, c.N / 3, c.N / 3 + 17, c.N};
    for (size_t r = cuts.size() - 1; r-- > 0;) {
      const int64_t n0 = cuts[r], n1 = std::max(n0, std::min(c.N, cuts[r + 1]));
      gemm_columns<T>(c.M, c.N, c.K, a.data(), c.ta, b.data(), c.tb, y.data(), n0, n1, T(c.alpha),
                      T(c.beta));
      for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < n0; ++j) {
          const T was = static_cast<T>(p.c0[i * c.N + j]);
          REQUIRE(((std::isnan(was) && std::isnan(y[i * c.N + j])) || y[i * c.N + j] == was));
        }
    }
    const double tol = double(std::numeric_limits<T>::epsilon()) * double(c.K + 4);
    size_t bad = 0;
    while (bad < y.size() && std::abs(y[bad] - p.want[bad]) <= tol * p.mag[bad]) ++bad;
    CHECK_MESSAGE(bad == y.size(), "element " << bad);
  };
  for (const Case& c : kCases) {
    const Problem p = make_problem(c, rng);
    run(c, p, 0.0f);
    run(c, p, 0.0);
  }
}

TEST_CASE("GEMM: a few rows of A (2 to 8) by a larger B, every variant, f32 and f64") {
  // These run as matrix-vector style products that read B once per 4 rows of A (with op(B) = B,
  // the columns past the last whole vector through Eigen's product; with op(B) = B^T, only dot
  // products of 128 or more, 256 for more than 4 rows): widths and depths around each variant's
  // vector lengths (4, 8, 16 floats), its 2 or 4 rows or vectors of B per step and those depths,
  // every transpose, and an op(A) = A^T too large to copy (the blocked product again).
  constexpr int64_t kWidths[] = {2, 3, 15, 16, 17, 63, 64, 65, 130};
  constexpr int64_t kDepths[] = {1, 5, 16, 17, 100, 200, 301};
  constexpr double kAlphaBeta[][2] = {{1, 0}, {0.5, 1}, {-1.5, 0.25}};
  std::mt19937 rng(19);
  int n = 0;
  for (int64_t M = 2; M <= 8; ++M)
    for (int64_t N : kWidths)
      for (int64_t K : kDepths) {
        const int trans = n % 4, ab = (n / 4) % 3;
        ++n;
        const Case c{M, N, K, (trans & 1) != 0, trans >= 2, kAlphaBeta[ab][0], kAlphaBeta[ab][1]};
        const Problem p = make_problem(c, rng);
        for (GemmIsa isa : kGemmIsas)
          if (gemm_isa_supported(isa)) {
            check_variant<float>(isa, c, p);
            check_variant<double>(isa, c, p);
          }
      }
  for (const Case& c :
       {Case{3, 40, 30000, true, false, 1, 0}, Case{5, 33, 20000, true, true, 2, 1},
        Case{4, 1030, 700, false, true, 1, 0}, Case{8, 1030, 700, false, false, 1, 0}})
    check_variant<float>(gemm_isa(), c, make_problem(c, rng));
}

TEST_CASE("GEMM: empty shapes through the dispatching gemm<T>") {
  std::vector<float> c = {1, 2, 3, 4, 5, 6};
  const float one = 1;
  gemm<float>(0, 3, 5, &one, false, &one, false, c.data());  // M == 0: nothing written
  gemm<float>(2, 0, 5, &one, false, &one, false, c.data());  // N == 0: nothing written
  CHECK(c == std::vector<float>{1, 2, 3, 4, 5, 6});
  gemm<float>(2, 3, 0, nullptr, false, nullptr, true, c.data(), 1.0f, 2.0f);  // K == 0: beta * C
  CHECK(c == std::vector<float>{2, 4, 6, 8, 10, 12});
  std::vector<double> d(4, sgraph::test::kNaN);
  gemm<double>(2, 2, 0, nullptr, true, nullptr, false, d.data());  // beta == 0: C not read
  CHECK(d == std::vector<double>(4, 0.0));
}

TEST_CASE("GEMM: the variant picked, and SGRAPH_GEMM_ISA") {
  GemmIsa best = GemmIsa::base;
  for (GemmIsa isa : kGemmIsas)
    if (gemm_isa_supported(isa)) best = isa;
  CHECK(gemm_isa_supported(GemmIsa::base));
  CHECK(pick_gemm_isa(nullptr) == best);
  CHECK(pick_gemm_isa("") == best);
  CHECK(pick_gemm_isa("sse9") == best);
  CHECK(pick_gemm_isa("AVX2") == best);  // names are exact
  for (GemmIsa isa : kGemmIsas)
    CHECK(pick_gemm_isa(gemm_isa_name(isa)) == (gemm_isa_supported(isa) ? isa : best));
  CHECK(gemm_isa() == pick_gemm_isa(std::getenv("SGRAPH_GEMM_ISA")));
  CHECK(std::string(gemm_isa_name(GemmIsa::avx512)) == "avx512");
}

}  // namespace test_gemm_kernel
