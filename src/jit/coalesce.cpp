// Merging adjacent dims of an output's loop nest (KernelBuilder::coalesce).
#include <algorithm>
#include <map>
#include <utility>

#include "jit/kernel_builder.h"
#include "ops/op.h"

namespace sgraph::jit {

// Merges adjacent dims of output `v` that every value feeding it either spans fully or
// broadcasts entirely, when only ops reading their operands at the output's broadcast index lie
// in between (elementwise ops, Expand: each lowering's `merge` says which operands it reads so):
// x[N,C,H,W] + b[C,1,1] loops over [N,C,H*W], so short rows still make long vector loops. Offsets
// are unchanged. A per-channel operand c[C] (BatchNormalization's) counts as [1,C,1,1]; an op
// needing its output's real index (a window, a row statistic, a transpose) stops the merging.
void KernelBuilder::coalesce(ValueId v) {
  coalesced_.clear();
  const Shape s = shape(v);
  std::vector<ValueId> cone, todo = {v};
  std::map<ValueId, Shape> channel;  // per-channel operands, as [1, C, 1...] of their node's rank
  std::vector<bool> seen(graph.values.size(), false);
  while (!todo.empty()) {
    const ValueId u = todo.back();
    todo.pop_back();
    if (u == kNoValue || seen[u]) continue;
    seen[u] = true;
    cone.push_back(u);
    if (producer_[u] < 0 || held(u)) continue;
    const Node& n = graph.nodes[producer_[u]];
    const ops::Lowering* lowering = ops::op_def(n.op).lowering;
    const auto channel_operand = [&](size_t i) {
      return lowering && lowering->per_channel && lowering->per_channel(n, i);
    };
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!channel_operand(i) || n.inputs[i] == kNoValue) continue;
      Shape cs(shape(n.outputs[0]).size(), 1);
      cs.at(1) = numel(shape(n.inputs[i]));
      const auto [at, fresh] = channel.emplace(n.inputs[i], cs);
      if (!fresh && at->second != cs) return;
    }
    if (lowering && (lowering->merge || lowering->generate)) {
      if (!lowering->merge) return;
      const std::optional<std::vector<ValueId>> read = lowering->merge(*this, n);
      if (!read) return;
      todo.insert(todo.end(), read->begin(), read->end());
      continue;
    }
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!channel_operand(i)) todo.push_back(n.inputs[i]);
  }
  // A per-channel operand computed in the region, or also read elementwise, is not merged.
  std::vector<std::pair<ValueId, Shape>> members;
  for (ValueId u : cone) members.emplace_back(u, shape(u));
  for (const auto& [u, cs] : channel) {
    if (producer_[u] >= 0 || seen[u]) return;
    members.emplace_back(u, cs);
  }
  // full[k][d]: cone value k (right-aligned to s) spans dim d; one-element values impose nothing.
  std::vector<std::vector<bool>> full;
  for (const auto& [u, su] : members) {
    if (numel(su) == 1) continue;
    if (su.size() > s.size()) return;
    std::vector<bool>& f = full.emplace_back(s.size(), false);
    for (size_t j = 0, lead = s.size() - su.size(); j < su.size(); ++j) {
      if (su[j] != 1 && su[j] != s[lead + j]) return;  // inconsistent: compute() will say so
      f[lead + j] = su[j] != 1;
    }
  }
  std::vector<std::vector<size_t>> groups;  // of adjacent dims, each a loop
  for (size_t d = 0; d < s.size(); ++d) {
    const auto fits = [&](const std::vector<size_t>& group) {
      const auto rep =
          std::find_if(group.begin(), group.end(), [&](size_t e) { return s[e] != 1; });
      if (s[d] == 1 || rep == group.end()) return true;
      return std::all_of(full.begin(), full.end(), [&](const auto& f) { return f[d] == f[*rep]; });
    };
    if (groups.empty() || !fits(groups.back()))
      groups.push_back({d});
    else
      groups.back().push_back(d);
  }
  if (groups.size() == s.size()) return;
  for (const auto& [u, su] : members) {
    if (numel(su) == 1) continue;
    const size_t lead = s.size() - su.size();
    Shape merged;
    for (const auto& group : groups) {
      int64_t size = 1;
      for (size_t d : group)
        if (d >= lead) size *= su[d - lead];
      merged.push_back(size);
    }
    coalesced_[u] = std::move(merged);
  }
}

}  // namespace sgraph::jit
