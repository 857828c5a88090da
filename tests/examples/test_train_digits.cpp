// The digits training demo end to end: autodiff, Adam/SGD, the Trainer, the JIT with a smaller
// last batch per epoch. A broken gradient or update cannot reach these accuracies (chance is 10%,
// a linear model without training ~10%, the trained MLP ~98-99%).
#include <algorithm>

#include "digits.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::examples;

TEST_CASE("train_digits: loads the bundled data and names bad input") {
  const Digits d = load_digits(SGRAPH_DIGITS_DATA);
  CHECK(d.x.shape() == Shape{1797, 64});
  CHECK(d.label.size() == 1797);
  for (int64_t i = 0; i < d.x.numel(); ++i) {
    REQUIRE(d.x.data<float>()[i] >= 0.0f);
    REQUIRE(d.x.data<float>()[i] <= 1.0f);
  }
  CHECK(test::contains(test::error_of([] { load_digits("/nonexistent.csv.gz"); }),
                       "/nonexistent.csv.gz: cannot open file"));
}

TEST_CASE("train_digits: Adam reaches 95% test accuracy, weight updates stay compiled") {
  TrainConfig c;
  c.data = SGRAPH_DIGITS_DATA;
  c.epochs = 12;
  c.out = nullptr;
  const TrainResult r = train_digits(c);
  REQUIRE(r.epochs.size() == 12);
  CHECK(r.train_size + r.test_size == 1797);
  CHECK(r.epochs.back().loss < r.epochs.front().loss / 5);
  CHECK(r.epochs.back().test_accuracy >= 0.95);
  // Warm-up saw batches of 64 only, so the whole step compiled. The smaller last batch of each
  // epoch misses the guards and falls back to the interpreter; being rare (1 call in 23) it does
  // not get the kernel re-planned away. Each region compiled once.
  REQUIRE(!r.report.regions.empty());
  CHECK(r.report.replans == 0);
  bool updates_compiled = false;
  int64_t misses = 0;
  for (const RegionReport& reg : r.report.regions) {
    CHECK_MESSAGE(reg.compiled, reg.why_interpreted);
    CHECK(reg.compiles == 1);
    CHECK(reg.kernel_calls > 10 * reg.guard_misses);
    misses = std::max(misses, reg.guard_misses);
    for (const std::string& n : reg.nodes)
      updates_compiled |= n.find("w1.next") != std::string::npos;
  }
  CHECK(misses == 12);  // one per epoch
  CHECK(updates_compiled);
}

TEST_CASE("train_digits: the CNN reaches 95% in 5 epochs, its backward pass compiled") {
  // With the conv weights' gradients zeroed (only biases and the linear layer learning) it reached
  // 84% and a loss of 0.8 in 5 epochs; with them ~98.5% and 0.12.
  TrainConfig c;
  c.data = SGRAPH_DIGITS_DATA;
  c.model = "cnn";
  c.epochs = 5;
  c.out = nullptr;
  const TrainResult r = train_digits(c);
  CHECK(r.epochs.back().loss < 0.3);
  CHECK(r.epochs.back().test_accuracy >= 0.95);
  for (const RegionReport& reg : r.report.regions) CHECK_MESSAGE(reg.compiled, reg.why_interpreted);
  for (const char* forward : {"conv_0", "conv_1", "maxpool_0", "maxpool_1"})
    CHECK(test::op_named(r.report, forward).region >= 0);
  // The gradient rules' ops: dW of both convs and dX of the second (the image needs none), and
  // each MaxPool's first-maximum masks, all in compiled regions.
  int grad_convs = 0, pool_ops = 0;
  for (const OpReport& o : r.report.ops) {
    if (o.node.find("/grad/") == std::string::npos) continue;
    const bool pool = o.node.rfind("maxpool_", 0) == 0;
    if (o.op != OpKind::Conv && !pool) continue;
    CAPTURE(o.node);
    CHECK(o.region >= 0);
    grad_convs += o.op == OpKind::Conv;
    pool_ops += pool && o.op == OpKind::Xor;
  }
  CHECK(grad_convs == 3);
  CHECK(pool_ops == 2 * 3);  // per 2x2 pool: taps 2, 3 and 4 take what no earlier tap took
}

TEST_CASE("train_digits: SGD with momentum, interpreted, also learns") {
  TrainConfig c;
  c.data = SGRAPH_DIGITS_DATA;
  c.epochs = 12;
  c.optimizer = "sgd";
  c.learning_rate = 0.05;
  c.jit = false;
  c.out = nullptr;
  const TrainResult r = train_digits(c);
  CHECK(r.epochs.back().test_accuracy >= 0.93);
  CHECK(r.report.regions.empty());
}
