// sgraph/train.h — training: reverse-mode gradients, optimizers, the training-step graph and a
// Trainer that keeps parameters and optimizer state across steps.
//
//   GraphBuilder b("mlp");
//   ValueId x = b.input("x", DType::f32, {Dim("batch"), 4});
//   ValueId labels = b.input("labels", DType::i64, {Dim("batch")});
//   ValueId w = b.constant("w", initial_w);                      // f32[4,3]: a parameter
//   ValueId logits = b.matmul(x, w);
//   b.output(logits, "logits");
//   b.output(b.softmax_cross_entropy_loss(logits, labels), "loss");
//
//   Trainer t(b.build(), {.parameters = {"w"}, .optimizer = Optimizer::adam(1e-2)});
//   for (each batch) double loss = t.step({x_batch, label_batch});   // any batch size
//   std::vector<Tensor> out = t.predict({x_test});                   // {logits}
//
// The step graph (make_training_step) is forward, loss, backward and the optimizer's update, all
// primitive ops: parameters and optimizer state are its inputs and, updated, its outputs, so their
// shapes never change and the Session's warm-up finds the update chains stable and compiles them,
// while the ops whose shapes follow the batch fall back to the interpreter when a batch is smaller.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sgraph/graph.h"
#include "sgraph/session.h"

namespace sgraph {

// Appends to the graph being built the ops computing the gradient of `loss` (a float value of one
// element) with respect to each value of `wrt` (float inputs, constants or computed values) and
// returns them, in order; each has its value's dtype and shape. Only nodes between `wrt` and the
// loss are differentiated. Throws sgraph::Error when the loss does not depend on one of `wrt`, or,
// naming the node and op, when an op on the way has no gradient rule.
std::vector<ValueId> append_gradients(GraphBuilder& b, ValueId loss,
                                      const std::vector<ValueId>& wrt);

// How parameters are updated from their gradients g (per parameter, elementwise).
//   SGD:  v = momentum * v + g;  p -= lr * v          (momentum 0: p -= lr * g, no state)
//   Adam: t += 1;  m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g * g;
//         p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
struct Optimizer {
  enum class Kind { sgd, adam };
  Kind kind = Kind::sgd;
  double learning_rate = 0.01;
  double momentum = 0;                                // SGD
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // Adam

  static Optimizer sgd(double learning_rate, double momentum = 0) {
    return {Kind::sgd, learning_rate, momentum};
  }
  static Optimizer adam(double learning_rate, double beta1 = 0.9, double beta2 = 0.999,
                        double epsilon = 1e-8) {
    return {Kind::adam, learning_rate, 0, beta1, beta2, epsilon};
  }
};

// A training-step graph. Inputs: the forward graph's inputs other than parameters (the batch, in
// their order), then the parameters, then the optimizer state. Outputs: the loss, then each
// parameter updated, then the state updated (in the order of the inputs they replace).
struct TrainingStep {
  Graph graph;
  std::vector<std::string> data;           // the batch inputs' names
  std::vector<std::string> parameters;     // input names, as in the forward graph
  std::vector<std::string> state;          // input names: "<param>.momentum", "<param>.adam_m", ...
  std::vector<Tensor> initial_parameters;  // a parameter's initializer; undefined for an input
  std::vector<Tensor> initial_state;       // zeros (Adam's step count "adam.step": i64 0)
};

// Builds the step graph from `forward` (which computes the value named `loss`) for the named
// parameters: float initializers or float graph inputs of static shape. Nodes the step does not
// need (other outputs) are left out. Throws sgraph::Error for an unknown or unsuitable name.
TrainingStep make_training_step(const Graph& forward, std::string_view loss,
                                const std::vector<std::string>& parameters,
                                const Optimizer& optimizer);

struct TrainerOptions {
  std::string loss = "loss";            // the forward graph's loss value
  std::vector<std::string> parameters;  // what to train (see make_training_step)
  Optimizer optimizer = {};
  SessionOptions session = {};  // for the step graph's Session and the evaluation ones
};

// Trains a forward graph: owns a Session over its training-step graph and the current parameters
// and optimizer state, which each step's outputs replace (handed over, not copied).
class Trainer {
 public:
  // `initial` gives the values of parameters that are graph inputs (and may override
  // initializers).
  Trainer(Graph forward, TrainerOptions options, std::map<std::string, Tensor> initial = {});
  ~Trainer();
  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;

  // One step on a batch: the forward graph's non-parameter inputs in order (e.g. {x, labels});
  // batches may differ in size. Returns the loss before the update.
  double step(const std::vector<Tensor>& batch);
  // The forward graph's outputs other than the loss, with the current parameters, from the
  // inputs they need (non-parameter inputs, in order: e.g. {x} without the labels).
  std::vector<Tensor> predict(const std::vector<Tensor>& inputs);
  // Every output of the forward graph (loss included), with the current parameters, from all its
  // non-parameter inputs, as step() takes them. Nothing is updated.
  std::vector<Tensor> evaluate(const std::vector<Tensor>& batch);

  const std::vector<std::string>& parameter_names() const;
  const Tensor& parameter(std::string_view name) const;  // throws for an unknown name
  const std::vector<Tensor>& state() const;              // in TrainingStep::state order
  int64_t steps() const;                                 // step() calls so far
  const TrainingStep& training_step() const;
  const Session& step_session() const;     // report() explains what was compiled and what fell back
  const Session* predict_session() const;  // nullptr until predict() ran

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sgraph
