// SubgraphSessions: a Session per control-flow subgraph (see subgraph_sessions.h).
#include "runtime/subgraph_sessions.h"

#include <chrono>
#include <set>
#include <utility>
#include <variant>

namespace sgraph {

namespace {
thread_local SubgraphTimes* current_sink = nullptr;
thread_local std::vector<OpTime> handed;
}  // namespace

SubgraphTimesScope::SubgraphTimesScope(SubgraphTimes* sink) : outer_(current_sink) {
  current_sink = sink;
}
SubgraphTimesScope::~SubgraphTimesScope() { current_sink = outer_; }
SubgraphTimes* SubgraphTimesScope::current() { return current_sink; }

void hand_op_times(const std::vector<OpTime>& times) { handed = times; }
std::vector<OpTime> take_handed_op_times() { return std::exchange(handed, {}); }

std::vector<Tensor> SubgraphSessions::run(const Node& node, const Graph& g,
                                          std::span<const Tensor> inputs) {
  Entry* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, fresh] = index_.try_emplace(&g, nullptr);
    if (fresh) {
      std::string label = node.name + "/" + g.name;
      for (const auto& [name, value] : node.attrs)
        if (auto* sub = std::get_if<std::shared_ptr<const Graph>>(&value); sub && sub->get() == &g)
          label = node.name + "/" + name;
      try {
        Graph sub = g;
        // If passes the outer values as inputs 1.. in the order of the branch's inputs.
        std::vector<size_t> passed;
        std::vector<ValueId> kept;  // the branch's inputs its Session takes
        for (size_t i = 0; i < sub.inputs.size(); ++i) {
          const ValueId outer = i + 1 < node.inputs.size() ? node.inputs[i + 1] : kNoValue;
          const Tensor* constant = parent_ != nullptr && node.op == OpKind::If && outer != kNoValue
                                       ? &parent_->values.at(static_cast<size_t>(outer)).initializer
                                       : nullptr;
          if (constant != nullptr && constant->defined()) {
            ValueInfo& v = sub.values[static_cast<size_t>(sub.inputs[i])];
            v.initializer = *constant;
            v.shape = to_dims(constant->shape());
          } else {
            passed.push_back(i);
            kept.push_back(sub.inputs[i]);
          }
        }
        sub.inputs = std::move(kept);
        for (const auto& [key, text] : records_) {
          if (key == label) sub.metadata[kWarmupRecordKey] = text;
          if (key.size() > label.size() + 1 && key.compare(0, label.size(), label) == 0 &&
              key[label.size()] == '/')
            sub.metadata[std::string(kWarmupRecordKey) + ":" + key.substr(label.size() + 1)] = text;
        }
        entries_.push_back(std::make_unique<Entry>(
            Entry{std::move(label), std::make_unique<Session>(std::move(sub), options_), passed}));
      } catch (...) {
        index_.erase(it);
        throw;
      }
      it->second = entries_.back().get();
    }
    e = it->second;
  }
  SubgraphTimes* const sink = SubgraphTimesScope::current();  // (a call collecting op times)
  const auto t0 = sink ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  std::vector<Tensor> out;
  if (sink) take_handed_op_times();  // (none should be pending)
  try {
    std::vector<Tensor> in;
    in.reserve(e->passed.size());
    for (size_t i : e->passed) in.push_back(inputs[i]);
    out = e->session->run(std::move(in));
  } catch (const Error& err) {  // the caller adds the If node; keep the branch's node
    throw Error("in subgraph '" + e->label + "': " + err.what());
  }
  if (sink) {
    std::vector<OpTime> times = take_handed_op_times();
    sink->ns +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    for (OpTime& t : times) sink->times.push_back(OpTime{e->label + "/" + t.node, t.op, t.ns});
  }
  return out;
}

std::vector<SubgraphSessions::Entry*> SubgraphSessions::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Entry*> out;
  for (const auto& e : entries_) out.push_back(e.get());
  return out;
}

void SubgraphSessions::wait_compiled() {
  for (Entry* e : entries()) e->session->wait_compiled();
}

bool SubgraphSessions::compiling() const {
  for (const Entry* e : entries())
    if (e->session->compiling()) return true;
  return false;
}

std::map<std::string, std::string> SubgraphSessions::warmup_records() const {
  std::map<std::string, std::string> out;
  for (const Entry* e : entries()) {
    const Session& s = *e->session;
    // (A branch the warm-up took fewer times than it has warm-up runs gives the runs it saw.)
    if (!s.planned() && s.report().warmup_runs == 0) continue;
    const Graph& g = s.graph();
    std::vector<std::string> nodes, values;
    std::set<std::string> node_set, value_set;
    for (const Node& n : g.nodes) {
      nodes.push_back(n.name);
      node_set.insert(n.name);
    }
    for (const ValueInfo& v : g.values) {
      values.push_back(v.name);
      value_set.insert(v.name);
    }
    if (node_set.size() != nodes.size() || value_set.size() != values.size() ||
        node_set.count("") || value_set.count(""))
      continue;
    out[e->label] = s.warmup_record(nodes, values);
    for (auto& [label, text] : s.subgraph_warmup_records()) out[e->label + "/" + label] = text;
  }
  return out;
}

std::vector<Report> SubgraphSessions::reports() const {
  std::vector<Report> out;
  for (const Entry* e : entries()) {
    out.push_back(e->session->report());
    out.back().graph = e->label;
  }
  return out;
}

}  // namespace sgraph
