// sgraph/report.h — what profiling and planning decided, and why.
//
// Per op: stable or changed (at which warm-up run, and what changed), the region it joined or the
// reason it did not, and its profile. Per region: its ops, boundary values, the profiled time
// of its ops and the threads its kernel got. As a text table, JSON, or Graphviz DOT (regions as
// clusters, changed ops marked; the top-level graph only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sgraph/op_list.h"

namespace sgraph {

struct OpReport {
  std::string node;
  OpKind op;
  bool stable = true;
  int changed_at_run = 0;  // 0 when stable
  std::string change;      // what changed, e.g. "input 0 'x': [2,8] -> [5,8]"
  // A changed op's shapes over the warm-up with its changing dims as symbols (Report::symbols),
  // e.g. "x[2,seq,32] -> y[2,seq,32]"; "?" for a value whose rank changed or that some run did
  // not make.
  std::string symbolic_shapes;
  // A changed op in no dynamic region: why its lowering cannot take its symbolic dims.
  std::string why_not_dynamic;
  int region = -1;        // region id, or -1
  std::string reason;     // why not in a region: changed, not compilable, ...
  int64_t median_ns = 0;  // interpreted, over the warm-up runs
  int64_t bytes_read = 0, bytes_written = 0;
  int allocations = 0;
  std::vector<std::string> inputs, outputs;  // value names, for the DOT graph
};

struct RegionReport {
  int id = 0;
  std::vector<std::string> nodes;
  std::vector<int32_t> node_ids;             // the same nodes, by index in the graph
  std::vector<std::string> inputs, outputs;  // boundary values
  // Inputs the region's shapes are computed from by value (a Shape(x) vector feeding a Reshape):
  // the guard checks their values too.
  std::vector<std::string> value_guarded;
  int64_t profiled_ns = 0;  // sum of its ops' median interpreted time
  // Dynamic: made of changed ops, compiled once with their changing dims as symbols (named as in
  // Report::symbols) that every call binds from its inputs' shapes; a new value of a symbol is a
  // guard hit. Its outputs' blocks, grown to the largest shape seen: dynamic_bytes.
  bool dynamic = false;
  std::vector<std::string> symbols;
  int stable_ops = 0;  // of a dynamic region: stable ops merged in (SessionOptions::merge_tiers)
  int64_t dynamic_bytes = 0;
  bool compiled = false;        // has a kernel
  std::string why_interpreted;  // when not compiled
  int compiles = 0;             // times this region was compiled
  bool cache_hit = false;       // its kernel is one compiled before, for the same code
  bool disk_hit = false;        // its kernel was loaded from the disk cache (SessionOptions)
  bool compiling = false;       // its kernel is being compiled in the background
  int active_from_call = 0;     // the Session call that first ran with its kernel (0: none yet)
  double compile_ms = 0;
  // The compile budget (SessionOptions::compile_horizon): "" when off; else what it predicted and
  // decided, e.g. "deferred: saves ~0.4 us a call, compiling ~60 ms repays after 150000 calls
  // (horizon 10000)".
  std::string budget;
  int64_t interpreted_calls = 0;  // calls that ran its ops interpreted, having no kernel
  int64_t kernel_calls = 0, guard_misses = 0;  // while serving
  int threads = 1;                             // threads its kernel's loop nests run on
  std::string threads_why;                     // e.g. "profiled 1.8 ms -> 2 threads"
};

struct Report {
  std::string graph;
  std::string mode;     // "interpret", "profile_guided" or "per_signature" (see CompileMode)
  int warmup_runs = 0;  // completed
  // The graph's warm-up record (SessionOptions::use_warmup_record): "" when it has none, "loaded"
  // when the plan was made from it, else why it was ignored.
  std::string warmup_record;
  bool planned = false;
  int folded_ops = 0;  // nodes folded into constants when the Session was made (fold_constants)
  // Compilation over the session's life, re-planned-away regions included: kernels compiled (a
  // kernel taken from the cache is not a compilation) and the time compiling them took; in
  // per_signature mode the input signatures compiled. The ops and regions below are then those
  // of the latest call's signature.
  int compilations = 0;
  double compile_ms_total = 0;
  int disk_loads = 0;  // kernels loaded from the disk cache (not compilations; their time is in
                       // compile_ms_total)
  // The wall time those compiles and loads took: a Session compiles a plan's kernels at once on
  // several threads (the JIT's compile threads), so this is less than compile_ms_total when
  // they overlapped. With background compilation, the time its compiler threads were busy.
  double compile_wall_ms = 0;
  int signatures = 0;
  int replans = 0;   // re-plans after repeated guard misses
  size_t steps = 0;  // steps of the executable graph (ops outside regions + regions)
  int64_t kernel_calls = 0, guard_misses = 0;  // all regions, including re-planned-away ones
  // The memory plan: values given a buffer in the arena (allocated once, reused every call), the
  // arena's size (the plan's peak) and the buffers' sum (what the arena would be without sharing).
  size_t arena_buffers = 0;
  int64_t arena_bytes = 0, arena_unshared_bytes = 0;
  int64_t dynamic_bytes = 0;  // dynamic regions' output blocks (RegionReport::dynamic_bytes)
  // Call states of the plan (one per call running at once, at most): each has an arena of
  // arena_bytes and its own dynamic blocks (dynamic_bytes is over all of them).
  size_t call_states = 0;
  // The symbols of the dims that changed during warm-up, with their values in each run, e.g.
  // "seq = 8,17,5" (see OpReport::symbolic_shapes).
  std::vector<std::string> symbols;
  std::vector<OpReport> ops;
  std::vector<RegionReport> regions;
  // Subgraphs of control-flow ops (If branches) run so far: each is served by a Session of its
  // own, with the parent's options (warm-up, regions, kernels of its own); `graph` is
  // "<node>/<attribute>", e.g. "vad/then_branch". The counters above do not include them.
  std::vector<Report> subgraphs;

  std::string to_text() const;
  std::string to_json() const;
  std::string to_dot() const;
};

}  // namespace sgraph
