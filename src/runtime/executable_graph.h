// ExecutableGraph: the plan a Session serves with. Steps follow a topological order of the graph
// in which every region is contracted to one step. A region step calls the region's kernel when
// the region's inputs have the shapes it was compiled for (the shape guard); otherwise, or when it
// has no kernel, it runs the region's ops in the interpreter, which is always correct, and counts
// a guard miss. Intermediates are released after their last use, as in the interpreter.
//
// Memory: values whose shapes the plan knows (region outputs, outputs of stable interpreted ops)
// get buffers in one arena, allocated once; values live at the same time never share memory (see
// memory_plan.h). A view shares its input's buffer, so a chain of views is one buffer living as
// long as its longest-lived member. Graph outputs (the caller keeps them), anything a view chain
// ties to a graph input or output, and constants stay out of the arena. A planned value whose
// shape differs at run time (a guard miss) gets a fresh buffer instead.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ir/sym_shape.h"
#include "jit/jit.h"
#include "jit/parallel.h"
#include "runtime/interpreter.h"
#include "runtime/region_builder.h"

namespace sgraph {

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
  std::vector<std::string> symbols;
  std::vector<int64_t> sym_values;  // the latest call's
  std::vector<bool> sym_bound;
  std::vector<std::shared_ptr<void>> out_blocks;
  std::vector<int64_t> out_capacity;  // bytes of each block
  jit::KernelFn fn = nullptr;         // nullptr: the region's ops are interpreted
  int64_t scratch_bytes = 0;          // the kernel's scratch block (0: none)
  // A dynamic kernel's scratch parts of symbolic size after those (jit::CompiledRegion): the
  // block is sized per call and grown to the largest size seen.
  std::vector<std::pair<int64_t, SymShape>> scratch_sym;
  std::shared_ptr<void> scratch;  // allocated on the first call, kept for the next ones
  int64_t scratch_capacity = 0;   // its bytes
  bool cache_hit = false;         // the kernel is one compiled before for the same code
  bool disk_hit = false;          // the kernel was loaded from the disk cache
  // Background compilation (Session): the id of the job compiling its kernel (0: none), and the
  // session call that first used the kernel installed then.
  uint64_t compile_job = 0;
  int active_from_call = 0;
  int compiles = 0;  // how many times this region was compiled
  double compile_ms = 0;
  std::string why_interpreted;  // when fn is nullptr
  // Threads for the kernel's loop nests, from the region's profiled time, and why; ctx (made by
  // the planner, one per plan; copies of a plan share it) is what the kernel gets as its ctx.
  int threads = 1;
  std::string threads_why;
  std::shared_ptr<KernelContext> ctx;
  // Counters while serving.
  int64_t kernel_calls = 0, guard_misses = 0;
  int64_t misses_since_plan = 0, hits_since_plan = 0;
  // A dynamic region's misses on a dim static in its plan or a relation between dims (not on a
  // dtype or a size below the least): re-planning makes that dim a symbol, so these re-plan
  // whatever the hits (a region is then compiled once per newly symbolic set of dims).
  int64_t shape_misses_since_plan = 0;
  bool last_miss_on_shape = false;  // (set by guard_holds)
  // Outputs outside the arena (graph outputs, values a view ties to one): the previous call's
  // buffers, reused for the next call when nothing else holds them (writing into fresh large
  // allocations costs page faults that can exceed the kernel).
  std::vector<Tensor> last_outputs;
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

class ExecutableGraph {
 public:
  // `g` must outlive this; regions must be a valid partition of g (see build_regions). Interpreted
  // control-flow ops run their subgraphs through `subgraphs` (see ops::SubgraphRunner).
  ExecutableGraph(const Graph& g, std::vector<RegionPlan> regions, const WarmupShapes& warmup = {},
                  ops::SubgraphRunner* subgraphs = nullptr);

  // Inputs in graph-input order. Observers see every interpreted op (including ops of regions
  // that fell back), not the ops inside a kernel call.
  std::vector<Tensor> run(std::span<const Tensor> inputs,
                          std::span<OpObserver* const> observers = {});

  size_t num_steps() const { return steps_.size(); }
  std::vector<RegionPlan>& regions() { return regions_; }
  const std::vector<RegionPlan>& regions() const { return regions_; }
  const ArenaStats& arena_stats() const { return arena_stats_; }
  const void* arena_data() const { return arena_.get(); }

 private:
  struct Step {
    int32_t node = -1;    // an interpreted op, or
    int32_t region = -1;  // a region
  };
  void plan_arena(const WarmupShapes& warmup, const std::vector<int32_t>& step_of_node,
                  const std::vector<int32_t>& last_use);
  bool guard_holds(RegionPlan& r, const std::vector<Tensor>& env) const;
  Tensor dynamic_output(RegionPlan& r, size_t k) const;
  int64_t scratch_need(const RegionPlan& r) const;
  void call_kernel(RegionPlan& r, std::vector<Tensor>& env) const;

  const Graph& g_;
  std::vector<RegionPlan> regions_;
  std::vector<Step> steps_;
  std::vector<std::vector<ValueId>> release_after_;  // per step
  std::shared_ptr<void> arena_;
  std::vector<Tensor> premade_;  // per value id: its arena buffer, or undefined (empty: none)
  ArenaStats arena_stats_;
  NodeRunner runner_;
};

}  // namespace sgraph
