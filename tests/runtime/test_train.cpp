// Training: optimizer updates against hand-written references, an MLP learning a separable toy
// problem with SGD and Adam, a smaller last batch (the update chains stay compiled while the
// batch-dependent ops fall back), and the Trainer's user errors.
#include <algorithm>
#include <cstring>
#include <random>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace test_train {  // this file's own names (the tests build as unity sources)

namespace {

// loss = sum(w * w * x) over a batch x [n, 3]: d loss / d w_j = 2 w_j sum_i x_ij.
Graph quadratic() {
  GraphBuilder b("quadratic");
  const ValueId x = b.input("x", DType::f64, {Dim("batch"), 3});
  const ValueId w = b.constant("w", Tensor::from<double>({3}, {0.5, -1.0, 2.0}));
  b.output(b.reduce_sum(b.mul(b.mul(w, w), x), Attributes{{"keepdims", int64_t{0}}}), "loss");
  return b.build();
}

// The references: plain loops over the three parameters.
struct Reference {
  std::vector<double> w{0.5, -1.0, 2.0}, m{0, 0, 0}, v{0, 0, 0};
  int64_t t = 0;

  std::vector<double> grad(const Tensor& x) const {
    std::vector<double> g(3, 0);
    for (int64_t i = 0; i < x.dim(0); ++i)
      for (int j = 0; j < 3; ++j) g[j] += 2 * w[j] * x.at_double(i * 3 + j);
    return g;
  }
  double loss(const Tensor& x) const {
    double l = 0;
    for (int64_t i = 0; i < x.dim(0); ++i)
      for (int j = 0; j < 3; ++j) l += w[j] * w[j] * x.at_double(i * 3 + j);
    return l;
  }
  void sgd(const Tensor& x, double lr, double mu) {
    const std::vector<double> g = grad(x);
    for (int j = 0; j < 3; ++j) {
      m[j] = mu * m[j] + g[j];
      w[j] -= lr * (mu == 0 ? g[j] : m[j]);
    }
  }
  void adam(const Tensor& x, double lr, double b1, double b2, double eps) {
    const std::vector<double> g = grad(x);
    ++t;
    for (int j = 0; j < 3; ++j) {
      m[j] = b1 * m[j] + (1 - b1) * g[j];
      v[j] = b2 * v[j] + (1 - b2) * g[j] * g[j];
      const double mhat = m[j] / (1 - std::pow(b1, t)), vhat = v[j] / (1 - std::pow(b2, t));
      w[j] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  }
};

std::vector<Tensor> batches() {  // three batches of different sizes
  return {random_f64({2, 3}, 1), random_f64({4, 3}, 2), random_f64({1, 3}, 3)};
}

void check_values(const Tensor& t, const std::vector<double>& want) {
  check_close(t, {static_cast<int64_t>(want.size())}, want, 1e-12, 1e-12);
}

// A two-class toy problem, linearly separable: label = x0 + 0.5 x1 > 0, points away from the
// boundary.
struct Data {
  Tensor x, labels;
};
Data toy(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Data d{Tensor(DType::f32, {n, 2}), Tensor(DType::i64, {n})};
  for (int64_t i = 0; i < n;) {
    const float a = u(rng), b = u(rng);
    if (std::abs(a + 0.5f * b) < 0.1f) continue;
    d.x.data<float>()[2 * i] = a;
    d.x.data<float>()[2 * i + 1] = b;
    d.labels.data<int64_t>()[i] = a + 0.5f * b > 0 ? 1 : 0;
    ++i;
  }
  return d;
}

// Rows [begin, end) of a tensor, as a copy.
Tensor rows(const Tensor& t, int64_t begin, int64_t end) {
  Shape s = t.shape();
  s[0] = end - begin;
  Tensor r(t.dtype(), s);
  const size_t row = t.nbytes() / static_cast<size_t>(t.dim(0));
  std::memcpy(r.raw_data(), static_cast<const char*>(t.raw_data()) + begin * row,
              row * static_cast<size_t>(end - begin));
  return r;
}

// x [batch, 2] -> fc1 (16) -> Relu -> fc2 (2) -> logits; loss = mean cross-entropy.
Graph mlp() {
  GraphBuilder b("mlp");
  const ValueId x = b.input("x", DType::f32, {Dim("batch"), 2});
  const ValueId labels = b.input("labels", DType::i64, {Dim("batch")});
  const ValueId w1 = b.constant("w1", random_f32({2, 16}, 11, -0.7f, 0.7f));
  const ValueId b1 = b.constant("b1", Tensor::zeros(DType::f32, {16}));
  const ValueId w2 = b.constant("w2", random_f32({16, 2}, 12, -0.25f, 0.25f));
  const ValueId b2 = b.constant("b2", Tensor::zeros(DType::f32, {2}));
  const ValueId h = b.relu(b.add(b.node(OpKind::MatMul, {x, w1}, {}, 1, "fc1")[0], b1));
  const ValueId logits = b.add(b.node(OpKind::MatMul, {h, w2}, {}, 1, "fc2")[0], b2);
  b.output(logits, "logits");
  b.output(b.softmax_cross_entropy_loss(logits, labels), "loss");
  return b.build();
}

// Trains for `epochs` over 200 points in batches of 32 (the last of each epoch has 8).
void train(Trainer& t, const Data& d, int epochs) {
  for (int e = 0; e < epochs; ++e)
    for (int64_t i = 0; i < d.x.dim(0); i += 32) {
      const int64_t end = std::min<int64_t>(i + 32, d.x.dim(0));
      t.step({rows(d.x, i, end), rows(d.labels, i, end)});
    }
}

double accuracy(Trainer& t, const Data& d) {
  const Tensor logits = t.predict({d.x})[0];
  int correct = 0;
  for (int64_t i = 0; i < d.x.dim(0); ++i) {
    const int64_t guess = logits.at_double(2 * i + 1) > logits.at_double(2 * i) ? 1 : 0;
    correct += guess == d.labels.data<int64_t>()[i];
  }
  return static_cast<double>(correct) / static_cast<double>(d.x.dim(0));
}

}  // namespace

TEST_CASE("train: SGD, SGD with momentum and Adam against hand-written updates over 3 steps") {
  struct Case {
    Optimizer opt;
    size_t state;
  };
  for (const Case& c : {Case{Optimizer::sgd(0.1), 0}, Case{Optimizer::sgd(0.1, 0.9), 1},
                        Case{Optimizer::adam(0.05, 0.8, 0.9, 1e-6), 3}}) {
    CAPTURE(static_cast<int>(c.opt.kind));
    CAPTURE(c.opt.momentum);
    Trainer t(quadratic(), {.parameters = {"w"}, .optimizer = c.opt});
    REQUIRE(t.state().size() == c.state);
    Reference ref;
    for (const Tensor& x : batches()) {
      CHECK(t.step({x}) == doctest::Approx(ref.loss(x)).epsilon(1e-12));
      if (c.opt.kind == Optimizer::Kind::adam)
        ref.adam(x, c.opt.learning_rate, c.opt.beta1, c.opt.beta2, c.opt.epsilon);
      else
        ref.sgd(x, c.opt.learning_rate, c.opt.momentum);
      check_values(t.parameter("w"), ref.w);
    }
    CHECK(t.steps() == 3);
    if (c.state == 1) check_values(t.state()[0], ref.m);
    if (c.state == 3) {
      check_values(t.state()[0], ref.m);
      check_values(t.state()[1], ref.v);
      CHECK(t.state()[2].data<int64_t>()[0] == 3);
    }
  }
}

TEST_CASE("train: the step graph's interface") {
  GraphBuilder more(mlp());  // with an output the step does not need
  more.output(more.arg_max(more.graph().find_value("logits"), Attributes{{"axis", int64_t{1}}}),
              "guess");
  const TrainingStep s =
      make_training_step(more.build(), "loss", {"w1", "b1"}, Optimizer::adam(0.01));
  CHECK(s.data == std::vector<std::string>{"x", "labels"});
  CHECK(s.parameters == std::vector<std::string>{"w1", "b1"});
  CHECK(s.state ==
        std::vector<std::string>{"w1.adam_m", "w1.adam_v", "b1.adam_m", "b1.adam_v", "adam.step"});
  std::vector<std::string> ins, outs;
  for (ValueId v : s.graph.inputs) ins.push_back(s.graph.values[v].name);
  for (ValueId v : s.graph.outputs) outs.push_back(s.graph.values[v].name);
  CHECK(ins == std::vector<std::string>{"x", "labels", "w1", "b1", "w1.adam_m", "w1.adam_v",
                                        "b1.adam_m", "b1.adam_v", "adam.step"});
  CHECK(outs == std::vector<std::string>{"loss", "w1.next", "b1.next", "w1.adam_m.next",
                                         "w1.adam_v.next", "b1.adam_m.next", "b1.adam_v.next",
                                         "adam.step.next"});
  CHECK(s.initial_parameters[0].shape() == Shape{2, 16});
  CHECK(values(s.initial_state[0]) == std::vector<double>(32, 0.0));
  // The nodes only the forward graph's other outputs need are left out.
  for (const Node& n : s.graph.nodes) CHECK(n.op != OpKind::ArgMax);
}

TEST_CASE("train: an MLP learns a separable problem with SGD and with Adam") {
  const Data d = toy(200, 5);
  for (const Optimizer& opt : {Optimizer::sgd(0.2, 0.9), Optimizer::adam(0.02)}) {
    CAPTURE(static_cast<int>(opt.kind));
    // Interpreted (the JIT trains in the next test case): the same updates, no compile time.
    Trainer t(mlp(), {.parameters = {"w1", "b1", "w2", "b2"},
                      .optimizer = opt,
                      .session = {.interpret_only = true}});
    const double before = t.evaluate({d.x, d.labels})[1].at_double(0);
    train(t, d, 25);
    const double after = t.evaluate({d.x, d.labels})[1].at_double(0);
    CAPTURE(before);
    CHECK(after < 0.1);
    CHECK(after < before / 5);
    CHECK(accuracy(t, d) >= 0.97);
  }
}

TEST_CASE("train: a smaller last batch falls back for that step, the step stays compiled") {
  const Data d = toy(200, 6);
  Trainer t(mlp(), {.parameters = {"w1", "b1", "w2", "b2"},
                    .optimizer = Optimizer::adam(0.02),
                    .session = {.warmup_runs = 3, .max_guard_misses = 2}});
  train(t, d, 4);  // 28 steps: warm-up on full batches, then 4 smaller last batches
  const Report r = t.step_session().report();
  REQUIRE(r.planned);
  // Warm-up saw full batches only: every op stable. The smaller last batches miss the guards of
  // the regions reading the batch and are interpreted for that step, but they are rare (1 step in
  // 7), so nothing is re-planned and the kernels keep running for full batches.
  CHECK(r.replans == 0);
  CHECK(op_named(r, "fc1").stable);
  CHECK(op_named(r, "fc1").region >= 0);
  int64_t misses = 0;
  for (const RegionReport& reg : r.regions) misses = std::max(misses, reg.guard_misses);
  CHECK(misses == 4);
  // Every parameter's update: stable, in a compiled region that ran its kernel on the full
  // batches since planning.
  for (const std::string p : {"w1", "b1", "w2", "b2"}) {
    CAPTURE(p);
    int updates = 0;
    for (const OpReport& o : r.ops) {
      if (o.node.rfind(p + "/update/", 0) != 0 && o.node.rfind(p + ".", 0) != 0) continue;
      CAPTURE(o.node);
      ++updates;
      CHECK(o.stable);
      REQUIRE(o.region >= 0);
      const RegionReport& region = r.regions.at(o.region);
      CHECK(region.compiled);
      CHECK(region.kernel_calls >= 20);
      CHECK(region.guard_misses <= 4);
    }
    CHECK(updates >= 10);  // Adam's chain: moments, bias corrections, the step
  }
  // Training still works and predicts any batch size.
  train(t, d, 20);
  CHECK(accuracy(t, d) >= 0.97);
  CHECK(t.predict({rows(d.x, 0, 5)})[0].shape() == Shape{5, 2});
}

TEST_CASE("train: user errors") {
  CHECK(contains(error_of([] { Trainer(mlp(), {.parameters = {}}); }), "no parameters to train"));
  CHECK(contains(error_of([] { Trainer(mlp(), {.parameters = {"nope"}}); }),
                 "graph 'mlp' has no value named 'nope'"));
  CHECK(contains(error_of([] { Trainer(mlp(), {.parameters = {"labels"}}); }),
                 "parameter 'labels' must be float, not i64"));
  CHECK(contains(error_of([] { Trainer(mlp(), {.parameters = {"x"}}); }),
                 "parameter 'x' must have a static shape, not [batch,2]"));
  CHECK(contains(error_of([] { Trainer(mlp(), {.parameters = {"logits"}}); }),
                 "parameter 'logits' is neither an initializer nor a graph input"));
  CHECK(contains(error_of([] { Trainer(mlp(), {.loss = "lost", .parameters = {"w1"}}); }),
                 "graph 'mlp' has no value named 'lost'"));
  CHECK(contains(
      error_of([] { Trainer(mlp(), {.parameters = {"w1"}, .optimizer = Optimizer::sgd(-1)}); }),
      "learning rate must be positive and finite, got -1"));
  CHECK(contains(error_of([] {
                   Trainer(mlp(), {.parameters = {"w1"}, .optimizer = Optimizer::adam(0.1, 1.0)});
                 }),
                 "Adam beta1 must be in [0, 1), got 1"));
  CHECK(contains(error_of([] {
                   Trainer(mlp(), {.parameters = {"w1"}}, {{"w1", Tensor::zeros(DType::f32, {3})}});
                 }),
                 "initial value of parameter 'w1' is f32[3], not f32[2,16]"));
  CHECK(
      contains(error_of([] {
                 Trainer(mlp(), {.parameters = {"w1"}}, {{"b1", Tensor::zeros(DType::f32, {16})}});
               }),
               "initial value for 'b1', which is not a parameter"));
  Trainer t(mlp(), {.parameters = {"w1"}});
  const Data d = toy(4, 1);
  CHECK(contains(error_of([&] { t.step({d.x}); }), "step() takes 2 batch inputs, got 1"));
  CHECK(contains(error_of([&] {
                   t.predict({d.x, d.labels});
                 }),
                 "predict() takes 1 inputs (x), got 2"));
  CHECK(contains(error_of([&] { t.parameter("w2"); }), "no parameter named 'w2'"));
}

}  // namespace test_train
