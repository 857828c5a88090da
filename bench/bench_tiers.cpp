// Merging tiers: a static region next to a dynamic one, compiled as one dynamic kernel
// (SessionOptions::merge_tiers) or as two. Warm-up sees the batch n at 8, 16 and 32 (the ops
// reading x change: a dynamic region) while the ops on c and w keep their shapes (stable: a static
// region next to it). Ratios merged/separate from one run:
//   build/release/bench/sgraph_bench --benchmark_filter=Tiers
#include <benchmark/benchmark.h>

#include <random>

#include "sgraph/sgraph.h"

namespace {
using namespace sgraph;

constexpr int64_t kD = 256;

Tensor random(Shape shape, uint32_t seed) {
  Tensor t(DType::f32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

// Four stable elementwise ops on an input of fixed shape.
ValueId stable_chain(GraphBuilder& b, ValueId c) {
  c = b.mul(c, b.scalar(0.5f));
  c = b.tanh(c);
  c = b.add(c, b.scalar(1.0f));
  return b.exp(c);
}

// Broadcast: v = f(c[D]) read by every row of the dynamic x[n, D]: y = relu(x * v + x).
Graph broadcast_graph() {
  GraphBuilder b("tiers_broadcast");
  ValueId x = b.input("x", DType::f32, {-1, kD});
  ValueId v = stable_chain(b, b.input("c", DType::f32, {kD}));
  b.output(b.relu(b.add(b.mul(x, v), x)), "y");
  return b.build();
}

// Weights: W = f(w[D, D]) is the GEMM's B operand, read once per call: y = relu(x @ W).
Graph weights_graph() {
  GraphBuilder b("tiers_weights");
  ValueId x = b.input("x", DType::f32, {-1, kD});
  ValueId w = stable_chain(b, b.input("w", DType::f32, {kD, kD}));
  b.output(b.relu(b.matmul(x, w)), "y");
  return b.build();
}

// range(0): 0 broadcast, 1 weights; range(1): n; range(2): 1 merged, 0 separate.
void BM_Tiers(benchmark::State& state) {
  const bool weights = state.range(0) == 1;
  const int64_t n = state.range(1);
  SessionOptions o;
  o.threads = 1;
  o.merge_tiers = state.range(2) == 1;
  Session s(weights ? weights_graph() : broadcast_graph(), o);
  const Tensor other = weights ? random({kD, kD}, 2) : random({kD}, 2);
  for (int64_t warm : {8, 16, 32}) s.run(std::vector<Tensor>{random({warm, kD}, 1), other});
  const std::vector<Tensor> in = {random({n, kD}, 3), other};
  s.run(in);
  const Report rep = s.report();
  int dynamic = 0, stable_in_dynamic = 0;
  for (const RegionReport& r : rep.regions) {
    dynamic += r.dynamic && r.compiled;
    stable_in_dynamic += r.stable_ops;
  }
  if (dynamic != 1 || (o.merge_tiers && stable_in_dynamic == 0) ||
      (!o.merge_tiers && rep.regions.size() != 2)) {
    state.SkipWithError("not the regions this benchmark compares");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(s.run(in));
  state.counters["regions"] = static_cast<double>(rep.regions.size());
  state.SetLabel(std::string(weights ? "weights" : "broadcast") +
                 (o.merge_tiers ? " merged" : " separate"));
}
BENCHMARK(BM_Tiers)
    ->ArgsProduct({{0, 1}, {1, 16, 256, 4096}, {1, 0}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
