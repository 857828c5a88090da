// One epoch of the digits training demo (examples/train_digits: the MLP 64-64-10 or the small
// CNN, Adam, batch 64 with a smaller last batch), interpreted vs through the JIT, side by side:
//   build/release/bench/sgraph_bench --benchmark_filter=Train
// Each iteration trains 8 epochs and times the last 3: the JIT's steady state, after warm-up and
// compiling (the smaller last batch of each epoch falls back for its step and keeps the kernels).
#include <benchmark/benchmark.h>

#include "digits.h"

namespace {

void BM_Train_DigitsEpoch(benchmark::State& state, const char* model) {
  sgraph::examples::TrainConfig c;
  c.data = SGRAPH_DIGITS_DATA;
  c.model = model;
  c.epochs = 8;
  c.jit = state.range(0) != 0;
  c.out = nullptr;
  for (auto _ : state) {
    const sgraph::examples::TrainResult r = sgraph::examples::train_digits(c);
    double s = 0;
    for (size_t e = 5; e < r.epochs.size(); ++e) s += r.epochs[e].seconds;
    state.SetIterationTime(s / 3);
    state.counters["test_accuracy"] = r.epochs.back().test_accuracy;
  }
}
BENCHMARK_CAPTURE(BM_Train_DigitsEpoch, mlp, "mlp")
    ->ArgName("jit")
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Train_DigitsEpoch, cnn, "cnn")
    ->ArgName("jit")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
