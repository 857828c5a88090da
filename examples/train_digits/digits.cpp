// The digits training example (see digits.h).
#include "digits.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

namespace sgraph::examples {

Digits load_digits(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  SG_CHECK(f != nullptr) << path << ": cannot open file";
  std::vector<float> pixels;
  Digits d;
  char line[1024];
  int64_t row = 0;
  try {
    while (gzgets(f, line, sizeof line) != nullptr) {
      ++row;
      std::stringstream ss(line);
      std::string cell;
      std::vector<int64_t> v;
      while (std::getline(ss, cell, ',')) {
        SG_CHECK(!cell.empty() && cell.find_first_not_of("0123456789\r\n") == std::string::npos)
            << path << ":" << row << ": not a non-negative integer: '" << cell << "'";
        v.push_back(std::stoll(cell));
      }
      SG_CHECK(v.size() == 65) << path << ":" << row << ": " << v.size()
                               << " columns, expected 64 pixels and a label";
      for (int i = 0; i < 64; ++i) {
        SG_CHECK(v[i] <= 16) << path << ":" << row << ": pixel " << v[i] << " is not in 0..16";
        pixels.push_back(static_cast<float>(v[i]) / 16.0f);
      }
      SG_CHECK(v[64] <= 9) << path << ":" << row << ": label " << v[64] << " is not in 0..9";
      d.label.push_back(v[64]);
    }
    SG_CHECK(gzeof(f)) << path << ": not a readable gzip file";
    SG_CHECK(row > 0) << path << ": no data";
  } catch (...) {
    gzclose(f);
    throw;
  }
  gzclose(f);
  d.x = Tensor::from<float>({row, 64}, pixels);
  return d;
}

namespace {

// A model's graph (inputs x [batch, 64] and labels [batch]; outputs logits and loss), the names
// of its parameters and a one-line description.
struct Model {
  Graph graph;
  std::vector<std::string> parameters;
  std::string description;
};

// He-initialised weights (normal, variance 2 / fan_in) from one seeded generator; zero biases.
struct Init {
  std::mt19937 rng;
  Tensor weights(Shape shape, int64_t fan_in) {
    std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
    Tensor w(DType::f32, std::move(shape));
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = normal(rng);
    return w;
  }
  static Tensor zeros(int64_t n) { return Tensor::from<float>({n}, std::vector<float>(n, 0)); }
};

// 64 -> hidden -> 10 with ReLU.
Model make_mlp(int64_t hidden, uint32_t seed) {
  Init init{std::mt19937(seed)};
  GraphBuilder b("digits_mlp");
  const ValueId x = b.input("x", DType::f32, {Dim("batch"), 64});
  const ValueId labels = b.input("labels", DType::i64, {Dim("batch")});
  const ValueId w1 = b.constant("w1", init.weights({64, hidden}, 64));
  const ValueId b1 = b.constant("b1", Init::zeros(hidden));
  const ValueId w2 = b.constant("w2", init.weights({hidden, 10}, hidden));
  const ValueId b2 = b.constant("b2", Init::zeros(10));
  const ValueId h = b.relu(b.add(b.matmul(x, w1), b1));
  const ValueId logits = b.add(b.matmul(h, w2), b2);
  b.output(logits, "logits");
  b.output(b.softmax_cross_entropy_loss(logits, labels), "loss");
  return {b.build(), {"w1", "b1", "w2", "b2"}, "MLP 64-" + std::to_string(hidden) + "-10"};
}

// [N,1,8,8] -> conv 3x3 to 8 channels, ReLU, max pool 2x2 -> [N,8,4,4] -> conv 3x3 to 16, ReLU,
// max pool 2x2 -> [N,16,2,2], flattened -> 64 -> 10.
Model make_cnn(uint32_t seed) {
  Init init{std::mt19937(seed)};
  GraphBuilder b("digits_cnn");
  const ValueId x = b.input("x", DType::f32, {Dim("batch"), 64});
  const ValueId labels = b.input("labels", DType::i64, {Dim("batch")});
  const Attributes same{{"pads", Ints{1, 1, 1, 1}}};
  const Attributes pool{{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  const auto block = [&](ValueId in, const std::string& name, int64_t c_in, int64_t c_out) {
    const ValueId w = b.constant(name + "_w", init.weights({c_out, c_in, 3, 3}, c_in * 9));
    const ValueId bias = b.constant(name + "_b", Init::zeros(c_out));
    return b.max_pool(b.relu(b.conv(in, w, bias, same)), pool);
  };
  const ValueId image = b.reshape(x, b.ints({0, 1, 8, 8}));
  const ValueId h = b.flatten(block(block(image, "conv1", 1, 8), "conv2", 8, 16));
  const ValueId w = b.constant("fc_w", init.weights({64, 10}, 64));
  const ValueId bias = b.constant("fc_b", Init::zeros(10));
  const ValueId logits = b.add(b.matmul(h, w), bias);
  b.output(logits, "logits");
  b.output(b.softmax_cross_entropy_loss(logits, labels), "loss");
  return {b.build(),
          {"conv1_w", "conv1_b", "conv2_w", "conv2_b", "fc_w", "fc_b"},
          "CNN conv3x3(8)-pool-conv3x3(16)-pool-10"};
}

// Rows `idx[from, to)` of the data set as a batch {x, labels}.
std::vector<Tensor> batch_of(const Digits& d, const std::vector<int64_t>& idx, size_t from,
                             size_t to) {
  const auto n = static_cast<int64_t>(to - from);
  Tensor x(DType::f32, {n, 64}), y(DType::i64, {n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = idx[from + i];
    std::copy_n(d.x.data<float>() + r * 64, 64, x.data<float>() + i * 64);
    y.data<int64_t>()[i] = d.label[r];
  }
  return {x, y};
}

double accuracy(const Tensor& logits, const std::vector<Tensor>& batch) {
  const int64_t n = logits.shape()[0], c = logits.shape()[1];
  int64_t right = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits.data<float>() + i * c;
    right += std::max_element(row, row + c) - row == batch[1].data<int64_t>()[i];
  }
  return n ? static_cast<double>(right) / static_cast<double>(n) : 0;
}

// What the training-step Session compiled, what fell back with the smaller batch, and how often.
void print_summary(FILE* out, const Report& r) {
  int stable = 0, compiled_ops = 0;
  std::map<std::string, int> changed;  // op name -> count
  for (const OpReport& o : r.ops) {
    stable += o.stable;
    compiled_ops += o.region >= 0;
    if (!o.stable) ++changed[std::string(op_name(o.op))];
  }
  std::fprintf(out, "\nstep graph '%s': %zu ops, %d stable over the warm-up, %zu changed\n",
               r.graph.c_str(), r.ops.size(), stable, r.ops.size() - stable);
  std::fprintf(out, "compiled: %zu regions covering %d ops; %zu steps per training step\n",
               r.regions.size(), compiled_ops, r.steps);
  for (const RegionReport& reg : r.regions)
    std::fprintf(out,
                 "  region %d: %zu ops (%s ... %s), compiled %dx%s, %lld kernel calls, %lld "
                 "fallbacks to the interpreter (other batch sizes)\n",
                 reg.id, reg.nodes.size(), reg.nodes.front().c_str(), reg.nodes.back().c_str(),
                 reg.compiles, reg.cache_hit ? " (kernel shared)" : "",
                 static_cast<long long>(reg.kernel_calls),
                 static_cast<long long>(reg.guard_misses));
  std::string ops;
  for (const auto& [name, count] : changed)
    ops += (ops.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  std::fprintf(out, "changed ops, interpreted on every step: %s\n",
               ops.empty() ? "-" : ops.c_str());
  std::fprintf(out, "re-plans after guard misses: %d; kernel calls %lld, guard misses %lld\n",
               r.replans, static_cast<long long>(r.kernel_calls),
               static_cast<long long>(r.guard_misses));
}

}  // namespace

TrainResult train_digits(const TrainConfig& config) {
  const Digits data = load_digits(config.data);
  const auto n = static_cast<int64_t>(data.label.size());
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(config.seed);
  std::shuffle(order.begin(), order.end(), rng);
  const int64_t n_test = n / 5;
  std::vector<int64_t> test(order.begin(), order.begin() + n_test),
      train(order.begin() + n_test, order.end());
  const std::vector<Tensor> test_batch = batch_of(data, test, 0, test.size());

  SG_CHECK(config.model == "mlp" || config.model == "cnn")
      << "unknown model '" << config.model << "' (mlp or cnn)";
  SG_CHECK(config.optimizer == "sgd" || config.optimizer == "adam")
      << "unknown optimizer '" << config.optimizer << "' (sgd or adam)";
  SG_CHECK(config.batch > 0 && config.epochs >= 0 && config.hidden > 0)
      << "batch, hidden and epochs must be positive";
  Model model =
      config.model == "cnn" ? make_cnn(config.seed) : make_mlp(config.hidden, config.seed);
  TrainerOptions options;
  options.parameters = model.parameters;
  options.optimizer = config.optimizer == "sgd" ? Optimizer::sgd(config.learning_rate, 0.9)
                                                : Optimizer::adam(config.learning_rate);
  options.session.interpret_only = !config.jit;
  Trainer trainer(std::move(model.graph), options);

  FILE* out = config.out;
  const bool bar = out && config.progress && isatty(fileno(out));
  const size_t batches = (train.size() + config.batch - 1) / config.batch;
  if (out)
    std::fprintf(out,
                 "digits: %lld training and %lld test images, %s, %s lr %g, batch %lld "
                 "(%zu batches per epoch, the last of %lld), JIT %s\n",
                 static_cast<long long>(train.size()), static_cast<long long>(n_test),
                 model.description.c_str(), config.optimizer.c_str(), config.learning_rate,
                 static_cast<long long>(config.batch), batches,
                 static_cast<long long>(train.size() - (batches - 1) * config.batch),
                 config.jit ? "on" : "off");
  TrainResult result;
  result.train_size = static_cast<int64_t>(train.size());
  result.test_size = n_test;
  for (int epoch = 1; epoch <= config.epochs; ++epoch) {
    std::shuffle(train.begin(), train.end(), rng);
    EpochStats s;
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t k = 0; k < batches; ++k) {
      const size_t from = k * config.batch, to = std::min(train.size(), from + config.batch);
      s.loss += trainer.step(batch_of(data, train, from, to));
      if (bar) {
        const int done = static_cast<int>(30 * (k + 1) / batches);
        std::fprintf(out, "\repoch %2d [%s%s] %zu/%zu loss %.4f", epoch,
                     std::string(done, '#').c_str(), std::string(30 - done, '.').c_str(), k + 1,
                     batches, s.loss / static_cast<double>(k + 1));
        std::fflush(out);
      }
    }
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.loss /= static_cast<double>(batches);
    s.test_accuracy = accuracy(trainer.predict({test_batch[0]})[0], test_batch);
    if (out)
      std::fprintf(out, "%sepoch %2d  loss %.4f  test accuracy %5.1f%%  %6.1f ms\n",
                   bar ? "\r\033[K" : "", epoch, s.loss, 100 * s.test_accuracy, 1e3 * s.seconds);
    result.epochs.push_back(s);
  }
  result.report = trainer.step_session().report();
  if (out) print_summary(out, result.report);
  return result;
}

}  // namespace sgraph::examples
