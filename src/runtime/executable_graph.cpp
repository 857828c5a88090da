#include "runtime/executable_graph.h"

#include <queue>

namespace sgraph {

ExecutableGraph::ExecutableGraph(const Graph& g, std::vector<RegionPlan> regions)
    : g_(g), regions_(std::move(regions)) {
  // Contract each region to one step, then order the steps topologically (Kahn's algorithm,
  // smallest original node index first, so a graph without regions keeps its node order).
  const size_t n = g.nodes.size();
  std::vector<int32_t> step_of(n, -1);
  std::vector<int32_t> first_node;  // per step: its smallest node index, the tie-break key
  for (size_t r = 0; r < regions_.size(); ++r) {
    for (int32_t node : regions_[r].region.nodes) step_of[node] = static_cast<int32_t>(r);
    first_node.push_back(regions_[r].region.nodes.front());
  }
  std::vector<Step> all(regions_.size());
  for (size_t r = 0; r < regions_.size(); ++r) all[r].region = static_cast<int32_t>(r);
  for (size_t i = 0; i < n; ++i) {
    if (step_of[i] >= 0) continue;
    step_of[i] = static_cast<int32_t>(all.size());
    all.push_back(Step{static_cast<int32_t>(i), -1});
    first_node.push_back(static_cast<int32_t>(i));
  }
  std::vector<std::vector<int32_t>> succ(all.size());
  std::vector<int> indegree(all.size(), 0);
  for (size_t i = 0; i < n; ++i)
    for (ValueId v : g.nodes[i].inputs) {
      if (v == kNoValue || g.values[v].producer < 0) continue;
      const int32_t from = step_of[g.values[v].producer], to = step_of[i];
      if (from == to) continue;
      succ[from].push_back(to);
      ++indegree[to];
    }
  using Item = std::pair<int32_t, int32_t>;  // (first node, step)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (size_t s = 0; s < all.size(); ++s)
    if (indegree[s] == 0) ready.emplace(first_node[s], static_cast<int32_t>(s));
  while (!ready.empty()) {
    const int32_t s = ready.top().second;
    ready.pop();
    steps_.push_back(all[s]);
    for (int32_t t : succ[s])
      if (--indegree[t] == 0) ready.emplace(first_node[t], t);
  }
  SG_ASSERT(steps_.size() == all.size()) << "the regions leave a cycle in the step graph";

  // Release each value after the last step that reads it (graph outputs and constants stay).
  std::vector<int32_t> last_use(g.values.size(), -1);
  auto reads = [&](const Step& st, auto&& f) {
    if (st.node >= 0) {
      for (ValueId v : g.nodes[st.node].inputs) f(v);
    } else {
      for (ValueId v : regions_[st.region].region.inputs) f(v);
    }
  };
  for (size_t s = 0; s < steps_.size(); ++s)
    reads(steps_[s], [&](ValueId v) {
      if (v != kNoValue) last_use[v] = static_cast<int32_t>(s);
    });
  std::vector<bool> keep(g.values.size(), false);
  for (ValueId v : g.outputs) keep[v] = true;
  release_after_.resize(steps_.size());
  for (size_t v = 0; v < g.values.size(); ++v)
    if (!keep[v] && !g.values[v].initializer.defined() && last_use[v] >= 0)
      release_after_[last_use[v]].push_back(static_cast<ValueId>(v));
  // A region that falls back leaves its internal values behind: release them right after it.
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (steps_[s].region < 0) continue;
    const Region& r = regions_[steps_[s].region].region;
    for (int32_t node : r.nodes)
      for (ValueId v : g.nodes[node].outputs)
        if (!keep[v] && last_use[v] < 0) release_after_[s].push_back(v);
  }
}

bool ExecutableGraph::guard_holds(const RegionPlan& r, const std::vector<Tensor>& env) const {
  for (size_t i = 0; i < r.region.inputs.size(); ++i)
    if (env[r.region.inputs[i]].shape() != r.input_shapes[i]) return false;
  return true;
}

void ExecutableGraph::call_kernel(RegionPlan& r, std::vector<Tensor>& env) const {
  std::vector<void*> buffers;
  buffers.reserve(r.region.inputs.size() + r.region.outputs.size());
  for (ValueId v : r.region.inputs) buffers.push_back(env[v].raw_data());
  r.last_outputs.resize(r.region.outputs.size());
  for (size_t k = 0; k < r.region.outputs.size(); ++k) {
    Tensor& t = r.last_outputs[k];
    if (!t.sole_owner()) t = Tensor(r.output_dtypes[k], r.output_shapes[k]);
    buffers.push_back(t.raw_data());
  }
  r.fn(buffers.data(), nullptr, nullptr);
  for (size_t k = 0; k < r.region.outputs.size(); ++k) env[r.region.outputs[k]] = r.last_outputs[k];
  ++r.kernel_calls;
}

std::vector<Tensor> ExecutableGraph::run(std::span<const Tensor> inputs,
                                         std::span<OpObserver* const> observers) {
  std::vector<Tensor> env = bind_inputs(g_, inputs);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& st = steps_[s];
    if (st.node >= 0) {
      runner_.run(g_, st.node, env, observers);
    } else {
      RegionPlan& r = regions_[st.region];
      if (r.fn != nullptr && guard_holds(r, env)) {
        call_kernel(r, env);
      } else {
        if (r.fn != nullptr) {
          ++r.guard_misses;
          ++r.misses_since_plan;
        }
        for (int32_t node : r.region.nodes) runner_.run(g_, node, env, observers);
      }
    }
    for (ValueId v : release_after_[s]) env[v] = Tensor{};
  }
  std::vector<Tensor> result;
  for (ValueId v : g_.outputs) result.push_back(env[v]);
  return result;
}

}  // namespace sgraph
