// The planned model: a Session's graph written with each of its regions as one node calling a
// model-local ONNX function, and its warm-up record in the metadata (see onnx.h).
#include <fstream>
#include <map>
#include <sstream>

#include "ir/debug.h"
#include "runtime/warmup_record.h"
#include "sgraph/onnx.h"
#include "sgraph/session.h"

namespace sgraph {

namespace {

// The regions of the planned subgraphs (If branches) under `prefix`, by label.
void subgraph_groups(const std::vector<Report>& subs, const std::string& prefix,
                     std::map<std::string, std::vector<std::vector<int32_t>>>& out) {
  for (const Report& sub : subs) {
    const std::string label = prefix + sub.graph;
    for (const RegionReport& r : sub.regions) out[label].push_back(r.node_ids);
    subgraph_groups(sub.subgraphs, label + "/", out);
  }
}

}  // namespace

std::string save_planned_onnx_bytes(const Session& s) {
  const Graph& g = s.graph();
  SG_CHECK(s.planned()) << "graph '" << g.name
                        << "': a planned model needs a Session that has planned (warm it up)";
  const OnnxNames names = onnx_names(g);
  const Report rep = s.report();
  Graph out = g;
  out.metadata[kWarmupRecordKey] = s.warmup_record(names.nodes, names.values);
  for (const auto& [label, text] : s.subgraph_warmup_records())
    out.metadata[std::string(kWarmupRecordKey) + ":" + label] = text;
  int stable = 0;
  for (const OpReport& o : rep.ops) stable += o.stable;
  std::ostringstream summary;
  summary << rep.ops.size() << " ops after " << rep.warmup_runs << " warm-up runs: " << stable
          << " stable, " << rep.ops.size() - stable << " changed; " << rep.regions.size()
          << " regions";
  out.metadata["sgraph.plan"] = summary.str();
  std::string symbols;
  for (const std::string& sym : rep.symbols) symbols += (symbols.empty() ? "" : "; ") + sym;
  if (!symbols.empty()) out.metadata["sgraph.symbols"] = symbols;
  OnnxSaveOptions o;
  for (const RegionReport& r : rep.regions) {
    o.functions.push_back(r.node_ids);
    o.function_names.push_back((r.dynamic ? "dynamic_region_" : "region_") + std::to_string(r.id));
  }
  subgraph_groups(rep.subgraphs, "", o.subgraph_functions);
  std::string bytes = save_onnx_bytes(out, o);
  // The record holds only if the file reads back as the same graph: ops sgraph holds in an older
  // opset's form may be written anew (an attribute as a constant input), and then it does not.
  const Graph back = load_onnx_bytes(bytes, "the planned model of graph '" + g.name + "'");
  std::vector<std::string> back_nodes, back_values;
  for (const Node& n : back.nodes) back_nodes.push_back(n.name);
  for (const ValueInfo& v : back.values) back_values.push_back(v.name);
  SG_CHECK(graph_fingerprint(back, back_nodes, back_values) ==
           graph_fingerprint(g, names.nodes, names.values))
      << "graph '" << g.name
      << "': written as ONNX it does not read back as the same graph (an op held in an older "
         "opset's form is written anew), so its warm-up record would not apply; warm up a "
         "Session of the graph as read back from save_onnx_bytes instead";
  return bytes;
}

void save_planned_onnx(const Session& s, const std::string& path) {
  const std::string bytes = save_planned_onnx_bytes(s);
  std::ofstream out(path, std::ios::binary);
  SG_CHECK(out) << path << ": cannot write file";
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  SG_CHECK(out.good()) << path << ": write failed";
}

}  // namespace sgraph
