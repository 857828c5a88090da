// sgraph/session.h — runs a graph.
//
// A Session owns a verified graph and runs it on inputs. Today it interprets every op; the
// profile-guided pipeline (warm-up, shape tracking, regions, JIT) plugs in behind this same API.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph {

struct SessionOptions {
  int warmup_runs = 3;     // interpreted, profiled runs before planning
  int min_region_ops = 2;  // smallest region worth compiling
  bool interpret_only = false;
};

struct OpTime {
  std::string node;
  OpKind op;
  int64_t ns;
};

class Session {
 public:
  // Runs infer_and_verify() on the graph; throws sgraph::Error if it is invalid.
  explicit Session(Graph graph, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Inputs in the order of graph().inputs; outputs in the order of graph().outputs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Inputs and outputs by name.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);

  const Graph& graph() const;
  const SessionOptions& options() const;
  // Per-op wall time of the most recent run, in execution order.
  const std::vector<OpTime>& last_op_times() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sgraph
