// SubgraphSessions: how a Session serves the subgraphs of control-flow ops (If's branches). Each
// subgraph gets a Session of its own on first use, with the parent's options, so a branch is
// warmed up, profiled, planned and compiled like a top-level graph: its stable ops run in
// kernels whatever the parent's ops around the If do, and a branch never taken costs nothing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ops/op.h"
#include "sgraph/session.h"

namespace sgraph {

// Op times across nested Sessions. A Session's call collects, in a SubgraphTimes of its own, the
// times of the subgraph calls it makes (a subgraph runs on its parent's thread): the call opens a
// SubgraphTimesScope, and SubgraphSessions adds each subgraph call's op times to the scope open on
// its thread. A call made inside another's scope hands its op times to its thread when it returns
// (hand_op_times), where the SubgraphSessions that made it takes them.
struct SubgraphTimes {
  std::vector<OpTime> times;  // interpreted ops of subgraphs, named "<label>/<node>"
  int64_t ns = 0;             // the wall time the subgraphs took
};

class SubgraphTimesScope {
 public:
  explicit SubgraphTimesScope(SubgraphTimes* sink);
  ~SubgraphTimesScope();
  SubgraphTimesScope(const SubgraphTimesScope&) = delete;
  SubgraphTimesScope& operator=(const SubgraphTimesScope&) = delete;
  // The scope this one replaced: non-null when the call is a subgraph's.
  SubgraphTimes* outer() const { return outer_; }
  // The sink of the innermost scope open on this thread (null: none).
  static SubgraphTimes* current();

 private:
  SubgraphTimes* outer_;
};

// A subgraph Session's call hands its op times to its thread; SubgraphSessions takes them.
void hand_op_times(const std::vector<OpTime>& times);
std::vector<OpTime> take_handed_op_times();

// Thread-safe: calls on several threads may run subgraphs at once (a subgraph's Session is
// made once, under a lock, and is itself safe to share).
class SubgraphSessions final : public ops::SubgraphRunner {
 public:
  // `records`: warm-up records of subgraphs by label ("<node>/<attribute>", nested ones
  // "<node>/<attribute>/<node>/<attribute>"), as a planned model's metadata holds them under
  // "<kWarmupRecordKey>:<label>": a subgraph's Session is made with its own (and those nested in
  // it), so it plans at once too.
  // `parent`: the graph whose nodes' subgraphs these are (null: none known). An outer value a
  // branch reads that is a constant of `parent` becomes a constant of the branch's Session (the
  // same data), no longer one of its inputs: the branch's kernels then see their weights as
  // constants, as the parent's do (packed once, folded into the code). silero_vad_legacy's convs
  // all sit in If branches.
  explicit SubgraphSessions(SessionOptions options, std::map<std::string, std::string> records = {},
                            const Graph* parent = nullptr)
      : options_(std::move(options)), records_(std::move(records)), parent_(parent) {
    options_.op_times = false;  // (a branch's call collects them when its parent's call does)
  }

  std::vector<Tensor> run(const Node& node, const Graph& g,
                          std::span<const Tensor> inputs) override;

  // Session::wait_compiled() and Session::compiling() over every subgraph's Session.
  void wait_compiled();
  bool compiling() const;
  // One report per subgraph run so far, in first-use order, labelled "<node>/<attribute>".
  std::vector<Report> reports() const;
  // The warm-up records of the subgraphs' Sessions that have planned, nested ones included, by
  // label (see the constructor), each naming the subgraph's nodes and values by their own names
  // (a subgraph whose names are not unique and non-empty has none).
  std::map<std::string, std::string> warmup_records() const;

 private:
  struct Entry {
    std::string label;
    std::unique_ptr<Session> session;
    std::vector<size_t> passed;  // the branch inputs its Session takes (the others: constants)
  };
  // The entries made so far (they are never removed: a pointer to one stays valid).
  std::vector<Entry*> entries() const;
  SessionOptions options_;
  std::map<std::string, std::string> records_;
  const Graph* parent_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;  // in first-use order
  std::map<const Graph*, Entry*> index_;         // subgraph -> its entry
};

}  // namespace sgraph
