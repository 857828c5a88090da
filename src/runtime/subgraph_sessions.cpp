// SubgraphSessions: a Session per control-flow subgraph (see subgraph_sessions.h).
#include "runtime/subgraph_sessions.h"

#include <chrono>
#include <utility>
#include <variant>

namespace sgraph {

std::vector<Tensor> SubgraphSessions::run(const Node& node, const Graph& g,
                                          std::span<const Tensor> inputs) {
  auto [it, fresh] = index_.try_emplace(&g, entries_.size());
  if (fresh) {
    std::string label = node.name + "/" + g.name;
    for (const auto& [name, value] : node.attrs)
      if (auto* sub = std::get_if<std::shared_ptr<const Graph>>(&value); sub && sub->get() == &g)
        label = node.name + "/" + name;
    entries_.push_back(Entry{std::move(label), std::make_unique<Session>(g, options_)});
  }
  Entry& e = entries_[it->second];
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> out;
  try {
    out = e.session->run(std::vector<Tensor>(inputs.begin(), inputs.end()));
  } catch (const Error& err) {  // the caller adds the If node; keep the branch's node
    throw Error("in subgraph '" + e.label + "': " + err.what());
  }
  ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
             .count();
  for (const OpTime& t : e.session->last_op_times())
    times_.push_back(OpTime{e.label + "/" + t.node, t.op, t.ns});
  return out;
}

void SubgraphSessions::wait_compiled() {
  for (Entry& e : entries_) e.session->wait_compiled();
}

bool SubgraphSessions::compiling() const {
  for (const Entry& e : entries_)
    if (e.session->compiling()) return true;
  return false;
}

std::vector<Report> SubgraphSessions::reports() const {
  std::vector<Report> out;
  for (const Entry& e : entries_) {
    out.push_back(e.session->report());
    out.back().graph = e.label;
  }
  return out;
}

}  // namespace sgraph
