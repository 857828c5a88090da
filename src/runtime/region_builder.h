// RegionBuilder: partitions a graph's stable, compilable ops into regions the JIT fuses.
//
//   std::vector<bool> stable = tracker.stable();        // per node, from the warm-up runs
//   Partition p = build_regions(g, stable, {.min_region_ops = 2});
//   for (const Region& r : p.regions) compile(r.nodes, r.inputs, r.outputs);
//   std::cout << reason_str(p.reason[i]);               // why node i joined no region
//
// A node is *eligible* when it is compilable (RegionOptions::compilable) and stable, or changed
// and allowed in a dynamic region (RegionOptions::dynamic). A region is a set of eligible nodes of
// one tier (all stable: a static region; all changed: a dynamic one; with merge_tiers, a dynamic
// region may hold stable ops too) that
//   - is connected through data edges between its members (producer -> consumer, either way),
//   - leaves the graph acyclic when contracted to one node, together with every other region
//     (no path leaves a region and comes back),
//   - is disjoint from the other regions, and holds at least min_region_ops nodes.
// Regions are as large as the rules allow: clusters of nodes are merged greedily along data
// edges, in topological order, with a cycle check (as XLA's auto-clustering does), until no two
// adjacent clusters of one tier can merge. Clusters left smaller than min_region_ops are dropped,
// after which the remaining regions get one more chance to merge with each other. Afterwards no two
// regions joined by a data edge can merge without a cycle; with min_region_ops <= 2 neither can a
// region and an eligible node left out, nor two such nodes.
//
// Control-flow ops (If) are never in a region, and nodes of their subgraphs are not in g.nodes.
// The output is deterministic. A few thousand nodes take milliseconds (tens of them for random
// DAGs full of long edges).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "ir/region.h"
#include "sgraph/graph.h"

namespace sgraph {

struct RegionOptions {
  int min_region_ops = 2;  // smaller clusters are left to the interpreter (values < 1 act as 1)
  // Whether node i can be compiled; when empty, ops::is_compilable(op). The Session passes the
  // JIT's per-node check (dtypes, constant parameters), so one node the JIT refuses never makes
  // a whole region fall back to the interpreter.
  std::function<bool(const Graph& g, int32_t node)> compilable = nullptr;
  // Whether changed (not stable) node i may join a *dynamic* region: its changing dims are
  // symbols its lowering takes at run time. Empty: changed nodes join no region. Stable and
  // changed nodes never share a region (the two tiers are partitioned together, so that the
  // regions of both leave the graph acyclic).
  std::function<bool(const Graph& g, int32_t node)> dynamic = nullptr;
  // Merging tiers: once the regions of each tier are as large as the rules allow, a static region
  // and an adjacent dynamic one (stable ops next to changed ones) become one dynamic region where
  // this accepts the merged region's nodes (sorted) and no cycle forms; the stable ops' dims stay
  // constants in its kernel. Empty: the tiers never mix.
  std::function<bool(const Graph& g, const std::vector<int32_t>& nodes)> merge_tiers = nullptr;
};

// Why a node is in no region; `none` for nodes in one. A node both changed and not compilable
// (control flow included) is reported `changed`.
enum class NoRegionReason {
  none,
  changed,           // its shapes changed during warm-up
  not_compilable,    // the JIT cannot fuse its op
  would_form_cycle,  // eligible; its cluster stayed too small, kept by a cycle from a neighbour
  alone,             // eligible, but fewer than min_region_ops eligible nodes connect to it
  in_subgraph,       // a control-flow op (If), or a node of a control-flow subgraph
};
// "", "changed", "not compilable", "would form a cycle", "alone", "control flow or subgraph".
std::string_view reason_str(NoRegionReason reason);

struct Partition {
  std::vector<Region> regions;         // ordered by their first node
  std::vector<int32_t> region_of;      // per node: index into regions, or -1
  std::vector<NoRegionReason> reason;  // per node
};

// The region of `nodes` (sorted) with its boundary values (see Region); dynamic false.
Region region_of_nodes(const Graph& g, const std::vector<int32_t>& nodes);

// Partitions `g` (topologically ordered; verified). `stable` holds one flag per node of g.nodes;
// throws sgraph::Error when its size differs.
Partition build_regions(const Graph& g, const std::vector<bool>& stable,
                        const RegionOptions& options = {});

}  // namespace sgraph
