// Interpreter dispatch overhead: a chain of N small elementwise ops, time per op.
#include <benchmark/benchmark.h>

#include "sgraph/sgraph.h"

namespace {
using namespace sgraph;

void BM_InterpreterDispatch(benchmark::State& state) {
  const int64_t n_ops = 64;
  const int64_t size = state.range(0);
  GraphBuilder b("chain");
  ValueId x = b.input("x", DType::f32, {size});
  ValueId v = x;
  for (int64_t i = 0; i < n_ops; ++i) v = (i % 2) ? b.relu(v) : b.neg(v);
  b.output(v, "y");
  Session s(b.build());
  std::vector<Tensor> in{Tensor::zeros(DType::f32, {size})};
  for (auto _ : state) benchmark::DoNotOptimize(s.run(in));
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(n_ops), benchmark::Counter::kIsIterationInvariantRate |
                                      benchmark::Counter::kInvert);
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(state.iterations() * n_ops),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_InterpreterDispatch)->Arg(1)->Arg(16)->Arg(256);

}  // namespace
