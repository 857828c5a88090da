// The planned model: a Session's graph written with each of its regions as one node calling a
// model-local ONNX function, and its warm-up record in the metadata (see onnx.h).
#include <fstream>
#include <map>
#include <sstream>
#include <variant>

#include "ir/debug.h"
#include "runtime/warmup_record.h"
#include "sgraph/onnx.h"
#include "sgraph/session.h"

namespace sgraph {

namespace {

// The branch graphs (If branches) of g, nested ones too, by label ("<If node>/<attribute>",
// nested labels joined by '/', as the export and the subgraph Sessions name them).
void branch_graphs(const Graph& g, const std::string& prefix,
                   std::map<std::string, const Graph*>& out) {
  for (const Node& n : g.nodes)
    for (const auto& [key, value] : n.attrs)
      if (const auto* sub = std::get_if<std::shared_ptr<const Graph>>(&value)) {
        const std::string label = prefix + n.name + "/" + key;
        out[label] = sub->get();
        branch_graphs(**sub, label + "/", out);
      }
}

// The regions of the planned subgraphs (If branches) under `prefix`, by label, as node indices
// into the branch graphs of `branches`. A branch's Session runs its graph with constants folded
// (SessionOptions::fold_constants), so its node indices are not the branch's own: each region's
// nodes are found by name (a region never holds a folded node).
void subgraph_groups(const std::vector<Report>& subs, const std::string& prefix,
                     const std::map<std::string, const Graph*>& branches,
                     std::map<std::string, std::vector<std::vector<int32_t>>>& out) {
  for (const Report& sub : subs) {
    const std::string label = prefix + sub.graph;
    const auto it = branches.find(label);
    if (it != branches.end()) {
      std::map<std::string, int32_t> index;
      for (size_t i = 0; i < it->second->nodes.size(); ++i)
        index[it->second->nodes[i].name] = static_cast<int32_t>(i);
      for (const RegionReport& r : sub.regions) {
        std::vector<int32_t> ids;
        for (const std::string& name : r.nodes) {
          const auto at = index.find(name);
          SG_CHECK(at != index.end()) << "branch '" << label << "' has no node '" << name
                                      << "' of its Session's region " << r.id;
          ids.push_back(at->second);
        }
        out[label].push_back(std::move(ids));
      }
    }
    subgraph_groups(sub.subgraphs, label + "/", branches, out);
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
  std::map<std::string, const Graph*> branches;
  branch_graphs(g, "", branches);
  subgraph_groups(rep.subgraphs, "", branches, o.subgraph_functions);
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
