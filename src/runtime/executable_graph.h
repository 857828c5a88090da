// ExecutableGraph: the plan a Session serves with. Steps follow a topological order of the graph
// in which every region is contracted to one step. A region step calls the region's kernel when
// the region's inputs have the shapes it was compiled for (the shape guard); otherwise, or when it
// has no kernel, it runs the region's ops in the interpreter, which is always correct, and counts
// a guard miss. Intermediates are released after their last use, as in the interpreter.
//
// Memory: values whose shapes the plan knows (region outputs, outputs of stable interpreted ops)
// get buffers in an arena (one per call state, allocated once); values live at the same time never
// share memory (see memory_plan.h). A view shares its input's buffer, so a chain of views is one
// buffer living as long as its longest-lived member. Graph outputs (the caller keeps them),
// anything a view chain ties to a graph input or output, and constants stay out of the arena. A
// planned value whose shape differs at run time (a guard miss) gets a fresh buffer instead.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "ir/sym_shape.h"
#include "jit/jit.h"
#include "jit/parallel.h"
#include "jit/region_compiler.h"
#include "runtime/interpreter.h"
#include "runtime/region_builder.h"

namespace sgraph {

// A region's serving counters. Every copy of its plan (a Session publishes a new copy of its plan
// when kernels are installed) shares one, and calls running at the same time add to it: a call
// adds its counts when it returns, and a call that throws adds none.
struct RegionStats {
  std::atomic<int64_t> kernel_calls{0}, guard_misses{0};
  // Calls that ran the region's ops interpreted while it had no kernel (a region the compile
  // budget deferred, or one still compiling): what the budget weighs against the compile.
  std::atomic<int64_t> interpreted_calls{0};
  std::atomic<int64_t> misses_since_plan{0};
  // A dynamic region's misses on a dim static in its plan or a relation between dims (not on a
  // dtype or a size below the least): re-planning makes that dim a symbol, so these re-plan
  // whatever the hits (a region is then compiled once per newly symbolic set of dims).
  std::atomic<int64_t> shape_misses_since_plan{0};
  // Bytes of the blocks a dynamic region keeps from call to call (its outputs, its scratch of
  // symbolic size), over every call state of the plans sharing these stats.
  std::atomic<int64_t> dynamic_bytes{0};
  // Hits and misses of the recent calls: both are halved whenever their sum reaches
  // kRecentWindow, so they weigh the last few hundred calls and forget older ones. A re-plan
  // compares these, not the totals, so a region that served a million calls at one shape still
  // re-plans within a few hundred calls once traffic moves to other shapes. (Halving races with
  // calls adding theirs: an add between the load and the subtraction survives; the split is a
  // heuristic anyway.)
  static constexpr int64_t kRecentWindow = 512;
  std::atomic<int64_t> recent_hits{0}, recent_misses{0};
  void note_recent(int64_t hits, int64_t misses) {
    const int64_t h = recent_hits += hits;
    const int64_t m = recent_misses += misses;
    if (h + m < kRecentWindow) return;
    std::lock_guard<std::mutex> lock(decay_mu);
    if (recent_hits + recent_misses < kRecentWindow) return;  // another call halved them
    recent_hits -= recent_hits / 2;
    recent_misses -= recent_misses / 2;
  }
  void reset_since_plan() {
    misses_since_plan = 0;
    shape_misses_since_plan = 0;
    recent_hits = 0;
    recent_misses = 0;
  }

 private:
  std::mutex decay_mu;
};

// A region's plan: immutable once its ExecutableGraph serves (what changes from call to call is
// in the graph's call states, the counters in `stats`).
struct RegionPlan {
  Region region;
  // The guard, everything the kernel was specialised on that a call can change: the inputs'
  // shapes (dtypes are the graph's), and the values of the inputs the region's shapes are
  // computed from (see value_guards.h).
  std::vector<Shape> input_shapes;                      // one per Region::inputs
  std::vector<std::pair<size_t, Tensor>> value_guards;  // (index into Region::inputs, values)
  std::vector<Shape> output_shapes;                     // one per Region::outputs
  std::vector<DType> output_dtypes;
  // A dynamic region (region.dynamic; input_shapes, output_shapes and value_guards empty): the
  // symbolic shapes of its inputs and outputs, over its own symbols 0 .. symbols.size()-1 (each
  // named after the graph's symbol). The guard checks every input's dtype and binds the symbols
  // from the inputs' shapes (ir/sym_shape.h's bind_all: static dims and relations must hold);
  // the kernel gets the symbols as `dims`, and each output is made at its shape for them, in a
  // block kept from call to call and grown to the largest size seen (outputs are outside the
  // arena).
  std::vector<SymShape> input_sym, output_sym;
  std::vector<std::pair<ValueId, SymShape>> planned_sym;  // every value's it reads or makes
  // Every symbolic dim of planned_sym once, with the least value the guard takes for it: 1, or 0
  // where warm-up saw it empty. A dim the symbols make smaller (a Conv's output for an input
  // smaller than its kernel, where the interpreter reports an error) is a miss. Also what the
  // region's kernels need beyond that (jit::dynamic_needs: a slice of static length k from a
  // symbolic dim needs that dim at least k).
  std::vector<std::pair<SymDim, int64_t>> dim_checks;
  // Inputs read as a Reshape's shape (index into Region::inputs, the elements as forms of the
  // symbols): the guard checks each element against its form at the bound symbols.
  std::vector<std::pair<size_t, SymShape>> value_sym_guards;
  std::vector<std::string> symbols;
  jit::KernelFn fn = nullptr;  // nullptr: the region's ops are interpreted
  uint64_t kernel_handle = 0;  // the JIT's handle of fn (0: none)
  int64_t scratch_bytes = 0;   // the kernel's scratch block (0: none)
  // A dynamic kernel's scratch parts of symbolic size after those (jit::CompiledRegion): the
  // block is sized per call and grown to the largest size seen.
  jit::SymScratch scratch_sym;
  bool cache_hit = false;  // the kernel is one compiled before for the same code
  bool disk_hit = false;   // the kernel was loaded from the disk cache
  // Background compilation (Session): the id of the job compiling its kernel (0: none), and the
  // session call that first used the kernel installed then.
  uint64_t compile_job = 0;
  int active_from_call = 0;
  int compiles = 0;  // how many times this region was compiled
  double compile_ms = 0;
  std::string why_interpreted;  // when fn is nullptr
  // The compile budget (SessionOptions::compile_horizon): the predicted saving of a kernel per
  // call and the predicted compile time, what was decided and why; a deferred region keeps its
  // compile job until the calls it runs interpreted would have repaid the compile.
  int64_t saving_ns = 0;
  double predicted_compile_ms = 0;
  std::string budget;
  std::function<jit::CompiledRegion(jit::Jit&, bool cached_only)> deferred_job;
  // Threads for the kernel's loop nests, from the region's profiled time, and why; ctx (made by
  // the planner, one per plan; copies of a plan share it) is what the kernel gets as its ctx.
  int threads = 1;
  std::string threads_why;
  std::shared_ptr<KernelContext> ctx;
  // Counters while serving, shared by the copies of this plan.
  std::shared_ptr<RegionStats> stats = std::make_shared<RegionStats>();
};

// What the warm-up saw, for the memory plan: outputs of stable interpreted ops are planned at
// these shapes. Empty: only region outputs are planned.
struct WarmupShapes {
  std::vector<Shape> values;  // per value id: its shape in the warm-up
  std::vector<bool> stable;   // per node: its shapes never changed
};

struct ArenaStats {
  size_t buffers = 0;          // planned values
  int64_t arena_bytes = 0;     // the arena: the plan's peak
  int64_t unshared_bytes = 0;  // the planned buffers' sum: the arena without sharing
};

// Runs a plan. run() may be called from any number of threads at once: the plan is read-only
// while it serves, and each call takes a call state (the environment's buffers: an arena, a
// dynamic region's output and scratch blocks, the interpreter's scratch) from a pool, making one
// when all are in use, and returns it when done; the pool keeps as many as calls ran at once.
class ExecutableGraph {
 public:
  // `g` must outlive this; regions must be a valid partition of g (see build_regions). Interpreted
  // control-flow ops run their subgraphs through `subgraphs` (see ops::SubgraphRunner).
  ExecutableGraph(const Graph& g, std::vector<RegionPlan> regions, const WarmupShapes& warmup = {},
                  ops::SubgraphRunner* subgraphs = nullptr);
  // The same steps and memory plan with other plans of the same regions (kernels installed); the
  // regions' stats are shared with `other`'s, the call states are not.
  ExecutableGraph(const ExecutableGraph& other, std::vector<RegionPlan> regions);
  ~ExecutableGraph();
  ExecutableGraph(const ExecutableGraph&) = delete;
  ExecutableGraph& operator=(const ExecutableGraph&) = delete;

  // Inputs in graph-input order. Observers see every interpreted op (including ops of regions
  // that fell back), not the ops inside a kernel call. Thread-safe (observers are the caller's).
  std::vector<Tensor> run(std::span<const Tensor> inputs,
                          std::span<OpObserver* const> observers = {}) const;

  size_t num_steps() const { return steps_.size(); }
  const std::vector<RegionPlan>& regions() const { return regions_; }
  const ArenaStats& arena_stats() const { return arena_stats_; }
  // Call states made so far (each has an arena of arena_stats().arena_bytes).
  size_t call_states() const;
  // The arena of the call state the next call takes (tests; null when there is none yet).
  const void* arena_data() const;
  // Outputs outside the arena that the next call's state may reuse, per region (tests).
  std::vector<const void*> kept_outputs(size_t region) const;

 private:
  struct Step {
    int32_t node = -1;    // an interpreted op, or
    int32_t region = -1;  // a region
  };
  struct Planned {  // a value with a buffer in the arena
    ValueId value;
    Shape shape;
    int64_t offset;
  };
  struct RegionCall;
  struct CallState;
  void plan_arena(const WarmupShapes& warmup, const std::vector<int32_t>& step_of_node,
                  const std::vector<int32_t>& last_use);
  std::unique_ptr<CallState> make_state() const;
  bool guard_holds(const RegionPlan& r, RegionCall& c, const std::vector<Tensor>& env) const;
  Tensor dynamic_output(const RegionPlan& r, RegionCall& c, size_t k) const;
  int64_t scratch_need(const RegionPlan& r, const RegionCall& c) const;
  void call_kernel(const RegionPlan& r, RegionCall& c, CallState& state,
                   std::vector<Tensor>& env) const;

  const Graph& g_;
  ops::SubgraphRunner* subgraphs_;
  std::vector<RegionPlan> regions_;
  std::vector<Step> steps_;
  std::vector<std::vector<ValueId>> release_after_;  // per step
  std::vector<Planned> planned_;
  ArenaStats arena_stats_;
  mutable std::mutex pool_mu_;
  mutable std::vector<std::unique_ptr<CallState>> pool_;  // the states no call holds
  mutable size_t states_made_ = 0;
};

}  // namespace sgraph
