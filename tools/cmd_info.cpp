// `sgraph info MODEL`: what a model declares and what it is made of.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli.h"
#include "sgraph/sgraph.h"

namespace sgraph::cli {

namespace {

struct Census {
  int64_t nodes = 0, subgraphs = 0, subgraph_nodes = 0, constants = 0, constant_bytes = 0;
  std::map<std::string, int64_t> ops;  // op name -> nodes, subgraphs included
};

// Counts a graph's nodes and constants, and those of the subgraphs (If branches) inside it.
void count(const Graph& g, bool top, Census& c) {
  for (const ValueInfo& v : g.values) {
    if (!v.initializer.defined()) continue;
    ++c.constants;
    c.constant_bytes += static_cast<int64_t>(v.initializer.nbytes());
  }
  for (const Node& n : g.nodes) {
    ++(top ? c.nodes : c.subgraph_nodes);
    ++c.ops[std::string(op_name(n.op))];
    for (const auto& [name, value] : n.attrs) {
      if (const auto* sub = std::get_if<std::shared_ptr<const Graph>>(&value)) {
        ++c.subgraphs;
        count(**sub, false, c);
      }
    }
  }
}

std::string meta(const Graph& g, const std::string& key) {
  auto it = g.metadata.find(key);
  if (it == g.metadata.end()) return "-";
  const size_t end = it->second.find_last_not_of(' ');  // "producer " when it has no version
  return it->second.substr(0, end == std::string::npos ? 0 : end + 1);
}

void print_values(const Graph& g, const char* what, const std::vector<ValueId>& ids) {
  std::printf("%s (%zu):\n", what, ids.size());
  for (ValueId id : ids) {
    const ValueInfo& v = g.value(id);
    std::printf("  %-24s %s%s\n", v.name.c_str(), std::string(dtype_name(v.dtype)).c_str(),
                v.shape ? dims_str(*v.shape).c_str() : " (shape unknown)");
  }
}

}  // namespace

int cmd_info(const Args& args) {
  if (args.positional.size() != 1) throw UsageError("info: expected one MODEL");
  const Graph g = load_model(args.positional[0]);
  Census c;
  count(g, true, c);

  std::printf("model:     %s\n", args.positional[0].c_str());
  std::printf("graph:     %s\n", g.name.c_str());
  std::printf("opset:     %s\n", meta(g, "onnx.opset").c_str());
  std::printf("producer:  %s\n", meta(g, "onnx.producer").c_str());
  print_values(g, "inputs", g.inputs);
  print_values(g, "outputs", g.outputs);
  std::printf("nodes:     %lld", static_cast<long long>(c.nodes));
  if (c.subgraphs)
    std::printf(" (+ %lld in %lld subgraphs)", static_cast<long long>(c.subgraph_nodes),
                static_cast<long long>(c.subgraphs));
  std::printf("\nconstants: %lld (%lld bytes, %.1f KiB)\n", static_cast<long long>(c.constants),
              static_cast<long long>(c.constant_bytes), c.constant_bytes / 1024.0);

  std::vector<std::pair<std::string, int64_t>> ops(c.ops.begin(), c.ops.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::printf("ops (%zu kinds, by count%s):\n", ops.size(),
              c.subgraphs ? ", subgraphs included" : "");
  for (const auto& [op, n] : ops)
    std::printf("  %-22s %lld\n", op.c_str(), static_cast<long long>(n));
  if (g.metadata.count(kWarmupRecordKey)) {
    // A planned model: its plan, as a Session makes it from the record (nothing compiled).
    std::printf("planned:   %s\n", meta(g, "sgraph.plan").c_str());
    Session s(g, SessionOptions{.jit = false});
    const Report r = s.report();
    if (r.warmup_record != "loaded") {
      std::printf("  its warm-up record does not apply: %s\n", r.warmup_record.c_str());
      return 0;
    }
    size_t in_regions = 0;
    for (const RegionReport& reg : r.regions) {
      in_regions += reg.nodes.size();
      std::printf("  region %d%s: %zu ops\n", reg.id,
                  reg.dynamic ? (" (dynamic over " + reg.symbols.front() + "...)").c_str() : "",
                  reg.nodes.size());
    }
    for (const std::string& sym : r.symbols) std::printf("  symbol %s\n", sym.c_str());
    std::printf("  nodes: %zu before, %zu after (%zu regions, %zu ops interpreted)\n",
                g.nodes.size(), g.nodes.size() - in_regions + r.regions.size(), r.regions.size(),
                g.nodes.size() - in_regions);
  }
  return 0;
}

}  // namespace sgraph::cli
