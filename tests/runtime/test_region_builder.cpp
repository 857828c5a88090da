// RegionBuilder: small graphs with exact expected regions, and a property test on thousands of
// random DAGs against a brute-force checker that shares no code with the implementation.
#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "ops/op.h"
#include "runtime/region_builder.h"
#include "test_util.h"

using namespace sgraph;
using Nodes = std::vector<int32_t>;
using Reason = NoRegionReason;

namespace test_region_builder {  // this file's own names (the tests build as unity sources)

namespace {

std::vector<Nodes> regions_of(const Partition& p) {
  std::vector<Nodes> out;
  for (const Region& r : p.regions) out.push_back(r.nodes);
  return out;
}

Partition plan(const Graph& g, int min_region_ops = 2, std::vector<bool> stable = {}) {
  if (stable.empty()) stable.assign(g.nodes.size(), true);
  return build_regions(g, stable, {.min_region_ops = min_region_ops});
}

// ---- the brute-force checker -------------------------------------------------------------------

// The ops the random graphs use, from the op table: the first `count` ops with an element emitter
// (compilable) or with no lowering (not), If aside; and the test's own idea of which are
// compilable.
std::vector<OpKind> palette(bool compilable, size_t count) {
  std::vector<OpKind> out;
  for (int i = 0; i < kNumOps && out.size() < count; ++i) {
    const OpKind op = static_cast<OpKind>(i);
    if (op == OpKind::If) continue;
    if (compilable ? ops::op_def(op).element != nullptr : !ops::is_compilable(op))
      out.push_back(op);
  }
  SG_ASSERT(out.size() == count) << "the op table has too few ops for the palette";
  return out;
}
const std::vector<OpKind> kFusible = palette(true, 3);
const std::vector<OpKind> kOpaque = palette(false, 2);
bool fusible(OpKind op) {
  return std::find(kFusible.begin(), kFusible.end(), op) != kFusible.end();
}

using Edges = std::vector<std::pair<int32_t, int32_t>>;  // producer node -> consumer node

Edges node_edges(const Graph& g) {
  Edges e;
  for (int32_t j = 0; j < static_cast<int32_t>(g.nodes.size()); ++j)
    for (ValueId v : g.nodes[j].inputs)
      if (v != kNoValue && g.values[v].producer >= 0) e.emplace_back(g.values[v].producer, j);
  return e;
}

// Whether the graph stays acyclic when the nodes sharing a label are contracted to one node.
// Labels lie in [-1, 2 * nodes).
bool acyclic(const Edges& edges, const std::vector<int32_t>& label) {
  const size_t num = 2 * label.size() + 1;
  std::vector<int32_t> indegree(num), start(num + 1), next(edges.size());
  std::vector<bool> present(num);
  for (int32_t l : label) present[l + 1] = true;
  for (auto [u, v] : edges)
    if (label[u] != label[v]) ++start[label[u] + 2], ++indegree[label[v] + 1];
  for (size_t l = 1; l <= num; ++l) start[l] += start[l - 1];
  std::vector<int32_t> fill(start.begin(), start.end() - 1);
  for (auto [u, v] : edges)
    if (label[u] != label[v]) next[fill[label[u] + 1]++] = label[v] + 1;
  std::vector<int32_t> ready;
  size_t labels = 0, done = 0;
  for (size_t l = 0; l < num; ++l) {
    labels += present[l];
    if (present[l] && indegree[l] == 0) ready.push_back(static_cast<int32_t>(l));
  }
  while (!ready.empty()) {
    const int32_t l = ready.back();
    ready.pop_back();
    ++done;
    for (int32_t k = start[l]; k < start[l + 1]; ++k)
      if (--indegree[next[k]] == 0) ready.push_back(next[k]);
  }
  return done == labels;
}

// Every rule of region_builder.h, checked from its definition. Returns the first violation, or "".
// With `merged` (both tiers eligible and merged where acyclic: RegionOptions::merge_tiers
// accepting all), only the rules on regions themselves (members, connectivity, acyclicity,
// boundaries, the dynamic flag): which nodes phase 3 leaves out follows the tiers' partitions.
std::string violation(const Graph& g, const std::vector<bool>& stable, int min_ops,
                      const Partition& p, bool merged = false) {
  std::ostringstream err;
  const int32_t n = static_cast<int32_t>(g.nodes.size());
  if (p.region_of.size() != g.nodes.size() || p.reason.size() != g.nodes.size())
    return "per-node vectors have the wrong size";
  std::vector<bool> eligible(n);
  for (int32_t i = 0; i < n; ++i) eligible[i] = (merged || stable[i]) && fusible(g.nodes[i].op);
  const Edges edges = node_edges(g);
  std::vector<std::vector<int32_t>> neighbours(n);
  for (auto [u, v] : edges) neighbours[u].push_back(v), neighbours[v].push_back(u);

  // Members: sorted, eligible, disjoint, big enough, consistent with region_of, ordered.
  std::vector<int32_t> label(n, -1);
  for (int32_t r = 0; r < static_cast<int32_t>(p.regions.size()); ++r) {
    const Nodes& m = p.regions[r].nodes;
    if (m.empty() || static_cast<int>(m.size()) < min_ops)
      return (err << "region " << r << " has " << m.size() << " nodes", err.str());
    if (r > 0 && p.regions[r - 1].nodes.front() >= m.front()) return "regions out of order";
    for (size_t k = 0; k < m.size(); ++k) {
      const int32_t i = m[k];
      if (i < 0 || i >= n || (k > 0 && m[k - 1] >= i)) return "member list not sorted or bad";
      if (!eligible[i]) return (err << "node " << i << " is not eligible", err.str());
      if (label[i] >= 0) return (err << "node " << i << " in two regions", err.str());
      label[i] = r;
    }
  }
  for (int32_t i = 0; i < n; ++i)
    if (p.region_of[i] != label[i]) return (err << "region_of[" << i << "] wrong", err.str());

  for (int32_t r = 0; r < static_cast<int32_t>(p.regions.size()); ++r) {
    const Nodes& m = p.regions[r].nodes;
    // Connected: a search over member-member edges, either direction, reaches every member.
    std::set<int32_t> seen{m.front()};
    for (std::vector<int32_t> todo{m.front()}; !todo.empty();) {
      const int32_t i = todo.back();
      todo.pop_back();
      for (int32_t j : neighbours[i])
        if (label[j] == r && seen.insert(j).second) todo.push_back(j);
    }
    if (seen.size() != m.size()) return (err << "region " << r << " not connected", err.str());
    // Acyclic when contracted alone.
    std::vector<int32_t> alone(n);
    for (int32_t i = 0; i < n; ++i) alone[i] = label[i] == r ? n : i;
    if (!acyclic(edges, alone)) return (err << "region " << r << " forms a cycle", err.str());
    // Boundary values, from their definitions.
    std::set<ValueId> in, out;
    for (int32_t j = 0; j < n; ++j)
      for (ValueId v : g.nodes[j].inputs) {
        if (v == kNoValue) continue;
        const int32_t prod = g.values[v].producer;
        const bool from_member = prod >= 0 && label[prod] == r;
        if (label[j] == r && !from_member) in.insert(v);
        if (label[j] != r && from_member) out.insert(v);
      }
    for (ValueId v : g.outputs)
      if (g.values[v].producer >= 0 && label[g.values[v].producer] == r) out.insert(v);
    if (p.regions[r].inputs != std::vector<ValueId>(in.begin(), in.end()))
      return (err << "region " << r << " inputs wrong", err.str());
    if (p.regions[r].outputs != std::vector<ValueId>(out.begin(), out.end()))
      return (err << "region " << r << " outputs wrong", err.str());
  }

  // All regions contracted at once.
  std::vector<int32_t> all(n);
  for (int32_t i = 0; i < n; ++i) all[i] = label[i] >= 0 ? n + label[i] : i;
  if (!acyclic(edges, all)) return "the regions together form a cycle";
  for (const Region& r : p.regions) {
    bool changed = false;
    for (int32_t i : r.nodes) changed |= !stable[i];
    if (r.dynamic != changed) return "a region's dynamic flag is not whether a member changed";
  }
  if (merged) return "";

  // Reasons.
  for (int32_t i = 0; i < n; ++i) {
    const OpKind op = g.nodes[i].op;
    Reason want = Reason::none;
    if (!stable[i])
      want = Reason::changed;
    else if (op == OpKind::If)
      want = Reason::in_subgraph;
    else if (!fusible(op))
      want = Reason::not_compilable;
    if (want != Reason::none || label[i] >= 0) {
      if (p.reason[i] != want) return (err << "node " << i << " has a wrong reason", err.str());
      continue;
    }
    if (p.reason[i] != Reason::alone && p.reason[i] != Reason::would_form_cycle)
      return (err << "eligible node " << i << " left out with a wrong reason", err.str());
    if (min_ops <= 1) return (err << "eligible node " << i << " left out", err.str());
    // Its eligible component (eligible nodes joined by edges). `alone` says its cluster is the
    // whole component, `would_form_cycle` that an eligible neighbour is outside its cluster.
    std::set<int32_t> component{i};
    for (std::vector<int32_t> todo{i}; !todo.empty();) {
      const int32_t k = todo.back();
      todo.pop_back();
      for (int32_t j : neighbours[k])
        if (eligible[j] && component.insert(j).second) todo.push_back(j);
    }
    if (p.reason[i] == Reason::would_form_cycle && component.size() < 2)
      return (err << "node " << i << " would form a cycle without eligible neighbours", err.str());
    if (p.reason[i] == Reason::alone) {
      if (static_cast<int>(component.size()) >= min_ops)
        return (err << "node " << i << " alone in a component of " << component.size(), err.str());
      for (int32_t j : component)
        if (p.reason[j] != Reason::alone)
          return (err << "node " << i << " alone, but not node " << j, err.str());
      std::vector<int32_t> merged(n);
      for (int32_t j = 0; j < n; ++j) merged[j] = component.count(j) ? n : j;
      if (!acyclic(edges, merged))
        return (err << "node " << i << " alone in a component that forms a cycle", err.str());
    }
  }

  // Maximality: no two final clusters joined by an edge can merge. The final clusters are the
  // regions, plus (when min_ops <= 2, so that left-out clusters are single nodes) every eligible
  // node left out.
  std::vector<int32_t> cluster(n, -1);
  for (int32_t i = 0; i < n; ++i)
    if (label[i] >= 0)
      cluster[i] = n + label[i];
    else if (eligible[i] && min_ops <= 2)
      cluster[i] = i;
  std::set<std::pair<int32_t, int32_t>> tried;
  for (auto [u, v] : edges) {
    if (cluster[u] < 0 || cluster[v] < 0 || cluster[u] == cluster[v]) continue;
    if (!tried.emplace(std::min(cluster[u], cluster[v]), std::max(cluster[u], cluster[v])).second)
      continue;
    std::vector<int32_t> merged = all;
    for (int32_t i = 0; i < n; ++i)
      if (cluster[i] == cluster[u] || cluster[i] == cluster[v]) merged[i] = -1;
    if (acyclic(edges, merged))
      return (err << "the clusters of nodes " << u << " and " << v << " could merge", err.str());
  }
  return "";
}

std::string describe(const Graph& g, const std::vector<bool>& stable, int min_ops) {
  std::ostringstream os;
  os << "min_region_ops " << min_ops << "\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    os << i << ": " << op_name(g.nodes[i].op) << (stable[i] ? "" : " (changed)") << " in";
    for (ValueId v : g.nodes[i].inputs) os << " " << v;
    os << " out";
    for (ValueId v : g.nodes[i].outputs) os << " " << v;
    os << "\n";
  }
  return os.str();
}

// A random DAG built directly (the builder is not needed: regions depend on structure only).
struct Case {
  Graph g;
  std::vector<bool> stable;
  int min_ops = 2;
};

Case random_case(std::mt19937& rng, int max_nodes, int locality = 4) {
  const auto chance = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };
  Case c;
  Graph& g = c.g;
  std::vector<ValueId> avail;
  const auto fresh = [&](int32_t producer) {
    ValueInfo info;
    info.name = "v" + std::to_string(g.values.size());
    info.dtype = DType::f32;
    info.producer = producer;
    g.values.push_back(std::move(info));
    return static_cast<ValueId>(g.values.size() - 1);
  };
  for (int k = 0, inputs = 1 + static_cast<int>(rng() % 3); k < inputs; ++k) {
    avail.push_back(fresh(-1));
    if (k > 0 || chance(80)) g.inputs.push_back(avail.back());  // else a constant
  }
  const int n = 1 + static_cast<int>(rng() % max_nodes);
  for (int i = 0; i < n; ++i) {
    Node node;
    const int pick = static_cast<int>(rng() % 100);
    node.op = pick < 70 ? kFusible[rng() % 3] : pick < 95 ? kOpaque[rng() % 2] : OpKind::If;
    node.name = "n" + std::to_string(i);
    for (int k = 0, ins = 1 + static_cast<int>(rng() % 3); k < ins; ++k) {
      if (chance(5)) {
        node.inputs.push_back(kNoValue);
      } else {
        const size_t recent = std::min<size_t>(avail.size(), locality);
        node.inputs.push_back(chance(60) ? avail[avail.size() - 1 - rng() % recent]
                                         : avail[rng() % avail.size()]);
      }
    }
    for (int k = 0, outs = chance(15) ? 2 : 1; k < outs; ++k) {
      node.outputs.push_back(fresh(i));
      avail.push_back(node.outputs.back());
      if (chance(10)) g.outputs.push_back(node.outputs.back());
    }
    g.nodes.push_back(std::move(node));
  }
  if (g.outputs.empty() || g.outputs.back() != avail.back()) g.outputs.push_back(avail.back());
  for (int i = 0; i < n; ++i) c.stable.push_back(chance(85));
  c.min_ops = 1 + static_cast<int>(rng() % 4);
  return c;
}

}  // namespace

// ---- small graphs ------------------------------------------------------------------------------

TEST_CASE("RegionBuilder: a chain of elementwise ops is one region") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {2, 3});
  b.output(b.neg(b.exp(b.relu(x))), "y");
  Graph g = b.build();
  const Partition p = plan(g);
  CHECK(regions_of(p) == std::vector<Nodes>{{0, 1, 2}});
  CHECK(p.regions[0].inputs == std::vector<ValueId>{x});
  CHECK(p.regions[0].outputs == std::vector<ValueId>{g.outputs[0]});
  CHECK(p.region_of == std::vector<int32_t>{0, 0, 0});
  CHECK(p.reason == std::vector<Reason>(3, Reason::none));
}

TEST_CASE("RegionBuilder: a diamond is one region") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {2, 3});
  ValueId a = b.relu(x);
  b.output(b.add(b.exp(a), b.neg(a)), "y");
  const Partition p = plan(b.build());
  CHECK(regions_of(p) == std::vector<Nodes>{{0, 1, 2, 3}});
}

// An op the JIT does not compile, shaped like GlobalAveragePool: a log-sum-exp over dims 2 and 3.
ValueId min_pool(GraphBuilder& b, ValueId x) {
  return b.node(OpKind::ReduceLogSumExp, {x}, test::axes_attr({2, 3})).front();
}

TEST_CASE("RegionBuilder: a non-compilable op splits a chain in two") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {1, 2, 4, 4});
  ValueId a = b.neg(b.relu(x));
  ValueId pooled = min_pool(b, a);
  b.output(b.abs(b.exp(pooled)), "y");
  Graph g = b.build();
  CHECK_FALSE(ops::is_compilable(OpKind::ReduceLogSumExp));
  const Partition p = plan(g);
  CHECK(regions_of(p) == std::vector<Nodes>{{0, 1}, {3, 4}});
  CHECK(p.region_of == std::vector<int32_t>{0, 0, -1, 1, 1});
  CHECK(p.reason[2] == Reason::not_compilable);
  CHECK(p.regions[0].outputs == std::vector<ValueId>{a});
  CHECK(p.regions[1].inputs == std::vector<ValueId>{pooled});
}

TEST_CASE("RegionBuilder: a changed op splits a chain in two") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {2, 3});
  b.output(b.abs(b.exp(b.sqrt(b.neg(b.relu(x))))), "y");
  Graph g = b.build();
  const Partition p = plan(g, 2, {true, true, false, true, true});
  CHECK(regions_of(p) == std::vector<Nodes>{{0, 1}, {3, 4}});
  CHECK(p.reason == std::vector<Reason>{Reason::none, Reason::none, Reason::changed, Reason::none,
                                        Reason::none});
  // Changed wins over not compilable.
  GraphBuilder b2;
  ValueId x2 = b2.input("x", DType::f32, {1, 2, 4, 4});
  b2.output(min_pool(b2, x2), "y");
  CHECK(plan(b2.build(), 2, {false}).reason[0] == Reason::changed);
}

TEST_CASE("RegionBuilder: merging tiers joins a static region and a dynamic one if allowed") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {2, 3}), c = b.input("c", DType::f32, {3});
  b.output(b.abs(b.exp(b.add(x, b.neg(b.relu(c))))), "y");
  Graph g = b.build();
  const std::vector<bool> stable = {true, true, false, false, false};
  RegionOptions o{.dynamic = [](const Graph&, int32_t) { return true; }};
  Partition p = build_regions(g, stable, o);
  CHECK(regions_of(p) == std::vector<Nodes>{{0, 1}, {2, 3, 4}});
  CHECK(!p.regions[0].dynamic);
  CHECK(p.regions[1].dynamic);
  std::vector<Nodes> asked;
  o.merge_tiers = [&](const Graph&, const Nodes& nodes) {
    asked.push_back(nodes);
    return false;
  };
  CHECK(regions_of(build_regions(g, stable, o)) == std::vector<Nodes>{{0, 1}, {2, 3, 4}});
  CHECK(asked == std::vector<Nodes>{{0, 1, 2, 3, 4}});
  o.merge_tiers = [](const Graph&, const Nodes&) { return true; };
  p = build_regions(g, stable, o);
  CHECK(regions_of(p) == std::vector<Nodes>{{0, 1, 2, 3, 4}});
  CHECK(p.regions[0].dynamic);
  CHECK(p.regions[0].inputs == std::vector<ValueId>{x, c});
  CHECK(region_of_nodes(g, p.regions[0].nodes).outputs == p.regions[0].outputs);
  CHECK(region_of_nodes(g, {0, 1}).outputs == std::vector<ValueId>{g.nodes[1].outputs[0]});
}

TEST_CASE("RegionBuilder: A->B and A->C->B with C not compilable: A and B stay apart") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {1, 2, 4, 4});
  ValueId a = b.relu(x);       // 0: A
  ValueId c = min_pool(b, a);  // 1: C, not compilable
  b.output(b.add(a, c), "y");  // 2: B
  Graph g = b.build();
  const Partition p = plan(g);
  CHECK(p.regions.empty());
  CHECK(p.reason == std::vector<Reason>{Reason::would_form_cycle, Reason::not_compilable,
                                        Reason::would_form_cycle});
  CHECK(regions_of(plan(g, 1)) == std::vector<Nodes>{{0}, {2}});

  // With a consumer D of B, {B, D} is a region and A is still left out.
  GraphBuilder b2;
  x = b2.input("x", DType::f32, {1, 2, 4, 4});
  a = b2.relu(x);
  c = min_pool(b2, a);
  b2.output(b2.exp(b2.add(a, c)), "y");
  const Partition p2 = plan(b2.build());
  CHECK(regions_of(p2) == std::vector<Nodes>{{2, 3}});
  CHECK(p2.reason[0] == Reason::would_form_cycle);
  CHECK(p2.regions[0].inputs == std::vector<ValueId>{a, c});
}

TEST_CASE("RegionBuilder: a cluster too small to keep no longer keeps regions apart") {
  // R1 = {a1, a2, a3} and R2 = {b1, b2, b3} are joined by a3 -> b1. P = {q, p} lies between them
  // (R1 -> m -> P -> n -> R2, with m and n not compilable), so while P is a cluster R1 and R2
  // cannot merge. With min_region_ops 3, P is dropped and R1 and R2 merge.
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {1, 2, 4, 4});
  ValueId q = b.relu(x);                 // 0
  ValueId n = min_pool(b, q);            // 1
  ValueId a3 = b.abs(b.neg(b.exp(x)));   // 2, 3, 4
  ValueId m = min_pool(b, a3);           // 5
  b.output(b.add(q, m), "p");            // 6
  ValueId b1 = b.add(a3, n);             // 7
  b.output(b.sigmoid(b.tanh(b1)), "y");  // 8, 9
  Graph g = b.build();
  CHECK(regions_of(plan(g, 2)) == std::vector<Nodes>{{0, 6}, {2, 3, 4}, {7, 8, 9}});
  const Partition p = plan(g, 3);
  CHECK(regions_of(p) == std::vector<Nodes>{{2, 3, 4, 7, 8, 9}});
  CHECK(p.reason[0] == Reason::alone);
  CHECK(p.reason[6] == Reason::alone);
  CHECK(p.regions[0].inputs == std::vector<ValueId>{x, n});
  CHECK(p.regions[0].outputs == std::vector<ValueId>{a3, g.outputs[1]});
}

TEST_CASE("RegionBuilder: min_region_ops 1, 2 and 3") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {2, 3});
  b.output(b.neg(b.exp(b.relu(x))), "three");  // nodes 0-2
  b.output(b.sqrt(b.abs(x)), "two");           // nodes 3-4
  b.output(b.tanh(x), "one");                  // node 5
  Graph g = b.build();
  CHECK(regions_of(plan(g, 1)) == std::vector<Nodes>{{0, 1, 2}, {3, 4}, {5}});
  CHECK(regions_of(plan(g, 0)) == std::vector<Nodes>{{0, 1, 2}, {3, 4}, {5}});
  const Partition p2 = plan(g, 2);
  CHECK(regions_of(p2) == std::vector<Nodes>{{0, 1, 2}, {3, 4}});
  CHECK(p2.reason[5] == Reason::alone);
  const Partition p3 = plan(g, 3);
  CHECK(regions_of(p3) == std::vector<Nodes>{{0, 1, 2}});
  CHECK(p3.region_of == std::vector<int32_t>{0, 0, 0, -1, -1, -1});
  for (int i : {3, 4, 5}) CHECK(p3.reason[i] == Reason::alone);
}

TEST_CASE("RegionBuilder: boundary outputs are graph outputs and values read outside") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {1, 2, 4, 4});
  ValueId w = b.constant("w", test::random_f32({1, 2, 4, 4}, 1));
  ValueId a = b.relu(x);            // 0, also read by the pool
  ValueId e = b.exp(a);             // 1, a graph output and read inside
  ValueId y = b.add(b.neg(e), w);   // 2, 3
  ValueId pooled = min_pool(b, a);  // 4
  b.output(e, "e");
  b.output(y, "y");
  b.output(pooled, "pooled");
  b.output(y);  // the same value twice
  const Partition p = plan(b.build());
  REQUIRE(regions_of(p) == std::vector<Nodes>{{0, 1, 2, 3}});
  CHECK(p.regions[0].inputs == std::vector<ValueId>{x, w});
  CHECK(p.regions[0].outputs == std::vector<ValueId>{a, e, y});
}

TEST_CASE("RegionBuilder: control flow is never in a region") {
  auto branch = [](float k) {
    GraphBuilder bb("branch");
    ValueId v = bb.input("v", DType::f32, {2});
    bb.output(bb.mul(v, bb.scalar(k)), "out");
    return std::make_shared<const Graph>(bb.build());
  };
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {2});
  ValueId cond = b.input("c", DType::boolean, {});
  ValueId r = b.relu(x);
  ValueId f = b.node(OpKind::If, {cond, r},
                     Attributes{{"then_branch", branch(2)}, {"else_branch", branch(3)}})[0];
  b.output(b.exp(b.neg(f)), "y");
  const Partition p = plan(b.build());
  CHECK(regions_of(p) == std::vector<Nodes>{{2, 3}});
  CHECK(p.reason[0] == Reason::alone);
  CHECK(p.reason[1] == Reason::in_subgraph);
}

TEST_CASE("RegionBuilder: reason names and a wrong stability vector") {
  CHECK(reason_str(Reason::none).empty());
  CHECK(reason_str(Reason::changed) == "changed");
  CHECK(reason_str(Reason::not_compilable) == "not compilable");
  CHECK(reason_str(Reason::would_form_cycle) == "would form a cycle");
  CHECK(reason_str(Reason::alone) == "alone");
  CHECK(reason_str(Reason::in_subgraph) == "control flow or subgraph");
  GraphBuilder b;
  b.output(b.relu(b.input("x", DType::f32, {2})));
  Graph g = b.build();
  CHECK(test::contains(test::error_of([&] {
                         build_regions(g, {true, true});
                       }),
                       "2 stability flags for 1 nodes"));
  CHECK(build_regions(Graph{}, {}).regions.empty());
}

TEST_CASE("RegionBuilder: the compilable set is what the JIT can generate") {
  // Derived from the op table: which ops have a lowering is ops::is_compilable's answer, and
  // tests/jit/test_op_lowerings.cpp compiles every one of them against the interpreter.
  int compilable = 0;
  for (int i = 0; i < kNumOps; ++i) {
    const OpKind op = static_cast<OpKind>(i);
    const ops::OpDef& def = ops::op_def(op);
    // An element emitter is a lowering.
    if (def.element) CHECK_MESSAGE(ops::is_compilable(op), op_name(op));
    // A kernel writes outputs of shapes known before it runs: not control flow, whose outputs
    // its kernel makes, nor an op that always has several outputs.
    if (def.makes_outputs || def.min_outputs > 1)
      CHECK_MESSAGE(!ops::is_compilable(op), op_name(op));
    compilable += ops::is_compilable(op);
  }
  // Some ops are not compiled yet (LSTM, ConvTranspose, ReduceLogSumExp, ...).
  CHECK(compilable > 0);
  CHECK(compilable < kNumOps);
  CHECK_FALSE(ops::is_compilable(OpKind::If));
}

// ---- properties --------------------------------------------------------------------------------

TEST_CASE("RegionBuilder: random DAGs satisfy every rule (brute-force checker)") {
  std::mt19937 rng(20240601);
  std::map<Reason, int> reasons;
  int regions = 0;
  const int kCases = 10000;
  for (int t = 0; t < kCases; ++t) {
    const Case c = random_case(rng, 40);
    const Partition p = build_regions(c.g, c.stable, {.min_region_ops = c.min_ops});
    const std::string bad = violation(c.g, c.stable, c.min_ops, p);
    if (!bad.empty()) {
      FAIL_CHECK("case " << t << ": " << bad << "\n" << describe(c.g, c.stable, c.min_ops));
      break;
    }
    regions += static_cast<int>(p.regions.size());
    for (Reason r : p.reason) ++reasons[r];
  }
  MESSAGE(kCases << " cases, " << regions << " regions");
  // Both tiers, merged wherever acyclic: the regions still obey the rules on regions.
  int mixed = 0;
  for (int t = 0; t < kCases / 4; ++t) {
    const Case c = random_case(rng, 40);
    const RegionOptions o{.min_region_ops = c.min_ops,
                          .dynamic = [](const Graph&, int32_t) { return true; },
                          .merge_tiers = [](const Graph&, const Nodes&) { return true; }};
    const Partition p = build_regions(c.g, c.stable, o);
    const std::string bad = violation(c.g, c.stable, c.min_ops, p, /*merged=*/true);
    if (!bad.empty()) {
      FAIL_CHECK("merged case " << t << ": " << bad << "\n" << describe(c.g, c.stable, c.min_ops));
      break;
    }
    for (const Region& r : p.regions)
      mixed += r.dynamic &&
               std::any_of(r.nodes.begin(), r.nodes.end(), [&](int32_t i) { return c.stable[i]; });
  }
  CHECK(mixed > 0);
  // The cases exercise every outcome.
  CHECK(regions > kCases);
  for (Reason r : {Reason::none, Reason::changed, Reason::not_compilable, Reason::would_form_cycle,
                   Reason::alone, Reason::in_subgraph})
    CHECK_MESSAGE(reasons[r] > 100, reason_str(r));
}

TEST_CASE("RegionBuilder: large random graphs are fast and satisfy every rule") {
  std::mt19937 rng(7);
  for (int locality : {4, 50}) {
    Case c = random_case(rng, 1);
    while (c.g.nodes.size() < 3000) c = random_case(rng, 4000, locality);
    c.min_ops = 3;
    const auto start = std::chrono::steady_clock::now();
    const Partition p = build_regions(c.g, c.stable, {.min_region_ops = c.min_ops});
    const auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    MESSAGE(c.g.nodes.size() << " nodes, locality " << locality << ": " << p.regions.size()
                             << " regions in " << ms << " ms");
    CHECK(violation(c.g, c.stable, c.min_ops, p) == "");
  }
}

TEST_CASE("RegionBuilder: deterministic") {
  std::mt19937 rng(99);
  for (int t = 0; t < 200; ++t) {
    const Case c = random_case(rng, 40);
    const Graph copy = c.g;
    const Partition p = build_regions(c.g, c.stable, {.min_region_ops = c.min_ops});
    const Partition q = build_regions(copy, c.stable, {.min_region_ops = c.min_ops});
    REQUIRE(p.regions.size() == q.regions.size());
    for (size_t r = 0; r < p.regions.size(); ++r) {
      CHECK(p.regions[r].nodes == q.regions[r].nodes);
      CHECK(p.regions[r].inputs == q.regions[r].inputs);
      CHECK(p.regions[r].outputs == q.regions[r].outputs);
    }
    CHECK(p.region_of == q.region_of);
    CHECK(p.reason == q.reason);
  }
}

}  // namespace test_region_builder
