// Fused (profile-guided: warm-up, regions, one kernel per region) vs interpreted execution of
// the same graphs, measured side by side. Report the ratio of the two times from one run:
//   build/release/bench/sgraph_bench --benchmark_filter=Fusion
#include <benchmark/benchmark.h>

#include <cstdio>
#include <functional>
#include <random>

#include "sgraph/sgraph.h"

namespace {
using namespace sgraph;

Tensor random(Shape shape, uint32_t seed) {
  Tensor t(DType::f32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

// y = exp(relu(x * a + b)) over 16M floats: 4 elementwise ops.
Graph chain4() {
  GraphBuilder b("chain4");
  ValueId x = b.input("x", DType::f32, {int64_t{1} << 24});
  ValueId t = b.add(b.mul(x, b.scalar(0.5f)), b.scalar(0.25f));
  b.output(b.exp(b.relu(t)), "y");
  return b.build();
}

// Softmax over the rows of a 4096x1024 matrix.
Graph softmax_rows() {
  GraphBuilder b("softmax");
  ValueId x = b.input("x", DType::f32, {4096, 1024});
  b.output(b.softmax(x, Attributes{{"axis", int64_t{-1}}}), "y");
  return b.build();
}

// y = gelu(x @ w + bias), x 64x1024, w 1024x1024 (erf form of GELU).
Graph gemm_bias_gelu() {
  GraphBuilder b("gemm_gelu");
  ValueId x = b.input("x", DType::f32, {64, 1024});
  ValueId h = b.add(b.matmul(x, b.constant("w", random({1024, 1024}, 2))),
                    b.constant("bias", random({1024}, 3)));
  ValueId e = b.erf(b.mul(h, b.scalar(0.70710678f)));
  b.output(b.mul(b.mul(h, b.scalar(0.5f)), b.add(e, b.scalar(1.0f))), "y");
  return b.build();
}

void run_case(benchmark::State& state, const std::function<Graph()>& make, Shape in_shape,
              bool fused) {
  SessionOptions o;
  o.interpret_only = !fused;
  o.min_region_ops = 1;
  Session s(make(), o);
  const std::vector<Tensor> in{random(std::move(in_shape), 1)};
  for (int i = 0; i < o.warmup_runs; ++i) s.run(in);  // warm-up (and compile) outside the timing
  for (auto _ : state) benchmark::DoNotOptimize(s.run(in));
  const Report r = s.report();
  int compiled = 0;
  for (const RegionReport& reg : r.regions) compiled += reg.compiled;
  state.counters["compiled_regions"] = compiled;
}

void BM_Fusion_Chain4(benchmark::State& st) {
  run_case(st, chain4, {int64_t{1} << 24}, st.range(0));
}
void BM_Fusion_Softmax(benchmark::State& st) {
  run_case(st, softmax_rows, {4096, 1024}, st.range(0));
}
void BM_Fusion_GemmBiasGelu(benchmark::State& st) {
  run_case(st, gemm_bias_gelu, {64, 1024}, st.range(0));
}
BENCHMARK(BM_Fusion_Chain4)->ArgName("fused")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fusion_Softmax)->ArgName("fused")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fusion_GemmBiasGelu)->ArgName("fused")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

// Each synthetic model of ../shared/testdata on its data set 0, fused vs interpreted.
namespace {
void BM_Fusion_Model(benchmark::State& state, const std::string& name) {
  const std::string dir = SGRAPH_TESTDATA_DIR "/synthetic/" + name;
  try {
    SessionOptions o;
    o.interpret_only = state.range(0) == 0;
    Session s(load_onnx(dir + "/model.onnx"), o);
    std::vector<Tensor> in;
    for (int i = 0;; ++i) {
      const std::string p = dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb";
      if (FILE* f = std::fopen(p.c_str(), "rb")) {
        std::fclose(f);
        in.push_back(load_tensor_pb(p));
      } else {
        break;
      }
    }
    for (int i = 0; i < o.warmup_runs; ++i) s.run(in);
    for (auto _ : state) benchmark::DoNotOptimize(s.run(in));
    int compiled = 0;
    for (const RegionReport& r : s.report().regions) compiled += r.compiled;
    state.counters["compiled_regions"] = compiled;
  } catch (const Error& e) {
    state.SkipWithError(e.what());
  }
}
}  // namespace
BENCHMARK_CAPTURE(BM_Fusion_Model, mlp3, "mlp3")->ArgName("fused")->Arg(0)->Arg(1);
BENCHMARK_CAPTURE(BM_Fusion_Model, small_cnn, "small_cnn")->ArgName("fused")->Arg(0)->Arg(1);
BENCHMARK_CAPTURE(BM_Fusion_Model, cnn_bn_gap, "cnn_bn_gap")->ArgName("fused")->Arg(0)->Arg(1);
BENCHMARK_CAPTURE(BM_Fusion_Model, tiny_encoder_block, "tiny_encoder_block")
    ->ArgName("fused")
    ->Arg(0)
    ->Arg(1);
BENCHMARK_CAPTURE(BM_Fusion_Model, tiny_causal_block, "tiny_causal_block")
    ->ArgName("fused")
    ->Arg(0)
    ->Arg(1);
