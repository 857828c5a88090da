// Fused (profile-guided: warm-up, regions, one kernel per region) vs interpreted execution of
// the same graphs, measured side by side, with each kernel's rate as a fraction of the machine's
// limits measured in the same run (roofline.h). Ratios from one run:
//   build/release/bench/sgraph_bench --benchmark_filter=Fusion --benchmark_format=json |
//   bench/ratios.py
#include <benchmark/benchmark.h>

#include <cstdio>
#include <functional>
#include <random>

#include "ops/winograd.h"
#include "roofline.h"
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

constexpr int64_t k16M = int64_t{1} << 24;

// k elementwise ops over 16M floats, cycling x * 0.5, + 0.25, relu, exp.
Graph chain(int k) {
  GraphBuilder b("chain" + std::to_string(k));
  ValueId v = b.input("x", DType::f32, {k16M});
  for (int i = 0; i < k; ++i) {
    switch (i % 4) {
      case 0:
        v = b.mul(v, b.scalar(0.5f));
        break;
      case 1:
        v = b.add(v, b.scalar(0.25f));
        break;
      case 2:
        v = b.relu(v);
        break;
      default:
        v = b.exp(v);
        break;
    }
  }
  b.output(v, "y");
  return b.build();
}

// Softmax, or LayerNormalization, over the rows of a 4096x1024 matrix.
Graph softmax_rows(int64_t rows, int64_t cols) {
  GraphBuilder b("softmax");
  ValueId x = b.input("x", DType::f32, {rows, cols});
  b.output(b.softmax(x, Attributes{{"axis", int64_t{-1}}}), "y");
  return b.build();
}
Graph layer_norm_rows() {
  GraphBuilder b("layer_norm");
  ValueId x = b.input("x", DType::f32, {4096, 1024});
  ValueId scale = b.constant("scale", random({1024}, 2)),
          bias = b.constant("bias", random({1024}, 3));
  b.output(b.node(OpKind::LayerNormalization, {x, scale, bias}, {}).front(), "y");
  return b.build();
}

// ArgMax (its index) or CumSum along one axis of a 4096x1024 matrix: along its rows (axis 1),
// a dependence from element to element; along its columns (axis 0), rows in memory order.
Graph index_or_sums(OpKind op, int64_t axis) {
  GraphBuilder b(std::string(op_name(op)));
  ValueId x = b.input("x", DType::f32, {4096, 1024});
  if (op == OpKind::CumSum)
    b.output(b.node(op, {x, b.ints({axis})}, {}).front(), "y");
  else
    b.output(b.node(op, {x}, {{"axis", axis}}).front(), "y");
  return b.build();
}

// y = gelu(x @ w + bias), x Mx1024... (erf form of GELU): a GEMM with an epilogue.
Graph gemm_bias_gelu(int64_t M, int64_t K, int64_t N) {
  GraphBuilder b("gemm_gelu");
  ValueId x = b.input("x", DType::f32, {M, K});
  ValueId h =
      b.add(b.matmul(x, b.constant("w", random({K, N}, 2))), b.constant("bias", random({N}, 3)));
  ValueId e = b.erf(b.mul(h, b.scalar(0.70710678f)));
  b.output(b.mul(b.mul(h, b.scalar(0.5f)), b.add(e, b.scalar(1.0f))), "y");
  return b.build();
}

// Conv (3x3, pads 1) + bias + Relu: the kinds Winograd's F(2,3) along the width takes.
Graph conv3(int64_t c, int64_t m, int64_t h, int64_t w, int64_t stride_h) {
  GraphBuilder b("conv3");
  ValueId x = b.input("x", DType::f32, {1, c, h, w});
  Attributes a{{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{stride_h, 1}}};
  ValueId y =
      b.node(OpKind::Conv,
             {x, b.constant("w", random({m, c, 3, 3}, 2)), b.constant("b", random({m}, 3))}, a)
          .front();
  b.output(b.relu(y), "y");
  return b.build();
}

// Runs `make`'s graph fused (with range(1) threads) or interpreted (range(0) == 0), and reports
// the rate: bytes moved (at least the input and output) as GB/s and as a fraction of the copy
// bandwidth on as many threads, or FLOPs as GFLOP/s and as a fraction of the peak SGEMM times the
// threads.
void run_case(benchmark::State& state, const std::function<Graph()>& make, Shape in_shape,
              double bytes, double flops) {
  const bool fused = state.range(0) != 0;
  const int threads = fused ? static_cast<int>(state.range(1)) : 1;
  SessionOptions o;
  o.interpret_only = !fused;
  o.min_region_ops = 1;
  o.threads = threads;
  Session s(make(), o);
  const std::vector<Tensor> in{random(std::move(in_shape), 1)};
  for (int i = 0; i < o.warmup_runs; ++i) s.run(in);  // warm-up (and compile) outside the timing
  for (auto _ : state) benchmark::DoNotOptimize(s.run(in));
  const Report r = s.report();
  int compiled = 0;
  for (const RegionReport& reg : r.regions) compiled += reg.compiled;
  state.counters["regions"] = compiled;
  using C = benchmark::Counter;
  if (bytes > 0) {
    state.counters["GB/s"] = C(bytes * 1e-9, C::kIsIterationInvariantRate);
    state.counters["of_copy"] =
        C(bytes / bench::copy_bandwidth(threads), C::kIsIterationInvariantRate);
  }
  if (flops > 0) {
    state.counters["GFLOP/s"] = C(flops * 1e-9, C::kIsIterationInvariantRate);
    state.counters["of_sgemm"] =
        C(flops / (bench::sgemm_peak() * threads), C::kIsIterationInvariantRate);
  }
}

void fused_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"fused", "threads"})->Args({0, 1})->Args({1, 1})->Args({1, 2});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// Fused with Winograd F(2,3) (range(2) == 1) or with the plain im2col + GEMM, or interpreted;
// the rate counts the plain conv's multiply-adds.
void BM_Fusion_Conv3(benchmark::State& st, int64_t c, int64_t m, int64_t h, int64_t w,
                     int64_t stride_h) {
  sgraph::ops::set_winograd_for_testing(st.range(2) != 0 ? 1 : -1);
  const int64_t oh = (h - 1) / stride_h + 1;
  run_case(
      st, [&] { return conv3(c, m, h, w, stride_h); }, {1, c, h, w}, 0, 2.0 * m * c * 9 * oh * w);
  sgraph::ops::set_winograd_for_testing(0);
}
void conv_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"fused", "threads", "winograd"})->Args({0, 1, 0})->Args({1, 1, 0})->Args({1, 1, 1});
  b->Args({1, 2, 0})->Args({1, 2, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
}
// The recognizer's third stem conv at width 160 and 480; a ResNet's first stage; a later one.
BENCHMARK_CAPTURE(BM_Fusion_Conv3, recognizer_64x12x40_s21, 64, 192, 12, 40, 2)->Apply(conv_args);
BENCHMARK_CAPTURE(BM_Fusion_Conv3, recognizer_64x12x120_s21, 64, 192, 12, 120, 2)->Apply(conv_args);
BENCHMARK_CAPTURE(BM_Fusion_Conv3, resnet_64x56x56, 64, 64, 56, 56, 1)->Apply(conv_args);
BENCHMARK_CAPTURE(BM_Fusion_Conv3, resnet_256x14x14, 256, 256, 14, 14, 1)->Apply(conv_args);
// Near winograd_pays's bar: few input channels (GEMMs over K = C by F(2x2,3x3)).
BENCHMARK_CAPTURE(BM_Fusion_Conv3, narrow_12x56x56, 12, 16, 56, 56, 1)->Apply(conv_args);
BENCHMARK_CAPTURE(BM_Fusion_Conv3, narrow_16x28x28, 16, 32, 28, 28, 1)->Apply(conv_args);

void BM_Fusion_Chain(benchmark::State& st, int k) {
  run_case(
      st, [k] { return chain(k); }, {k16M}, 2.0 * 4 * k16M, 0);
}
BENCHMARK_CAPTURE(BM_Fusion_Chain, k2, 2)->Apply(fused_args);
BENCHMARK_CAPTURE(BM_Fusion_Chain, k4, 4)->Apply(fused_args);
BENCHMARK_CAPTURE(BM_Fusion_Chain, k8, 8)->Apply(fused_args);

void BM_Fusion_Softmax(benchmark::State& st) {
  run_case(
      st, [] { return softmax_rows(4096, 1024); }, {4096, 1024}, 2.0 * 4 * 4096 * 1024, 0);
}
void BM_Fusion_LayerNorm(benchmark::State& st) {
  run_case(st, layer_norm_rows, {4096, 1024}, 2.0 * 4 * 4096 * 1024, 0);
}
// Attention's rows: 80 positions (a sequence of 80), 64K rows; short rows are where a row's
// loops' remainder costs.
void BM_Fusion_SoftmaxRows80(benchmark::State& st) {
  run_case(
      st, [] { return softmax_rows(65536, 80); }, {65536, 80}, 2.0 * 4 * 65536 * 80, 0);
}
// Bytes: the input, and the output (an i64 index per row or column; CumSum's full matrix).
void BM_Fusion_ArgMax(benchmark::State& st, int64_t axis) {
  run_case(
      st, [axis] { return index_or_sums(OpKind::ArgMax, axis); }, {4096, 1024},
      4.0 * 4096 * 1024 + 8.0 * (axis == 1 ? 4096 : 1024), 0);
}
void BM_Fusion_CumSum(benchmark::State& st, int64_t axis) {
  run_case(
      st, [axis] { return index_or_sums(OpKind::CumSum, axis); }, {4096, 1024},
      2.0 * 4 * 4096 * 1024, 0);
}
BENCHMARK_CAPTURE(BM_Fusion_ArgMax, rows, 1)->Apply(fused_args);
BENCHMARK_CAPTURE(BM_Fusion_ArgMax, columns, 0)->Apply(fused_args);
BENCHMARK_CAPTURE(BM_Fusion_CumSum, rows, 1)->Apply(fused_args);
BENCHMARK_CAPTURE(BM_Fusion_CumSum, columns, 0)->Apply(fused_args);
BENCHMARK(BM_Fusion_Softmax)->Apply(fused_args);
BENCHMARK(BM_Fusion_SoftmaxRows80)->Apply(fused_args);
BENCHMARK(BM_Fusion_LayerNorm)->Apply(fused_args);

void BM_Fusion_GemmBiasGelu(benchmark::State& st, int64_t M, int64_t K, int64_t N) {
  run_case(
      st, [=] { return gemm_bias_gelu(M, K, N); }, {M, K}, 0, 2.0 * M * K * N);
}
BENCHMARK_CAPTURE(BM_Fusion_GemmBiasGelu, 64x1024x1024, 64, 1024, 1024)->Apply(fused_args);
BENCHMARK_CAPTURE(BM_Fusion_GemmBiasGelu, 1024x1024x1024, 1024, 1024, 1024)->Apply(fused_args);

}  // namespace

// Each synthetic model of ../shared/testdata on its data set 0, fused vs interpreted.
namespace {
void model_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"fused", "threads"})->Args({0, 1})->Args({1, 1})->Args({1, 2})->UseRealTime();
}
void BM_Fusion_Model(benchmark::State& state, const std::string& name) {
  const std::string dir = SGRAPH_TESTDATA_DIR "/synthetic/" + name;
  try {
    SessionOptions o;
    o.interpret_only = state.range(0) == 0;
    o.threads = o.interpret_only ? 1 : static_cast<int>(state.range(1));
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
    state.counters["regions"] = compiled;
  } catch (const Error& e) {
    state.SkipWithError(e.what());
  }
}
}  // namespace
BENCHMARK_CAPTURE(BM_Fusion_Model, mlp3, "mlp3")->Apply(model_args);
BENCHMARK_CAPTURE(BM_Fusion_Model, small_cnn, "small_cnn")->Apply(model_args);
BENCHMARK_CAPTURE(BM_Fusion_Model, cnn_bn_gap, "cnn_bn_gap")->Apply(model_args);
BENCHMARK_CAPTURE(BM_Fusion_Model, tiny_encoder_block, "tiny_encoder_block")->Apply(model_args);
BENCHMARK_CAPTURE(BM_Fusion_Model, tiny_causal_block, "tiny_causal_block")->Apply(model_args);
