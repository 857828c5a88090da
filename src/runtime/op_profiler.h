// OpProfiler: per-op cost over the warm-up runs — wall time (median and min), bytes read and
// written, and buffer allocations. Region resources (threads per region) and the report use it.
//
//   OpProfiler prof(g);
//   OpObserver* obs[] = {&shapes, &prof};
//   for (auto& feed : warmup) interp.run(feed, obs);
//   prof.profile(i).median_ns;
//
// Each observation of an op is one sample (one per run for the graph's nodes). The byte and
// allocation figures are those of the latest sample (they only vary for ops whose shapes change).
// begin_run()/abort_run() (optional) undo a run that failed: its samples are dropped.
// Not thread-safe: observe one run at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/interpreter.h"

namespace sgraph {

struct OpProfile {
  int64_t median_ns = 0, min_ns = 0;  // over the samples; median of an even count: mean of the two
  int64_t bytes_read = 0;             // distinct input tensors (one buffer read twice counts once)
  int64_t bytes_written = 0;          // freshly allocated outputs (a view writes nothing)
  int allocations = 0;                // outputs with a buffer of their own (not a view of an input)
  int runs = 0;                       // samples recorded
};

class OpProfiler final : public OpObserver {
 public:
  // Reserves room for `expected_runs` samples per op, so warm-up does not allocate.
  explicit OpProfiler(const Graph& g, int expected_runs = 3);

  void on_op(const OpEvent& e) override;
  void begin_run() { saved_.emplace(profiles_, times_); }
  void end_run() { saved_.reset(); }
  void abort_run() {
    if (!saved_) return;
    profiles_ = std::move(saved_->first);
    times_ = std::move(saved_->second);
    saved_.reset();
  }

  const OpProfile& profile(int32_t node) const {
    check(node);
    return profiles_[node];
  }
  size_t size() const { return profiles_.size(); }

  // Every op's samples (sorted), to save a warm-up with its model; restore() recomputes the
  // profiles from them and keeps the byte and allocation figures given (sgraph::Error when the
  // sizes do not fit the graph).
  const std::vector<std::vector<int64_t>>& samples() const { return times_; }
  void restore(std::vector<std::vector<int64_t>> samples, const std::vector<OpProfile>& figures);

 private:
  void check(int32_t node) const;
  std::vector<OpProfile> profiles_;          // per node
  std::vector<std::vector<int64_t>> times_;  // per node, sorted
  std::optional<std::pair<std::vector<OpProfile>, std::vector<std::vector<int64_t>>>> saved_;
};

}  // namespace sgraph
