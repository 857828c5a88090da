// ExecutableGraph: the plan a Session serves with. Steps follow a topological order of the graph
// in which every region is contracted to one step. A region step calls the region's kernel when
// the region's inputs have the shapes it was compiled for (the shape guard); otherwise, or when it
// has no kernel, it runs the region's ops in the interpreter, which is always correct, and counts
// a guard miss. Intermediates are released after their last use, as in the interpreter.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/interpreter.h"
#include "runtime/region_builder.h"

namespace sgraph {

// A region kernel: buffers are the region's input data pointers, then its output data pointers
// (Region::inputs, Region::outputs order); dims and ctx are reserved (nullptr).
using RegionFn = void (*)(void* const* buffers, const int64_t* dims, void* ctx);

struct RegionPlan {
  Region region;
  std::vector<Shape> input_shapes;   // the guard: one per Region::inputs
  std::vector<Shape> output_shapes;  // one per Region::outputs
  std::vector<DType> output_dtypes;
  RegionFn fn = nullptr;   // nullptr: the region's ops are interpreted
  bool cache_hit = false;  // the kernel came from the cache (an identical region)
  int compiles = 0;        // how many times this region was compiled
  double compile_ms = 0;
  std::string why_interpreted;  // when fn is nullptr
  // Counters while serving.
  int64_t kernel_calls = 0, guard_misses = 0;
  int64_t misses_since_plan = 0;
  // The previous call's outputs: reused as the next call's output buffers when nothing else holds
  // them (writing into fresh large allocations costs page faults that can exceed the kernel).
  std::vector<Tensor> last_outputs;
};

class ExecutableGraph {
 public:
  // `g` must outlive this; regions must be a valid partition of g (see build_regions).
  ExecutableGraph(const Graph& g, std::vector<RegionPlan> regions);

  // Inputs in graph-input order. Observers see every interpreted op (including ops of regions
  // that fell back), not the ops inside a kernel call.
  std::vector<Tensor> run(std::span<const Tensor> inputs,
                          std::span<OpObserver* const> observers = {});

  size_t num_steps() const { return steps_.size(); }
  std::vector<RegionPlan>& regions() { return regions_; }
  const std::vector<RegionPlan>& regions() const { return regions_; }

 private:
  struct Step {
    int32_t node = -1;    // an interpreted op, or
    int32_t region = -1;  // a region
  };
  bool guard_holds(const RegionPlan& r, const std::vector<Tensor>& env) const;
  void call_kernel(RegionPlan& r, std::vector<Tensor>& env) const;

  const Graph& g_;
  std::vector<RegionPlan> regions_;
  std::vector<Step> steps_;
  std::vector<std::vector<ValueId>> release_after_;  // per step
  NodeRunner runner_;
};

}  // namespace sgraph
