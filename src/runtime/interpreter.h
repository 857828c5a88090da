// The interpreter: runs a graph node by node with the ops' reference kernels.
//
// Each intermediate is released right after its last use. Observers (the shape tracker and the
// op profiler) see every op as it completes, with its inputs, outputs and elapsed time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph {

namespace ops {
class SubgraphRunner;  // src/ops/op.h
}  // namespace ops

struct OpEvent {
  int32_t node_index;
  const Node& node;
  std::span<const Tensor> inputs;  // undefined Tensor for an absent optional input
  std::span<const Tensor> outputs;
  int64_t elapsed_ns;  // 0 when no observer of the run reads it (OpObserver::reads_time)
};

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void on_op(const OpEvent& event) = 0;
  // Whether on_op reads OpEvent::elapsed_ns: the clock is read around an op only for a run with
  // such an observer (two reads per op cost a small model's served call ~3%).
  virtual bool reads_time() const { return true; }
};

// The SubgraphRunner that interprets each branch (what a null runner means); stateless.
ops::SubgraphRunner& interpret_subgraphs();

// Checks run inputs against the graph's declared inputs: count, dtype, rank, static dims, and
// that a symbolic dim ("batch") has one size across all inputs. Errors name the input.
void check_inputs(const Graph& g, std::span<const Tensor> inputs);

// A table by value id holding the graph's constants (the rest undefined).
std::vector<Tensor> bind_constants(const Graph& g);
// The environment of a run: graph inputs (checked) and constants bound to their value ids.
std::vector<Tensor> bind_inputs(const Graph& g, std::span<const Tensor> inputs);

// Runs one node on `env` (values by id): reads its inputs, writes its outputs, tells the
// observers. Keeps scratch space between calls; errors name the node and op.
// `premade` (by value id, or empty) holds buffers planned ahead for outputs: an output whose
// premade tensor has the inferred shape is written there instead of into a fresh allocation
// (view ops and ops that make their own outputs ignore it).
class NodeRunner {
 public:
  // Control-flow ops run their subgraphs through `subgraphs` (nullptr: interpreted).
  explicit NodeRunner(ops::SubgraphRunner* subgraphs = nullptr) : subgraphs_(subgraphs) {}
  void run(const Graph& g, int32_t index, std::vector<Tensor>& env,
           std::span<OpObserver* const> observers = {}, std::span<const Tensor> premade = {});
  // The shapes node `index`'s outputs would have, by its op's shape rule over its inputs in `env`
  // (throws what the rule throws); not for control flow. Valid until the runner's next call.
  const std::vector<Shape>& output_shapes(const Graph& g, int32_t index,
                                          const std::vector<Tensor>& env);

 private:
  void bind_inputs(const Node& n, const std::vector<Tensor>& env);  // in_ and its views
  void infer_output_shapes(const Node& n);                          // out_shapes_, from in_
  ops::SubgraphRunner* subgraphs_;
  std::vector<Tensor> in_, out_;
  std::vector<const Shape*> in_shapes_;
  std::vector<const Tensor*> in_values_;
  std::vector<DType> in_types_;
  std::vector<Shape> out_shapes_;
};

class Interpreter {
 public:
  // `g` must outlive the interpreter and have had infer_and_verify() run; so must `subgraphs`,
  // which runs control-flow ops' subgraphs (nullptr: they are interpreted).
  explicit Interpreter(const Graph& g, ops::SubgraphRunner* subgraphs = nullptr);
  // Inputs in graph-input order; returns outputs in graph-output order. Safe to call from
  // several threads at once when the subgraph runner is (or there is none).
  std::vector<Tensor> run(std::span<const Tensor> inputs,
                          std::span<OpObserver* const> observers = {}) const;
  // The values freed right after node `index` runs (their last use).
  const std::vector<ValueId>& released_after(int32_t index) const {
    return release_after_.at(index);
  }

 private:
  const Graph& g_;
  ops::SubgraphRunner* subgraphs_;
  std::vector<std::vector<ValueId>> release_after_;  // per node: values whose last use it is
};

}  // namespace sgraph
