// sgraph/session.h — runs a graph.
//
// A Session owns a verified graph and runs it. Its first `warmup_runs` calls interpret the graph
// while recording every op's shapes and cost; after the last of them it plans: ops whose shapes
// never changed are stable, and connected stable compilable ops are grouped into regions (the
// JIT compiles one fused kernel per region). report() says what was decided and why.
//
// The second tier (SessionOptions::dynamic): a changed op's dims that changed during warm-up are
// symbols (dims equal in every run are one symbol; see ShapeTracker), and connected changed ops
// whose lowerings take symbolic dims form dynamic regions, compiled once: each call binds the
// symbols from the region's input shapes, so a new value of a symbol runs the same kernel (a
// guard hit); only a static dim that differs, or a broken relation between dims, misses and
// falls back to the interpreter. Stable and changed ops share a kernel only with merge_tiers. Ops
// whose lowering cannot take symbolic dims stay interpreted, with the reason in
// OpReport::why_not_dynamic.
//
// Compile cost: kernels may come from an on-disk cache shared by processes (cache_dir), and may be
// compiled on threads of the Session's own while calls go on interpreted (background_compile).
//
// CompileMode::per_signature is the baseline of per-signature compilers (XLA-style) for
// comparison: each new set of input shapes is interpreted once, then the whole graph is compiled
// for those shapes (every compilable op in a region, every region compiled afresh, no kernel
// shared with another signature); calls with a signature seen before run its compiled plan.
//
// Threads: any number of threads may call run() on one Session at once, and each gets the result
// a serial run of the same inputs would give. The compiled plan (steps, kernels, guards, packed
// weights) is immutable once published and shared by all calls; each call takes its own state
// (arena, scratch blocks, interpreter buffers) from a pool that grows to the number of calls
// running at once. Warm-up runs are observed one at a time (other calls made meanwhile wait for
// them); planning, re-planning and installing kernels happen on one thread at a time and publish a
// new plan without stopping calls in flight, which finish on the plan they started with. A re-plan
// is made by the call that found it due (the others keep serving meanwhile). report(),
// wait_compiled() and compiling() may be called from any thread. Kernels are shared with every
// Session of the same Runtime (sgraph/runtime.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sgraph/graph.h"
#include "sgraph/report.h"
#include "sgraph/runtime.h"

namespace sgraph {

// $SGRAPH_CACHE_DIR, or "" when unset.
std::string env_cache_dir();

// How a Session compiles (unless SessionOptions::interpret_only): profile-guided (warm-up,
// then regions of the ops whose shapes never changed), or the whole graph per input signature.
enum class CompileMode { profile_guided, per_signature };

struct SessionOptions {
  int warmup_runs = 3;          // interpreted, profiled runs before planning
  int min_region_ops = 2;       // smallest region worth compiling
  bool interpret_only = false;  // no profiling, no planning: every run interprets
  // A region's changed ops are re-planned once it has missed its guard this many times since it
  // was planned AND at least as often as its kernel ran over its recent calls (hits and misses
  // decay by half every few hundred calls, so a shift of traffic to other shapes re-plans within
  // a few hundred calls however long the old shapes were served): an occasional other shape (an
  // epoch's smaller last batch) keeps the kernel and just falls back for that call. At a re-plan,
  // the call's inputs are interpreted once more, observed like a warm-up run: the dims that changed
  // while serving are then symbols, so the changed ops can join dynamic regions. A dynamic
  // region re-plans after this many misses on a dim its plan holds static (or a relation between
  // dims) whatever its hits: that dim then becomes a symbol, once (an epoch's last batch of
  // another size makes the batch dim symbolic instead of falling back every epoch).
  int max_guard_misses = 4;
  bool jit = true;  // compile regions (else they are planned but interpreted)
  // Nodes whose inputs are all constants become constants when the Session is made (exporters'
  // shape arithmetic over constants, a weight's Transpose): their readers then see constant
  // operands, and graph() is the folded graph. Within a size bound
  // (src/runtime/constant_folding.h); Report::folded_ops counts them. Never with interpret_only,
  // which runs the graph as given (the reference the compiled paths are checked against).
  bool fold_constants = true;
  // The second tier: changed ops whose changing dims the warm-up saw as symbols join dynamic
  // regions, compiled once for every value of those symbols (see Report's RegionReport::dynamic).
  // False: changed ops are interpreted.
  bool dynamic = true;
  // Merging tiers: a static region next to a dynamic one becomes part of it (one kernel, the
  // stable ops' dims constants in it) where the merged region compiles as a dynamic one; the
  // report still shows every op's stable/changed flag. Off by default, by measurement
  // (bench/bench_tiers.cpp, bench/README.md): one kernel saves a call and a guard (within noise
  // of two kernels), but a stable value read by every row of the dynamic part is then recomputed
  // per row (11x slower at 256 rows), since fused producers are recomputed at each use.
  bool merge_tiers = false;
  int threads = 0;  // max threads per region kernel; 0 = hardware concurrency
  CompileMode mode = CompileMode::profile_guided;  // per_signature: no warm-up, no re-plans
  // The on-disk kernel cache: compiled kernels' object code is kept in this directory (made when
  // missing) and loaded by any later Session or process that needs the same code, so a restarted
  // service or another replica compiles nothing. Entries are keyed by the code, the CPU and the
  // sgraph and LLVM builds; a corrupt or foreign entry is ignored and rewritten; replicas may share
  // one directory. Default: $SGRAPH_CACHE_DIR, or no disk cache when it is unset or "".
  std::string cache_dir = env_cache_dir();
  // Background compilation (for services): planning still happens in the call that ends the
  // warm-up (or re-plans), but the kernels are compiled on threads of the Session's own (as many
  // as the JIT's compile threads, SGRAPH_COMPILE_THREADS) while calls go on through the
  // interpreter; each call first installs the kernels finished since the previous one (a call in
  // flight finishes on what it started with). Results are the same either way; no call waits for
  // the JIT. wait_compiled() blocks until all are installed. False: the call that plans compiles
  // the plan's kernels, all at once on those threads (tests, benchmarks, tools). per_signature
  // mode always compiles synchronously.
  bool background_compile = false;
  int64_t cache_max_bytes = int64_t{256} << 20;  // least recently used entries removed beyond it
  // The compile budget: the calls a region is expected to serve. A region whose predicted saving
  // per call (its ops' profiled interpreted time less its kernel's predicted time, the bytes it
  // reads and writes at memory bandwidth) times this is less than its predicted compile time (per
  // op, calibrated by the Session's own compiles) is deferred: it runs interpreted, and is
  // compiled once the calls it has run that way would have repaid the compile (so it costs at
  // most twice what the best choice in hindsight would) — unless its kernel is in the JIT's
  // memory or disk cache already: then it costs no compile and is taken at once. A region with no
  // predicted saving stays interpreted. The report says which and why (RegionReport::budget). 0:
  // every region is compiled when planned (the default: tools, tests and benchmarks compare
  // kernels).
  int64_t compile_horizon = 0;
  // Whose JIT and kernel cache the Session uses (its subgraphs' Sessions use the same): null, the
  // process's (Runtime::process()).
  std::shared_ptr<Runtime> runtime = nullptr;
  // A graph whose metadata holds a warm-up record (kWarmupRecordKey: a model written by
  // save_planned_onnx / `sgraph export`) is planned when the Session is made, from that record,
  // with no warm-up run; its kernels come from the disk cache or are compiled then (on the
  // compiler threads with background_compile). A record of fewer than warmup_runs runs (an If
  // branch taken less often during the warm-up) is where the warm-up goes on from. A record made
  // for another graph (the model edited since) or damaged is ignored, with the reason in
  // Report::warmup_record, and the Session warms up as usual. False: always warm up.
  bool use_warmup_record = true;
  // With background_compile, how much lower the compiler threads run than the calls: a Linux
  // nice increment (0-19) for each of them and the threads their compiles start. On a loaded
  // machine the interpreted calls then keep their speed, but the kernels may take far longer to
  // come (ppocr served back to back on 2 vCPUs, nice 10: p99 latency over 600 calls halved, and
  // the re-planned kernels not all in after 600 calls against ~275 at 0; bench/README.md). Idle
  // cores compile at full speed either way. 0 (default): the calls' priority.
  int background_nice = 0;
  // Calls collect their per-op wall times for last_op_times() (Session::set_op_times changes it
  // later). Off by default: collecting them costs a served call of a small model ~10% of its time
  // (silero_vad_v5 at 1x512: 0.053 -> 0.047 ms without), which a service rarely wants to pay.
  bool op_times = false;
};

// The metadata key of a model's warm-up record (SessionOptions::use_warmup_record).
inline constexpr const char* kWarmupRecordKey = "sgraph.warmup_record";

struct OpTime {
  std::string node;
  OpKind op;
  int64_t ns;
};

class Session {
 public:
  // Runs infer_and_verify() on the graph; throws sgraph::Error if it is invalid.
  explicit Session(Graph graph, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Inputs in the order of graph().inputs; outputs in the order of graph().outputs.
  // Results are those of the interpreter: a compiled region runs only when its guard holds (its
  // inputs have the shapes and dtypes it was compiled for, and inputs its shapes are computed from
  // hold the values they had), else its ops are interpreted. A call that throws sgraph::Error
  // (a wrong input, an op rejecting its values, a kernel's runtime failure) changes nothing: it is
  // not a warm-up run, counts no guard miss and causes no re-plan.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Inputs and outputs by name.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);

  // The warm-up, given (for services: live requests are then never warm-up runs). Each data set
  // (inputs in the order of graph().inputs) is interpreted once and observed like a warm-up run,
  // then the Session plans, whatever warmup_runs says. Give the shapes traffic will have: ops whose
  // shapes differ between data sets are changed, and the dims that differ become symbols of
  // dynamic regions. On a Session already planned, the data sets are observed and it re-plans
  // (ops whose shapes differ from the earlier runs become changed). Every data set's inputs are
  // checked first (a wrong count, dtype or shape throws sgraph::Error and changes nothing); a data
  // set whose run throws (an op rejecting its values) is not observed, the error is thrown, and the
  // sets before it stay observed, unplanned. Throws when data_sets is empty or in per_signature or
  // interpret_only mode (nothing to warm up).
  void warm_up(const std::vector<std::vector<Tensor>>& data_sets);

  // The graph this Session runs: the one it was given, with its nodes over constants folded
  // (SessionOptions::fold_constants; node and value names are kept, the folded nodes are gone).
  const Graph& graph() const;
  // The options it was made with (set_op_times does not change them: see op_times()).
  const SessionOptions& options() const;
  // Per-op wall times of the most recent run that returned and collected them (empty before
  // one), in execution order: each op the interpreter ran (a compiled region's ops are not listed),
  // an If after the ops of the branch it ran, named "<If node>/<branch>/<node>".
  std::vector<OpTime> last_op_times() const;
  // Whether calls begun from now on collect their op times (SessionOptions::op_times).
  void set_op_times(bool on);
  bool op_times() const;  // the current setting
  // True once the warm-up runs are done and regions are planned (per_signature: once a signature
  // has been compiled).
  bool planned() const;
  // Stability, regions and profile per op (regions only once planned).
  Report report() const;
  // Background compilation: blocks until every kernel being compiled (in subgraphs' Sessions too)
  // is finished, and installs them for the next call. Immediate otherwise.
  void wait_compiled();
  // True while a kernel is being compiled in the background or waits to be installed.
  bool compiling() const;
  // The warm-up record the current plan was made from (the warm-up runs, and the calls re-plans
  // observed) — or, before the Session has planned, the warm-up runs so far —, as text for the
  // model's metadata under kWarmupRecordKey, naming the graph's nodes and values by `node_names` /
  // `value_names` (by index and id; unique, non-empty: the names the model is written with).
  // Throws sgraph::Error before the first warm-up run, and in per_signature or interpret_only
  // mode.
  std::string warmup_record(const std::vector<std::string>& node_names,
                            const std::vector<std::string>& value_names) const;
  // The warm-up records of the subgraphs' (If branches') Sessions that have run, planned or not (a
  // branch the warm-up took fewer times than warmup_runs: its Session made from the record warms
  // up on from those runs), by label
  // ("<node>/<attribute>", nested ones "<node>/<attribute>/<node>/<attribute>"), each naming the
  // subgraph's nodes and values by their own names. A model's metadata holds them under
  // "<kWarmupRecordKey>:<label>"; a Session made from it gives each subgraph's Session its record.
  std::map<std::string, std::string> subgraph_warmup_records() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sgraph
