// `sgraph export MODEL [--warmup DIR] -o OUT [--threads N] [--no-compile] [--cache-dir DIR |
// --no-cache]`: warms a Session up on DIR's data sets (default: MODEL's own, for a test folder),
// then writes the planned model: each region one node calling a model-local ONNX function, the
// warm-up record in the metadata (save_planned_onnx). Kernels are compiled into the disk cache
// as well (a deploy step ships the planned model and a warm cache), unless --no-compile.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli.h"
#include "sgraph/sgraph.h"

namespace sgraph::cli {

namespace {

// The planned If branches' regions and ops, nested ones included.
void branch_counts(const std::vector<Report>& subs, size_t& planned, size_t& ops, size_t& regions,
                   size_t& in_regions) {
  for (const Report& sub : subs) {
    if (sub.planned) {
      ++planned;
      ops += sub.ops.size();
      regions += sub.regions.size();
      for (const RegionReport& reg : sub.regions) in_regions += reg.nodes.size();
    }
    branch_counts(sub.subgraphs, planned, ops, regions, in_regions);
  }
}

// Kernels compiled and loaded from disk by a Session and its branches' Sessions.
void kernel_counts(const Report& r, int& compiled, int& loaded) {
  compiled += r.compilations;
  loaded += r.disk_loads;
  for (const Report& sub : r.subgraphs) kernel_counts(sub, compiled, loaded);
}

}  // namespace

int cmd_export(const Args& args) {
  if (args.positional.size() != 1) throw UsageError("export: expected one MODEL");
  const std::vector<std::string> outs = args.all("-o");
  if (outs.empty()) throw UsageError("export: expected -o OUT.onnx");
  const std::string& model = args.positional[0];
  std::string dir = model;
  if (!args.all("--warmup").empty()) dir = args.all("--warmup").back();
  SG_CHECK(std::filesystem::is_directory(dir))
      << model << ": no data sets to warm up on (give --warmup DIR, a folder of test_data_set_<k>/"
      << "input_<i>.pb)";
  const std::vector<std::vector<Tensor>> data_sets = load_data_set_inputs(dir);
  SG_CHECK(!data_sets.empty()) << dir << ": no data sets (test_data_set_<k>/input_<i>.pb)";

  // The graph as the planned model will read back: sgraph writes some older op forms anew, and the
  // warm-up record must be made for the graph a reader gets.
  Graph loaded = load_model(model);
  loaded.metadata.erase(kWarmupRecordKey);  // (a planned model exported again is warmed up anew)
  Graph g = load_onnx_bytes(save_onnx_bytes(loaded), model);
  const size_t ops = g.nodes.size();
  // The warm-up plans without compiling (the plan is the same); the kernels are compiled for the
  // planned model as read back, since a kernel's cache key is its code, and the code follows the
  // graph's node and value order, which reading the functions back changes.
  SessionOptions o;
  o.threads = static_cast<int>(args.integer("--threads", 0, 0));
  o.cache_dir = tool_cache_dir(args);
  o.jit = false;
  Session s(std::move(g), o);
  s.warm_up(data_sets);
  save_planned_onnx(s, outs.back());
  const bool compile = args.all("--no-compile").empty();
  Report planned;
  double ms = 0;
  if (compile) {
    o.jit = true;
    const auto t0 = std::chrono::steady_clock::now();
    Session back(load_onnx(outs.back()), o);
    // Its If branches get their Sessions (planned from their records) when first run.
    for (const std::vector<Tensor>& set : data_sets) back.run(set);
    back.wait_compiled();
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    planned = back.report();
    SG_CHECK(planned.warmup_record == "loaded")
        << outs.back() << ": the planned model does not load planned (" << planned.warmup_record
        << ")";
  }

  const Report r = s.report();
  int stable = 0;
  size_t in_regions = 0;
  for (const OpReport& op : r.ops) stable += op.stable;
  for (const RegionReport& reg : r.regions) in_regions += reg.nodes.size();
  std::printf("warm-up: %zu data sets from %s\n", data_sets.size(), dir.c_str());
  std::printf("ops:     %d stable, %zu changed\n", stable, ops - static_cast<size_t>(stable));
  for (const std::string& sym : r.symbols) std::printf("symbol:  %s\n", sym.c_str());
  std::printf("regions: %zu, holding %zu of %zu ops\n", r.regions.size(), in_regions, ops);
  std::printf("nodes:   %zu before, %zu after (each region one function call)\n", ops,
              ops - in_regions + r.regions.size());
  size_t branches = 0, branch_ops = 0, branch_regions = 0, branch_in_regions = 0;
  branch_counts(r.subgraphs, branches, branch_ops, branch_regions, branch_in_regions);
  if (branches > 0)
    std::printf(
        "branches: %zu planned If branches, %zu regions holding %zu of their %zu ops: %zu "
        "nodes after\n",
        branches, branch_regions, branch_in_regions, branch_ops,
        branch_ops - branch_in_regions + branch_regions);
  int compiled = 0, from_disk = 0;
  kernel_counts(planned, compiled, from_disk);
  if (compile)
    std::printf("kernels: %d compiled, %d from the disk cache, in %.1f ms (%s)\n", compiled,
                from_disk, ms,
                o.cache_dir.empty() ? "no disk cache" : ("into " + o.cache_dir).c_str());
  std::printf("wrote:   %s\n", outs.back().c_str());
  return 0;
}

}  // namespace sgraph::cli
