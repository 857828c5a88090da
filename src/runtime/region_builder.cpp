// The region builder: greedy edge contraction on a graph of clusters (see region_builder.h).
//
// Every node starts as its own cluster; the cluster graph has an edge wherever a data edge joins
// two clusters, and stays acyclic. Merging adjacent clusters a and b is legal iff no path leads
// from one to the other through a third cluster (the direct edges do not count). The check is a
// search bounded by a topological order of the clusters, which each merge repairs locally (Pearce
// & Kelly's dynamic topological order, the scheme behind XLA's GraphCycles): with rank(a) <
// rank(b), only clusters ranked between them can lie on such a path. A rejected pair stays
// rejected while both clusters are unchanged, since merging other clusters only adds paths; merged
// clusters get fresh ids, so rejections are remembered by id pair and never retried.
//
// Cost: a merge attempt visits the clusters ranked between the pair that one of them reaches (a
// handful when edges are local, as in real models; all V at worst) and their edges. A sweep over
// the E data edges makes at most one attempt per new pair of clusters, so a sweep is O(E) attempts
// and O(E * (V + E)) at worst; sweeps repeat until one merges nothing (in millions of random DAGs
// the second sweep never merged anything, but only the repetition guarantees the fixpoint).
// Measured: 5000 nodes with local edges ~5 ms; 5000-node random DAGs with long edges ~50 ms.
#include "runtime/region_builder.h"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <unordered_set>
#include <utility>

#include "ops/op.h"

namespace sgraph {
namespace {

using Adjacency = std::vector<std::vector<int32_t>>;  // sorted, deduplicated successor lists

// Producer -> consumer data edges between nodes.
Adjacency data_edges(const Graph& g) {
  const int32_t n = static_cast<int32_t>(g.nodes.size());
  Adjacency succ(n);
  for (int32_t j = 0; j < n; ++j) {
    for (ValueId v : g.nodes[j].inputs) {
      if (v == kNoValue) continue;
      SG_CHECK(v >= 0 && v < static_cast<ValueId>(g.values.size()))
          << "node " << j << " reads value " << v << ", which does not exist";
      const int32_t p = g.values[v].producer;
      if (p >= 0 && p != j) succ[p].push_back(j);
    }
  }
  for (auto& s : succ) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  return succ;
}

// Removes a and b from the sorted list `ids` and appends m (the newest, hence largest, id).
void replace_pair(std::vector<int32_t>& ids, int32_t a, int32_t b, int32_t m) {
  std::erase_if(ids, [&](int32_t x) { return x == a || x == b; });
  ids.push_back(m);
}

class Clusters {
 public:
  // group_of[node] in [0, num_groups) gives the initial clusters, which must contract to a DAG;
  // only clusters of the same tier >= 0 merge (tier -1: none).
  // accept(a_nodes, b_nodes), when given, must also agree to a merge (it then sees members).
  using Accept = std::function<bool(const std::vector<int32_t>&, const std::vector<int32_t>&)>;
  Clusters(const Adjacency& node_succ, std::vector<int32_t> group_of, int32_t num_groups,
           const std::vector<int8_t>& tier, Accept accept = nullptr)
      : node_succ_(node_succ),
        group_of_(std::move(group_of)),
        c_(num_groups),
        accept_(std::move(accept)) {
    parent_.resize(num_groups);
    std::iota(parent_.begin(), parent_.end(), 0);
    for (int32_t g = 0; g < num_groups; ++g) c_[g].tier = tier[g];
    for (size_t i = 0; i < node_succ.size(); ++i) {
      const int32_t a = group_of_[i];
      ++c_[a].size;
      if (accept_) c_[a].nodes.push_back(static_cast<int32_t>(i));
      for (int32_t j : node_succ[i]) {
        const int32_t b = group_of_[j];
        if (a == b) continue;
        c_[a].succ.push_back(b);
        c_[b].pred.push_back(a);
      }
    }
    for (Cluster& c : c_) {
      for (auto* ids : {&c.succ, &c.pred}) {
        std::sort(ids->begin(), ids->end());
        ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
      }
    }
    rank_initial();
  }

  // Sweeps the data edges in topological order, merging the clusters at both ends where legal,
  // until a sweep merges nothing.
  void merge_to_fixpoint() {
    for (bool merged = true; merged;) {
      merged = false;
      for (size_t i = 0; i < node_succ_.size(); ++i) {
        for (int32_t j : node_succ_[i]) {
          const int32_t a = cluster_of(static_cast<int32_t>(i)), b = cluster_of(j);
          if (a == b || c_[a].tier < 0 || c_[a].tier != c_[b].tier) continue;
          const uint64_t key = (uint64_t(std::min(a, b)) << 32) | uint32_t(std::max(a, b));
          if (rejected_.contains(key)) continue;
          if (try_merge(a, b))
            merged = true;
          else
            rejected_.insert(key);
        }
      }
    }
  }

  int32_t cluster_of(int32_t node) { return find(group_of_[node]); }
  int32_t size(int32_t cluster) const { return c_[cluster].size; }

 private:
  struct Cluster {
    std::vector<int32_t> succ, pred;  // sorted ids of live clusters
    int32_t rank = 0;                 // position in a topological order of the live clusters
    int32_t size = 0;                 // member nodes
    int8_t tier = -1;
    std::vector<int32_t> nodes;  // sorted members (kept only for accept_)
  };

  int32_t find(int32_t c) {
    while (parent_[c] != c) c = parent_[c] = parent_[parent_[c]];
    return c;
  }

  // Kahn's algorithm over the initial clusters.
  void rank_initial() {
    const int32_t n = static_cast<int32_t>(c_.size());
    std::vector<int32_t> indegree(n), ready;
    for (int32_t c = 0; c < n; ++c) {
      indegree[c] = static_cast<int32_t>(c_[c].pred.size());
      if (indegree[c] == 0) ready.push_back(c);
    }
    int32_t next = 0;
    for (size_t k = 0; k < ready.size(); ++k) {
      c_[ready[k]].rank = next++;
      for (int32_t s : c_[ready[k]].succ)
        if (--indegree[s] == 0) ready.push_back(s);
    }
    SG_CHECK(next == n) << "build_regions: the graph has a cycle";
  }

  // The clusters reachable from `from` along `dir` (succ or pred) whose rank lies strictly
  // between lo and hi, not counting the direct edge to `target`. Returns false if `target` is
  // reachable some other way.
  bool search(int32_t from, int32_t target, std::vector<int32_t> Cluster::*dir, int32_t lo,
              int32_t hi, std::vector<int32_t>& found) {
    ++epoch_;
    mark_.resize(c_.size(), 0);
    found.clear();
    stack_.assign(1, from);
    while (!stack_.empty()) {
      const int32_t x = stack_.back();
      stack_.pop_back();
      for (int32_t y : c_[x].*dir) {
        if (y == target) {
          if (x != from) return false;
          continue;
        }
        if (c_[y].rank <= lo || c_[y].rank >= hi || mark_[y] == epoch_) continue;
        mark_[y] = epoch_;
        found.push_back(y);
        stack_.push_back(y);
      }
    }
    return true;
  }

  // Merges clusters a and b into a fresh cluster unless that would create a cycle.
  bool try_merge(int32_t a, int32_t b) {
    if (c_[a].rank > c_[b].rank) std::swap(a, b);  // now the edge between them is a -> b
    const int32_t ra = c_[a].rank, rb = c_[b].rank;
    // Descendants of a ranked below b; b among them (other than directly) means a cycle.
    if (!search(a, b, &Cluster::succ, ra, rb, forward_)) return false;
    if (accept_ && !accept_(c_[a].nodes, c_[b].nodes)) return false;
    // Ancestors of b ranked above a (disjoint from forward_, or b would be reachable).
    const bool apart = search(b, a, &Cluster::pred, ra, rb, backward_);
    SG_ASSERT(apart) << "region builder: inconsistent reachability";

    const int32_t m = static_cast<int32_t>(c_.size());
    c_.emplace_back();
    parent_.push_back(m);
    parent_[a] = parent_[b] = m;
    Cluster &ca = c_[a], &cb = c_[b], &cm = c_[m];
    for (auto dir : {&Cluster::succ, &Cluster::pred}) {
      std::set_union((ca.*dir).begin(), (ca.*dir).end(), (cb.*dir).begin(), (cb.*dir).end(),
                     std::back_inserter(cm.*dir));
      std::erase_if(cm.*dir, [&](int32_t x) { return x == a || x == b; });
    }
    for (int32_t s : cm.succ) replace_pair(c_[s].pred, a, b, m);
    for (int32_t p : cm.pred) replace_pair(c_[p].succ, a, b, m);
    cm.size = ca.size + cb.size;
    cm.tier = ca.tier;
    std::merge(ca.nodes.begin(), ca.nodes.end(), cb.nodes.begin(), cb.nodes.end(),
               std::back_inserter(cm.nodes));
    ca = Cluster{};
    cb = Cluster{};

    // Repair the order over the affected clusters, reusing their ranks: b's ancestors first,
    // then the merged cluster, then a's descendants, each group in its old relative order.
    std::vector<int32_t> pool{ra, rb};
    for (int32_t x : backward_) pool.push_back(c_[x].rank);
    for (int32_t x : forward_) pool.push_back(c_[x].rank);
    std::sort(pool.begin(), pool.end());
    const auto by_rank = [&](int32_t x, int32_t y) { return c_[x].rank < c_[y].rank; };
    std::sort(backward_.begin(), backward_.end(), by_rank);
    std::sort(forward_.begin(), forward_.end(), by_rank);
    size_t k = 0;
    for (int32_t x : backward_) c_[x].rank = pool[k++];
    cm.rank = pool[k++];
    for (int32_t x : forward_) c_[x].rank = pool[k++];
    return true;
  }

  const Adjacency& node_succ_;
  std::vector<int32_t> group_of_;  // node -> initial cluster
  std::vector<Cluster> c_;         // merged clusters stay behind, empty
  std::vector<int32_t> parent_;    // union-find: a merged cluster points at its successor
  Accept accept_;
  std::unordered_set<uint64_t> rejected_;
  std::vector<uint32_t> mark_;
  uint32_t epoch_ = 0;
  std::vector<int32_t> stack_, forward_, backward_;
};

NoRegionReason ineligibility(const Graph& g, int32_t i, bool stable, const RegionOptions& o) {
  const Node& node = g.nodes[i];
  if (!stable && !o.dynamic) return NoRegionReason::changed;
  if (node.op == OpKind::If) return stable ? NoRegionReason::in_subgraph : NoRegionReason::changed;
  if (!(o.compilable ? o.compilable(g, i) : ops::is_compilable(node.op)))
    return stable ? NoRegionReason::not_compilable : NoRegionReason::changed;
  if (!stable && !o.dynamic(g, i)) return NoRegionReason::changed;
  return NoRegionReason::none;
}

}  // namespace

std::string_view reason_str(NoRegionReason reason) {
  switch (reason) {
    case NoRegionReason::none:
      return "";
    case NoRegionReason::changed:
      return "changed";
    case NoRegionReason::not_compilable:
      return "not compilable";
    case NoRegionReason::would_form_cycle:
      return "would form a cycle";
    case NoRegionReason::alone:
      return "alone";
    case NoRegionReason::in_subgraph:
      return "control flow or subgraph";
  }
  return "?";
}

Partition build_regions(const Graph& g, const std::vector<bool>& stable,
                        const RegionOptions& options) {
  const int32_t n = static_cast<int32_t>(g.nodes.size());
  SG_CHECK(stable.size() == g.nodes.size())
      << "build_regions: " << stable.size() << " stability flags for " << n << " nodes";
  const int32_t min_ops = std::max(1, options.min_region_ops);
  Partition p;
  p.region_of.assign(n, -1);
  p.reason.resize(n);
  std::vector<bool> eligible(n);
  std::vector<int8_t> tier(n, -1);  // 0: stable (static region), 1: changed (dynamic region)
  for (int32_t i = 0; i < n; ++i) {
    p.reason[i] = ineligibility(g, i, stable[i], options);
    eligible[i] = p.reason[i] == NoRegionReason::none;
    if (eligible[i]) tier[i] = stable[i] ? 0 : 1;
  }
  const Adjacency succ = data_edges(g);

  // Phase 1: every node its own cluster; merge eligible ones.
  std::vector<int32_t> identity(n);
  std::iota(identity.begin(), identity.end(), 0);
  Clusters first(succ, identity, n, tier);
  first.merge_to_fixpoint();
  std::vector<int32_t> cluster(n), size(n);
  bool dropped_several = false;  // a dropped cluster of 2+ nodes may have kept regions apart
  for (int32_t i = 0; i < n; ++i) {
    cluster[i] = first.cluster_of(i);
    size[i] = first.size(cluster[i]);
    dropped_several |= eligible[i] && size[i] > 1 && size[i] < min_ops;
  }
  // Clusters next to another eligible cluster: the merge was rejected (a cycle). The others hold
  // every eligible node connected to them.
  std::vector<bool> blocked(2 * n);  // cluster ids < 2n
  for (int32_t u = 0; u < n; ++u)
    for (int32_t v : succ[u])
      if (eligible[u] && eligible[v] && tier[u] == tier[v] && cluster[u] != cluster[v])
        blocked[cluster[u]] = blocked[cluster[v]] = true;
  const std::vector<int32_t> first_cluster = cluster;

  // Phase 2: the big clusters stay contracted, the dropped ones fall apart into single nodes, and
  // big clusters that now can merge do.
  if (dropped_several) {
    std::vector<int32_t> group_of(n, -1), group_of_cluster(2 * n, -1);  // ids < 2n
    std::vector<int8_t> big;  // per group: its tier if big, else -1
    for (int32_t i = 0; i < n; ++i) {
      if (eligible[i] && size[i] >= min_ops) {
        int32_t& gid = group_of_cluster[cluster[i]];
        if (gid < 0) {
          gid = static_cast<int32_t>(big.size());
          big.push_back(tier[i]);
        }
        group_of[i] = gid;
      } else {
        group_of[i] = static_cast<int32_t>(big.size());
        big.push_back(-1);
      }
    }
    Clusters second(succ, group_of, static_cast<int32_t>(big.size()), big);
    second.merge_to_fixpoint();
    for (int32_t i = 0; i < n; ++i) {
      cluster[i] = second.cluster_of(i);
      size[i] = second.size(cluster[i]);
    }
  }

  // Phase 3 (merging tiers): the regions of both tiers as clusters of one tier; a merge that
  // mixes stable and changed nodes needs options.merge_tiers' consent.
  if (options.merge_tiers) {
    std::vector<int32_t> group_of(n, -1), group_of_cluster(2 * n, -1);  // ids < 2n
    std::vector<int8_t> groups;
    for (int32_t i = 0; i < n; ++i) {
      if (eligible[i] && size[i] >= min_ops) {
        int32_t& gid = group_of_cluster[cluster[i]];
        if (gid < 0) {
          gid = static_cast<int32_t>(groups.size());
          groups.push_back(0);
        }
        group_of[i] = gid;
      } else {
        group_of[i] = static_cast<int32_t>(groups.size());
        groups.push_back(-1);
      }
    }
    const auto accept = [&](const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
      const auto changed = [&](int32_t i) { return !stable[i]; };
      const bool ca = std::any_of(a.begin(), a.end(), changed);
      const bool cb = std::any_of(b.begin(), b.end(), changed);
      const bool sa = !std::all_of(a.begin(), a.end(), changed);
      const bool sb = !std::all_of(b.begin(), b.end(), changed);
      if (!((ca || cb) && (sa || sb))) return true;  // one tier: legal as in phases 1 and 2
      std::vector<int32_t> both;
      std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
      return options.merge_tiers(g, both);
    };
    Clusters third(succ, group_of, static_cast<int32_t>(groups.size()), groups, accept);
    third.merge_to_fixpoint();
    for (int32_t i = 0; i < n; ++i) {
      cluster[i] = third.cluster_of(i);
      if (eligible[i] && size[i] >= min_ops) size[i] = third.size(cluster[i]);
    }
  }

  // Regions in order of their first node; reasons for the eligible nodes left out.
  std::vector<int32_t> region_of_cluster(2 * n, -1);  // cluster ids < 2n
  for (int32_t i = 0; i < n; ++i) {
    if (!eligible[i]) continue;
    if (size[i] < min_ops) {
      p.reason[i] =
          blocked[first_cluster[i]] ? NoRegionReason::would_form_cycle : NoRegionReason::alone;
      continue;
    }
    int32_t& r = region_of_cluster[cluster[i]];
    if (r < 0) {
      r = static_cast<int32_t>(p.regions.size());
      p.regions.emplace_back();
    }
    p.region_of[i] = r;
    p.regions[r].nodes.push_back(i);
    p.regions[r].dynamic |= !stable[i];
  }

  // Boundary values.
  for (int32_t j = 0; j < n; ++j) {
    const int32_t rj = p.region_of[j];
    for (ValueId v : g.nodes[j].inputs) {
      if (v == kNoValue) continue;
      const int32_t producer = g.values[v].producer;
      const int32_t rp = producer >= 0 ? p.region_of[producer] : -1;
      if (rj >= 0 && rp != rj) p.regions[rj].inputs.push_back(v);
      if (rp >= 0 && rp != rj) p.regions[rp].outputs.push_back(v);
    }
  }
  for (ValueId v : g.outputs) {
    const int32_t producer = g.values.at(v).producer;
    if (producer >= 0 && p.region_of[producer] >= 0)
      p.regions[p.region_of[producer]].outputs.push_back(v);
  }
  for (Region& r : p.regions) {
    for (auto* ids : {&r.inputs, &r.outputs}) {
      std::sort(ids->begin(), ids->end());
      ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
    }
  }
  return p;
}

Region region_of_nodes(const Graph& g, const std::vector<int32_t>& nodes) {
  Region r;
  r.nodes = nodes;
  std::vector<bool> member(g.nodes.size(), false);
  for (int32_t i : nodes) member.at(static_cast<size_t>(i)) = true;
  const auto inside = [&](ValueId v) {
    const int32_t p = g.values[v].producer;
    return p >= 0 && member[static_cast<size_t>(p)];
  };
  for (size_t j = 0; j < g.nodes.size(); ++j)
    for (ValueId v : g.nodes[j].inputs) {
      if (v == kNoValue) continue;
      if (member[j] && !inside(v)) r.inputs.push_back(v);
      if (!member[j] && inside(v)) r.outputs.push_back(v);
    }
  for (ValueId v : g.outputs)
    if (inside(v)) r.outputs.push_back(v);
  for (auto* ids : {&r.inputs, &r.outputs}) {
    std::sort(ids->begin(), ids->end());
    ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
  }
  return r;
}

}  // namespace sgraph
