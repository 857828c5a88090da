// Single-threaded SGEMM on each float GEMM variant this CPU runs (baseline SSE2, AVX2+FMA,
// AVX-512), C = A * B with A M x K and B K x N, in GFLOP/s (2 M N K flops per call):
//   build/release/bench/sgraph_bench --benchmark_filter=Gemm
// and with B packed once, as constant weights are (BM_GemmPacked_F32).
// The best variant's 1024^3 figure is the peak SGEMM sgraph gets from Eigen on this machine.
#include <benchmark/benchmark.h>
#include <algorithm>

#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "ops/gemm_kernel.h"

namespace {

using sgraph::ops::GemmIsa;

// Random A (M x K), B (K x N, or N x K when trans_b: the same count) and C for a product.
struct Operands {
  std::vector<float> a, b, c;
  Operands(int64_t M, int64_t N, int64_t K) : a(M * K), b(K * N), c(M * N) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
  }
};

void report_gflops(benchmark::State& state, int64_t M, int64_t N, int64_t K) {
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * double(M) * double(N) * double(K),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void sgemm(benchmark::State& state, GemmIsa isa, int64_t M, int64_t N, int64_t K, bool trans_b) {
  Operands o(M, N, K);
  for (auto _ : state) {
    sgraph::ops::gemm_with<float>(isa, M, N, K, o.a.data(), false, o.b.data(), trans_b, o.c.data());
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  report_gflops(state, M, N, K);
}

// C = A * B with B packed once (sgraph::ops::PackedB), as a layer's constant weights are: the
// product a MatMul or Gemm over constant weights runs in a kernel (gemm_packed), B stored K x N.
void sgemm_packed(benchmark::State& state, GemmIsa isa, int64_t M, int64_t N, int64_t K) {
  Operands o(M, N, K);
  const sgraph::ops::PackedB packed(isa, K, N, o.b.data(), false);
  for (auto _ : state) {
    sgraph::ops::gemm_packed(M, o.a.data(), false, packed, o.c.data());
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  report_gflops(state, M, N, K);
}

// The variants a shape is measured on: the best, and beside AVX-512's own micro-kernel the same
// product on Eigen's AVX-512 kernel (avx512_eigen), so the two are compared in one run.
std::vector<GemmIsa> measured_isas() {
  std::vector<GemmIsa> isas = {sgraph::ops::gemm_isa()};
  if (isas[0] == GemmIsa::avx512) isas.insert(isas.begin(), GemmIsa::avx512_eigen);
  return isas;
}

// Registered at start-up: only the variants this CPU runs.
[[maybe_unused]] const bool registered = [] {
  // The square ones; then, best variant only, the recognizer's at 1x3x48x480 (bench/compare): its
  // three convs as weights x im2col, an attention head's two products, a dense layer.
  const int64_t kShapes[][3] = {{64, 1024, 1024}, {1024, 1024, 1024}, {32, 5760, 27},
                                {64, 1440, 288},  {192, 720, 576},    {120, 120, 32},
                                {120, 32, 120},   {120, 384, 192}};
  for (size_t i = 0; i < std::size(kShapes); ++i)
    for (GemmIsa isa : sgraph::ops::kGemmIsas) {
      const auto& s = kShapes[i];
      const std::vector<GemmIsa> best = measured_isas();
      if (!sgraph::ops::gemm_isa_supported(isa) ||
          (i >= 2 && std::find(best.begin(), best.end(), isa) == best.end()))
        continue;
      const std::string name = "BM_Gemm_F32/" + std::to_string(s[0]) + "x" + std::to_string(s[1]) +
                               "x" + std::to_string(s[2]) + "/" + sgraph::ops::gemm_isa_name(isa);
      benchmark::RegisterBenchmark(name.c_str(), sgemm, isa, s[0], s[1], s[2], false)
          ->Unit(benchmark::kMillisecond);
    }
  // A few rows against a large B (an LSTM step's H x R^T for a small batch, a dense layer on a
  // few tokens), B stored N x K as weights are: each row of C is a matrix-vector product.
  const int64_t kFewRows[][3] = {{1, 512, 128},   {2, 512, 128}, {3, 512, 128},   {4, 512, 128},
                                 {6, 512, 128},   {8, 512, 128}, {2, 1024, 1024}, {4, 1024, 1024},
                                 {8, 1024, 1024}, {2, 256, 64},  {4, 256, 64},    {4, 10, 64},
                                 {4, 64, 64},     {8, 32, 32},   {3, 16, 256},    {4, 33, 128},
                                 {2, 40, 300}};
  for (bool trans_b : {true, false})
    for (const auto& s : kFewRows) {
      const std::string name = std::string(trans_b ? "BM_Gemm_F32_BT/" : "BM_Gemm_F32_B/") +
                               std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" +
                               std::to_string(s[2]);
      benchmark::RegisterBenchmark(name.c_str(), sgemm, sgraph::ops::gemm_isa(), s[0], s[1], s[2],
                                   trans_b)
          ->Unit(benchmark::kMicrosecond);
    }
  // Packed weights, best variant (and avx512_eigen beside avx512): mlp4x1024's layers;
  // text_encoder's (d 256, MLP 1024) at 74 and 256 tokens; the recognizer's (d 192, MLP 384) at 40
  // and 240 tokens.
  const int64_t kPacked[][3] = {{64, 1024, 1024}, {74, 256, 256},   {74, 1024, 256},
                                {74, 256, 1024},  {256, 1024, 256}, {40, 192, 192},
                                {40, 384, 192},   {240, 384, 192},  {240, 192, 384}};
  for (const auto& s : kPacked)
    for (GemmIsa isa : measured_isas()) {
      const std::string name = "BM_GemmPacked_F32/" + std::to_string(s[0]) + "x" +
                               std::to_string(s[1]) + "x" + std::to_string(s[2]) + "/" +
                               sgraph::ops::gemm_isa_name(isa);
      benchmark::RegisterBenchmark(name.c_str(), sgemm_packed, isa, s[0], s[1], s[2])
          ->Unit(benchmark::kMicrosecond);
    }
  return true;
}();

}  // namespace
