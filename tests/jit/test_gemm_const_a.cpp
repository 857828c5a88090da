// sgraph_gemm_const_a_f32, the runtime GEMM for a constant A (a conv's weights) packed once per
// plan: against sgraph_gemm_f32 on the same operands, for every transposition, batch items with
// their own A (groups) and B, short and long B (packed or not), one thread or several, and the
// packed copies made once per context and reused.
#include <cmath>
#include <thread>
#include <vector>

#include "jit/kernel_runtime.h"
#include "jit/parallel.h"
#include "test_util.h"

using sgraph::KernelContext;

namespace {

// n floats in [-1, 1), from test_util's generator.
std::vector<float> random_floats(int64_t n, uint32_t seed) {
  const sgraph::Tensor t = sgraph::test::random_f32({n}, seed);
  return {t.data<float>(), t.data<float>() + n};
}

struct Case {
  int64_t batch, M, N, K;
  bool ta, tb;
  bool shared_a;  // every item's A the same matrix (no groups)
};

// Runs both helpers on one case; C starts as NaN (the helpers only write it).
void check(const Case& c, int threads) {
  INFO("batch " << c.batch << " M " << c.M << " N " << c.N << " K " << c.K << " ta " << c.ta
                << " tb " << c.tb << (c.shared_a ? " shared A" : "") << " threads " << threads);
  const int64_t a_items = c.shared_a ? 1 : c.batch;
  const std::vector<float> a = random_floats(a_items * c.M * c.K, 1);
  const std::vector<float> b = random_floats(c.batch * c.K * c.N, 2);
  std::vector<int64_t> a_off, b_off;
  for (int64_t i = 0; i < c.batch; ++i) {
    a_off.push_back(c.shared_a ? 0 : (c.batch - 1 - i) * c.M * c.K);  // (not in item order)
    b_off.push_back(i * c.K * c.N);
  }
  const size_t out = static_cast<size_t>(c.batch * c.M * c.N);
  std::vector<float> want(out, std::nanf("")), got(out, std::nanf(""));
  KernelContext ctx(threads);
  sgraph_gemm_f32(&ctx, c.batch, c.M, c.N, c.K, a.data(), a_off.data(), c.ta, b.data(),
                  b_off.data(), c.tb, want.data(), 0.5);
  for (int call = 0; call < 2; ++call) {  // the second call multiplies by the packed copies
    std::fill(got.begin(), got.end(), std::nanf(""));
    sgraph_gemm_const_a_f32(&ctx, c.batch, c.M, c.N, c.K, a.data(), a_off.data(), c.ta, b.data(),
                            b_off.data(), c.tb, got.data(), 0.5);
    for (size_t i = 0; i < out; ++i) {
      REQUIRE(std::isfinite(got[i]));
      REQUIRE(std::fabs(got[i] - want[i]) <= 1e-5f * (1.0f + std::fabs(want[i])));
    }
  }
}

}  // namespace

TEST_CASE("sgraph_gemm_const_a_f32 matches sgraph_gemm_f32: short and long B, groups, threads") {
  const Case cases[] = {
      {1, 258, 3, 256, false, false, true},   // silero_vad_v5's first conv: packed
      {2, 128, 1, 387, false, false, true},   // one position per image
      {3, 24, 5, 40, false, false, false},    // groups: each item its own A
      {2, 17, 7, 33, true, false, true},      // A stored K x M
      {2, 20, 6, 30, false, true, false},     // B stored N x K
      {1, 9, 15, 30, true, true, true},       // N = K / 2: still packed
      {2, 12, 16, 30, false, false, true},    // N > K / 2: the plain GEMM
      {1, 300, 4, 1100, false, false, true},  // several K blocks
  };
  for (const Case& c : cases)
    for (int threads : {1, 2, 3}) check(c, threads);
}

TEST_CASE("sgraph_gemm_const_a_f32 without a context is the plain GEMM") {
  const std::vector<float> a = random_floats(6 * 8, 3), b = random_floats(8 * 2, 4);
  std::vector<float> want(12), got(12);
  sgraph_gemm_f32(nullptr, 1, 6, 2, 8, a.data(), nullptr, 0, b.data(), nullptr, 0, want.data(), 1);
  sgraph_gemm_const_a_f32(nullptr, 1, 6, 2, 8, a.data(), nullptr, 0, b.data(), nullptr, 0,
                          got.data(), 1);
  CHECK(got == want);
}

TEST_CASE("sgraph_gemm_const_a_f32: calls on several threads share one context's packed weights") {
  // As a Session's kernel called by several requests at once: the first calls race to pack.
  const int64_t M = 96, N = 3, K = 200;
  const std::vector<float> a = random_floats(M * K, 5), b = random_floats(2 * K * N, 6);
  const int64_t b_off[] = {0, K * N};
  std::vector<float> want(static_cast<size_t>(2 * M * N));
  sgraph_gemm_f32(nullptr, 2, M, N, K, a.data(), nullptr, 0, b.data(), b_off, 0, want.data(), 1);
  KernelContext ctx(2);
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> callers;
  for (size_t t = 0; t < wrong.size(); ++t)
    callers.emplace_back([&, t] {
      std::vector<float> got(want.size());
      for (int call = 0; call < 20; ++call) {
        sgraph_gemm_const_a_f32(&ctx, 2, M, N, K, a.data(), nullptr, 0, b.data(), b_off, 0,
                                got.data(), 1);
        for (size_t i = 0; i < got.size(); ++i)
          wrong[t] += std::fabs(got[i] - want[i]) > 1e-5f * (1.0f + std::fabs(want[i]));
      }
    });
  for (std::thread& c : callers) c.join();
  CHECK(wrong == std::vector<int>(4, 0));
}
