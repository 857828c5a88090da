// SubgraphSessions: how a Session serves the subgraphs of control-flow ops (If's branches). Each
// subgraph gets a Session of its own on first use, with the parent's options, so a branch is
// warmed up, profiled, planned and compiled like a top-level graph: its stable ops run in
// kernels whatever the parent's ops around the If do, and a branch never taken costs nothing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ops/op.h"
#include "sgraph/session.h"

namespace sgraph {

class SubgraphSessions final : public ops::SubgraphRunner {
 public:
  explicit SubgraphSessions(SessionOptions options) : options_(options) {}

  std::vector<Tensor> run(const Node& node, const Graph& g,
                          std::span<const Tensor> inputs) override;

  // Session::wait_compiled() and Session::compiling() over every subgraph's Session.
  void wait_compiled();
  bool compiling() const;
  // One report per subgraph run so far, in first-use order, labelled "<node>/<attribute>".
  std::vector<Report> reports() const;
  // For the parent's per-op times: the interpreted ops run inside subgraphs since the last call
  // (named "<label>/<node>"), and the wall time the subgraphs took.
  std::vector<OpTime> take_times() { return std::exchange(times_, {}); }
  int64_t take_ns() { return std::exchange(ns_, 0); }

 private:
  struct Entry {
    std::string label;
    std::unique_ptr<Session> session;
  };
  SessionOptions options_;
  std::vector<Entry> entries_;            // in first-use order
  std::map<const Graph*, size_t> index_;  // subgraph -> its entry
  std::vector<OpTime> times_;
  int64_t ns_ = 0;
};

}  // namespace sgraph
