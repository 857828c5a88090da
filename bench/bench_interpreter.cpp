// Interpreter dispatch overhead: a chain of 64 elementwise ops on small tensors; the counter
// `per_op` is wall time per op (at size 1 it is almost all dispatch: shape rule, allocation,
// kernel call, observers, release).
#include <benchmark/benchmark.h>

#include "sgraph/sgraph.h"

namespace {
using namespace sgraph;

void BM_InterpreterDispatch(benchmark::State& state) {
  const int n_ops = 64;
  const int64_t size = state.range(0);
  GraphBuilder b("chain");
  ValueId v = b.input("x", DType::f32, {size});
  for (int i = 0; i < n_ops; ++i) v = (i % 2) ? b.relu(v) : b.neg(v);
  b.output(v, "y");
  Session s(b.build());
  const std::vector<Tensor> in{Tensor::zeros(DType::f32, {size})};
  for (auto _ : state) benchmark::DoNotOptimize(s.run(in));
  state.counters["per_op"] = benchmark::Counter(
      n_ops, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_InterpreterDispatch)->Arg(1)->Arg(16)->Arg(256)->Arg(4096);

}  // namespace
