// Report rendering: text table, JSON (nlohmann/json) and Graphviz DOT.
#include "sgraph/report.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sgraph/graph.h"

namespace sgraph {

namespace {
std::string us(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(ns) / 1e3);
  return buf;
}
std::string bytes_str(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double x = static_cast<double>(bytes);
  int u = 0;
  while (x >= 1024 && u < 3) {
    x /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", x, units[u]);
  return buf;
}
std::string join(const std::vector<std::string>& xs) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + xs[i];
  return s;
}
std::string dot_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r;
}
}  // namespace

std::string Report::to_text() const {
  std::ostringstream os;
  int stable = 0, in_region = 0;
  for (const OpReport& o : ops) {
    stable += o.stable;
    in_region += o.region >= 0;
  }
  os << "graph " << graph << ": " << ops.size() << " ops after " << warmup_runs
     << (warmup_record == "loaded" ? " warm-up runs (from the model's warm-up record)"
                                   : " warm-up runs")
     << ": " << stable << " stable, " << ops.size() - stable << " changed; " << regions.size()
     << " regions covering " << in_region << " ops" << (planned ? "" : " (not planned yet)")
     << "\n";
  if (folded_ops > 0)
    os << "folded: " << folded_ops << " ops whose inputs are all constants, now constants\n";
  if (!warmup_record.empty() && warmup_record != "loaded")
    os << "warm-up record " << warmup_record << "\n";
  if (planned)
    os << "executable graph: " << steps << " steps for " << ops.size() << " ops"
       << (replans ? ", re-planned " + std::to_string(replans) + " times" : "") << "\n";
  if (compilations > 0) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f", compile_ms_total);
    os << "compiled: " << compilations << " kernels in " << ms << " ms";
    if (mode == "per_signature") os << " for " << signatures << " input signatures";
    if (compile_wall_ms > 0 && compile_wall_ms < 0.95 * compile_ms_total) {
      std::snprintf(ms, sizeof ms, "%.1f", compile_wall_ms);
      os << " (" << ms << " ms of wall time: several at once)";
    }
    os << "\n";
  }
  if (planned)
    os << "memory plan: " << arena_buffers << " buffers in a " << bytes_str(arena_bytes)
       << " arena, " << bytes_str(arena_unshared_bytes) << " without sharing"
       << (call_states > 1 ? "; " + std::to_string(call_states) + " call states" : "")
       << (dynamic_bytes ? "; dynamic regions' outputs " + bytes_str(dynamic_bytes) : "") << "\n";
  os << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-28s %-18s %-8s %-7s %-22s %10s\n", "node", "op", "shapes",
                "region", "why not in a region", "median us");
  os << line;
  for (const OpReport& o : ops) {
    const std::string shapes = o.stable ? "stable" : "run " + std::to_string(o.changed_at_run);
    std::snprintf(line, sizeof line, "%-28s %-18s %-8s %-7s %-22s %10s\n", o.node.c_str(),
                  std::string(op_name(o.op)).c_str(), shapes.c_str(),
                  o.region >= 0 ? std::to_string(o.region).c_str() : "-", o.reason.c_str(),
                  us(o.median_ns).c_str());
    os << line;
  }
  bool any_change = false;
  for (const OpReport& o : ops)
    if (!o.stable) {
      if (!any_change) os << "\nchanged ops:\n";
      any_change = true;
      os << "  " << o.node << " (run " << o.changed_at_run << "): " << o.change << "\n";
      if (!o.symbolic_shapes.empty()) os << "    symbolic: " << o.symbolic_shapes << "\n";
      if (!o.why_not_dynamic.empty()) os << "    not dynamic: " << o.why_not_dynamic << "\n";
    }
  if (!symbols.empty()) os << "\nsymbols: " << join(symbols) << "\n";
  for (const RegionReport& r : regions) {
    os << "\nregion " << r.id
       << (r.dynamic
               ? " (dynamic: " + join(r.symbols) +
                     (r.stable_ops ? "; " + std::to_string(r.stable_ops) + " stable ops" : "") + ")"
               : "")
       << ": " << r.nodes.size() << " ops, " << us(r.profiled_ns) << " us interpreted; ";
    if (r.compiling)
      os << "compiling in the background (interpreted meanwhile)";
    else if (r.cache_hit)
      os << "kernel from the cache (the same code)";
    else if (r.disk_hit)
      os << "kernel loaded from the disk cache (" << r.compile_ms << " ms)";
    else if (r.compiled)
      os << "compiled " << r.compiles << "x (" << r.compile_ms << " ms)";
    else
      os << "interpreted (" << r.why_interpreted << ")";
    if (r.active_from_call > 0) os << ", active from call " << r.active_from_call;
    os << "; " << r.kernel_calls << " kernel calls, " << r.guard_misses << " guard misses"
       << "\n  threads: " << r.threads << " (" << r.threads_why << ")"
       << "\n  ops:     " << join(r.nodes) << "\n  inputs:  " << join(r.inputs)
       << "\n  outputs: " << join(r.outputs) << "\n";
    if (!r.value_guarded.empty()) os << "  guarded by value: " << join(r.value_guarded) << "\n";
    if (!r.budget.empty()) os << "  budget:  " << r.budget << "\n";
  }
  for (const Report& sub : subgraphs) os << "\nsubgraph " << sub.to_text();
  return os.str();
}

namespace {

nlohmann::ordered_json json_of(const Report& rep) {
  nlohmann::ordered_json j;
  j["graph"] = rep.graph;
  j["mode"] = rep.mode;
  j["warmup_runs"] = rep.warmup_runs;
  j["warmup_record"] = rep.warmup_record;
  j["planned"] = rep.planned;
  j["folded_ops"] = rep.folded_ops;
  j["replans"] = rep.replans;
  j["steps"] = rep.steps;
  j["kernel_calls"] = rep.kernel_calls;
  j["guard_misses"] = rep.guard_misses;
  j["compilations"] = rep.compilations;
  j["compile_ms_total"] = rep.compile_ms_total;
  j["compile_wall_ms"] = rep.compile_wall_ms;
  j["disk_loads"] = rep.disk_loads;
  j["signatures"] = rep.signatures;
  j["memory"] = {{"arena_buffers", rep.arena_buffers},
                 {"arena_bytes", rep.arena_bytes},
                 {"arena_unshared_bytes", rep.arena_unshared_bytes},
                 {"dynamic_bytes", rep.dynamic_bytes},
                 {"call_states", rep.call_states}};
  j["symbols"] = rep.symbols;
  j["ops"] = nlohmann::ordered_json::array();
  for (const OpReport& o : rep.ops) {
    nlohmann::ordered_json e;
    e["node"] = o.node;
    e["op"] = std::string(op_name(o.op));
    e["stable"] = o.stable;
    if (!o.stable) {
      e["changed_at_run"] = o.changed_at_run;
      e["change"] = o.change;
      e["symbolic_shapes"] = o.symbolic_shapes;
      if (!o.why_not_dynamic.empty()) e["why_not_dynamic"] = o.why_not_dynamic;
    }
    e["region"] = o.region >= 0 ? nlohmann::ordered_json(o.region) : nlohmann::ordered_json();
    if (o.region < 0) e["reason"] = o.reason;
    e["median_ns"] = o.median_ns;
    e["bytes_read"] = o.bytes_read;
    e["bytes_written"] = o.bytes_written;
    e["allocations"] = o.allocations;
    j["ops"].push_back(std::move(e));
  }
  j["regions"] = nlohmann::ordered_json::array();
  for (const RegionReport& r : rep.regions)
    j["regions"].push_back({{"id", r.id},
                            {"nodes", r.nodes},
                            {"inputs", r.inputs},
                            {"outputs", r.outputs},
                            {"value_guarded", r.value_guarded},
                            {"profiled_ns", r.profiled_ns},
                            {"dynamic", r.dynamic},
                            {"symbols", r.symbols},
                            {"stable_ops", r.stable_ops},
                            {"dynamic_bytes", r.dynamic_bytes},
                            {"compiled", r.compiled},
                            {"why_interpreted", r.why_interpreted},
                            {"compiles", r.compiles},
                            {"cache_hit", r.cache_hit},
                            {"disk_hit", r.disk_hit},
                            {"compiling", r.compiling},
                            {"active_from_call", r.active_from_call},
                            {"compile_ms", r.compile_ms},
                            {"budget", r.budget},
                            {"interpreted_calls", r.interpreted_calls},
                            {"kernel_calls", r.kernel_calls},
                            {"guard_misses", r.guard_misses},
                            {"threads", r.threads},
                            {"threads_why", r.threads_why}});
  j["subgraphs"] = nlohmann::ordered_json::array();
  for (const Report& sub : rep.subgraphs) j["subgraphs"].push_back(json_of(sub));
  return j;
}

}  // namespace

std::string Report::to_json() const { return json_of(*this).dump(2) + "\n"; }

// Ops are boxes (changed ones red, ops outside regions grey), data edges connect producers to
// consumers, and each region is a cluster.
std::string Report::to_dot() const {
  std::ostringstream os;
  os << "digraph \"" << dot_escape(graph) << "\" {\n  rankdir=TB;\n  node [shape=box, "
     << "style=filled, fontname=\"Helvetica\"];\n";
  std::map<std::string, size_t> producer;  // value name -> op index
  for (size_t i = 0; i < ops.size(); ++i)
    for (const std::string& v : ops[i].outputs) producer[v] = i;
  auto node_line = [&](size_t i, const char* indent) {
    const OpReport& o = ops[i];
    const char* color = !o.stable ? "#f4a6a6" : (o.region >= 0 ? "#b7e1b0" : "#dddddd");
    os << indent << "n" << i << " [label=\"" << dot_escape(o.node) << "\\n"
       << op_name(o.op) << (o.stable ? "" : "\\nchanged at run " + std::to_string(o.changed_at_run))
       << "\", fillcolor=\"" << color << "\"];\n";
  };
  for (const RegionReport& r : regions) {
    os << "  subgraph cluster_" << r.id << " {\n    label=\"region " << r.id << " ("
       << us(r.profiled_ns) << " us, " << r.threads << (r.threads == 1 ? " thread" : " threads")
       << ")\";\n    style=rounded;\n";
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].region == r.id) node_line(i, "    ");
    os << "  }\n";
  }
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].region < 0) node_line(i, "  ");
  for (size_t i = 0; i < ops.size(); ++i)
    for (const std::string& v : ops[i].inputs)
      if (auto it = producer.find(v); it != producer.end())
        os << "  n" << it->second << " -> n" << i << ";\n";
  os << "}\n";
  return os.str();
}

}  // namespace sgraph
