#include "runtime/op_profiler.h"

#include <algorithm>

namespace sgraph {

OpProfiler::OpProfiler(const Graph& g, int expected_runs)
    : profiles_(g.nodes.size()), times_(g.nodes.size()) {
  for (auto& t : times_) t.reserve(static_cast<size_t>(std::max(expected_runs, 1)));
}

void OpProfiler::check(int32_t node) const {
  SG_ASSERT(node >= 0 && static_cast<size_t>(node) < profiles_.size())
      << "node " << node << " out of range (" << profiles_.size() << " nodes)";
}

void OpProfiler::on_op(const OpEvent& e) {
  check(e.node_index);
  OpProfile& p = profiles_[e.node_index];

  std::vector<int64_t>& t = times_[e.node_index];
  t.insert(std::upper_bound(t.begin(), t.end(), e.elapsed_ns), e.elapsed_ns);
  const size_t n = t.size();
  p.runs = static_cast<int>(n);
  p.min_ns = t.front();
  p.median_ns = n % 2 ? t[n / 2] : t[n / 2 - 1] + (t[n / 2] - t[n / 2 - 1]) / 2;

  p.bytes_read = 0;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const Tensor& x = e.inputs[i];
    if (!x.defined()) continue;
    const bool seen = std::any_of(e.inputs.begin(), e.inputs.begin() + i, [&](const Tensor& y) {
      return y.defined() && y.raw_data() == x.raw_data() && y.nbytes() == x.nbytes();
    });
    if (!seen) p.bytes_read += static_cast<int64_t>(x.nbytes());
  }
  p.bytes_written = 0;
  p.allocations = 0;
  for (size_t k = 0; k < e.outputs.size(); ++k) {
    const Tensor& y = e.outputs[k];
    if (!y.defined()) continue;
    auto shares = [&](const Tensor& x) { return x.defined() && y.shares_buffer_with(x); };
    if (std::any_of(e.inputs.begin(), e.inputs.end(), shares) ||
        std::any_of(e.outputs.begin(), e.outputs.begin() + k, shares))
      continue;
    ++p.allocations;
    p.bytes_written += static_cast<int64_t>(y.nbytes());
  }
}

void OpProfiler::restore(std::vector<std::vector<int64_t>> samples,
                         const std::vector<OpProfile>& figures) {
  SG_CHECK(samples.size() == profiles_.size() && figures.size() == profiles_.size())
      << "a profile of " << samples.size() << " ops for a graph of " << profiles_.size();
  for (size_t i = 0; i < samples.size(); ++i) {
    std::vector<int64_t>& t = samples[i];
    std::sort(t.begin(), t.end());
    OpProfile p = figures[i];
    SG_CHECK(p.bytes_read >= 0 && p.bytes_written >= 0 && p.allocations >= 0)
        << "op " << i << ": a negative byte or allocation count";
    const size_t n = t.size();
    p.runs = static_cast<int>(n);
    p.min_ns = n ? t.front() : 0;
    p.median_ns = n == 0 ? 0 : n % 2 ? t[n / 2] : t[n / 2 - 1] + (t[n / 2] - t[n / 2 - 1]) / 2;
    profiles_[i] = p;
  }
  times_ = std::move(samples);
  saved_.reset();
}

}  // namespace sgraph
