#include "runtime/executable_graph.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <numeric>
#include <queue>

#include "ops/op.h"
#include "runtime/memory_plan.h"

namespace sgraph {
namespace {

// `bytes` of memory aligned to kArenaAlign (the arena, a kernel's scratch block).
std::shared_ptr<void> aligned_block(int64_t bytes) {
  const auto align = std::align_val_t(kArenaAlign);
  return std::shared_ptr<void>(::operator new(static_cast<size_t>(bytes), align),
                               [align](void* p) { ::operator delete(p, align); });
}

}  // namespace

ExecutableGraph::ExecutableGraph(const Graph& g, std::vector<RegionPlan> regions,
                                 const WarmupShapes& warmup, ops::SubgraphRunner* subgraphs)
    : g_(g), regions_(std::move(regions)), runner_(subgraphs) {
  // Contract each region to one step, then order the steps topologically (Kahn's algorithm,
  // smallest original node index first, so a graph without regions keeps its node order).
  const size_t n = g.nodes.size();
  std::vector<int32_t> step_of(n, -1);
  std::vector<int32_t> first_node;  // per step: its smallest node index, the tie-break key
  for (size_t r = 0; r < regions_.size(); ++r) {
    for (int32_t node : regions_[r].region.nodes) step_of[node] = static_cast<int32_t>(r);
    first_node.push_back(regions_[r].region.nodes.front());
  }
  std::vector<Step> all(regions_.size());
  for (size_t r = 0; r < regions_.size(); ++r) all[r].region = static_cast<int32_t>(r);
  for (size_t i = 0; i < n; ++i) {
    if (step_of[i] >= 0) continue;
    step_of[i] = static_cast<int32_t>(all.size());
    all.push_back(Step{static_cast<int32_t>(i), -1});
    first_node.push_back(static_cast<int32_t>(i));
  }
  std::vector<std::vector<int32_t>> succ(all.size());
  std::vector<int> indegree(all.size(), 0);
  for (size_t i = 0; i < n; ++i)
    for (ValueId v : g.nodes[i].inputs) {
      if (v == kNoValue || g.values[v].producer < 0) continue;
      const int32_t from = step_of[g.values[v].producer], to = step_of[i];
      if (from == to) continue;
      succ[from].push_back(to);
      ++indegree[to];
    }
  using Item = std::pair<int32_t, int32_t>;  // (first node, step)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (size_t s = 0; s < all.size(); ++s)
    if (indegree[s] == 0) ready.emplace(first_node[s], static_cast<int32_t>(s));
  std::vector<int32_t> position(all.size(), -1);  // per step of `all`: its place in steps_
  while (!ready.empty()) {
    const int32_t s = ready.top().second;
    ready.pop();
    position[s] = static_cast<int32_t>(steps_.size());
    steps_.push_back(all[s]);
    for (int32_t t : succ[s])
      if (--indegree[t] == 0) ready.emplace(first_node[t], t);
  }
  SG_ASSERT(steps_.size() == all.size()) << "the regions leave a cycle in the step graph";
  for (int32_t& s : step_of) s = position[s];  // now per node: the step running it

  // Release each value after the last step that reads it (graph outputs and constants stay).
  std::vector<int32_t> last_use(g.values.size(), -1);
  auto reads = [&](const Step& st, auto&& f) {
    if (st.node >= 0) {
      for (ValueId v : g.nodes[st.node].inputs) f(v);
    } else {
      for (ValueId v : regions_[st.region].region.inputs) f(v);
    }
  };
  for (size_t s = 0; s < steps_.size(); ++s)
    reads(steps_[s], [&](ValueId v) {
      if (v != kNoValue) last_use[v] = static_cast<int32_t>(s);
    });
  std::vector<bool> keep(g.values.size(), false);
  for (ValueId v : g.outputs) keep[v] = true;
  release_after_.resize(steps_.size());
  for (size_t v = 0; v < g.values.size(); ++v)
    if (!keep[v] && !g.values[v].initializer.defined() && last_use[v] >= 0)
      release_after_[last_use[v]].push_back(static_cast<ValueId>(v));
  // Values no later step reads (a region's internal values when it falls back, unused outputs):
  // released right after the step that makes them.
  for (size_t i = 0; i < n; ++i)
    for (ValueId v : g.nodes[i].outputs)
      if (!keep[v] && last_use[v] < 0) release_after_[step_of[i]].push_back(v);
  plan_arena(warmup, step_of, last_use);
}

void ExecutableGraph::plan_arena(const WarmupShapes& warmup,
                                 const std::vector<int32_t>& step_of_node,
                                 const std::vector<int32_t>& last_use) {
  const Graph& g = g_;
  // Values that may share a buffer: a view and its input, and the outputs and inputs of an op
  // making its own outputs (an If branch may return an outer value as is). Each group is one
  // lifetime; a group holding a graph input or output or a constant stays out of the arena.
  std::vector<ValueId> group(g.values.size());
  std::iota(group.begin(), group.end(), ValueId{0});
  auto find = [&](ValueId v) {
    while (group[v] != v) v = group[v] = group[group[v]];
    return v;
  };
  for (const Node& node : g.nodes) {
    const ops::OpDef& def = ops::op_def(node.op);
    if (def.view) group[find(node.outputs[0])] = find(node.inputs[0]);
    if (!def.makes_outputs) continue;
    for (ValueId out : node.outputs)
      for (ValueId in : node.inputs)
        if (in != kNoValue) group[find(out)] = find(in);
  }
  std::vector<bool> pinned(g.values.size(), false);
  for (ValueId v : g.inputs) pinned[find(v)] = true;
  for (ValueId v : g.outputs) pinned[find(v)] = true;
  std::vector<int32_t> first(g.values.size(), INT32_MAX), last(g.values.size(), -1);  // steps
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueId root = find(static_cast<ValueId>(v));
    if (g.values[v].initializer.defined() || g.values[v].producer < 0) {
      pinned[root] = true;
      continue;
    }
    const int32_t made = step_of_node[g.values[v].producer];
    first[root] = std::min(first[root], made);
    last[root] = std::max({last[root], made, last_use[v]});
  }

  // The planned values: region outputs at their compiled shapes, outputs of stable interpreted
  // ops (neither views nor making their own outputs) at their warm-up shapes.
  std::vector<ValueId> values;
  std::vector<Shape> shapes;
  auto consider = [&](ValueId v, const Shape& shape) {
    const int64_t bytes = numel(shape) * static_cast<int64_t>(dtype_size(g.values[v].dtype));
    if (pinned[find(v)] || bytes == 0) return;
    values.push_back(v);
    shapes.push_back(shape);
  };
  const bool have_warmup =
      warmup.values.size() == g.values.size() && warmup.stable.size() == g.nodes.size();
  for (const Step& st : steps_) {
    if (st.region >= 0) {
      const RegionPlan& r = regions_[st.region];
      if (r.output_shapes.size() != r.region.outputs.size()) continue;
      for (size_t k = 0; k < r.region.outputs.size(); ++k)
        consider(r.region.outputs[k], r.output_shapes[k]);
      continue;
    }
    const ops::OpDef& def = ops::op_def(g.nodes[st.node].op);
    if (!have_warmup || !warmup.stable[st.node] || def.view || def.makes_outputs) continue;
    for (ValueId v : g.nodes[st.node].outputs) consider(v, warmup.values[v]);
  }
  if (values.empty()) return;

  std::vector<BufferUse> uses;
  for (size_t i = 0; i < values.size(); ++i) {
    const ValueId root = find(values[i]);
    uses.push_back(
        BufferUse{numel(shapes[i]) * static_cast<int64_t>(dtype_size(g.values[values[i]].dtype)),
                  first[root], last[root]});
  }
  const MemoryPlan plan = plan_memory(uses);
  arena_ = aligned_block(plan.arena_bytes);
  premade_.assign(g.values.size(), Tensor{});
  for (size_t i = 0; i < values.size(); ++i)
    premade_[values[i]] =
        Tensor::wrap(g.values[values[i]].dtype, std::move(shapes[i]),
                     static_cast<std::byte*>(arena_.get()) + plan.offsets[i], arena_);
  arena_stats_ = ArenaStats{values.size(), plan.arena_bytes, plan.unshared_bytes};
}

bool ExecutableGraph::guard_holds(RegionPlan& r, const std::vector<Tensor>& env) const {
  r.last_miss_on_shape = false;
  if (r.region.dynamic) {
    r.sym_values.assign(r.symbols.size(), 0);
    r.sym_bound.assign(r.symbols.size(), false);
    std::vector<const SymShape*> patterns;
    std::vector<const Shape*> actual;
    for (size_t i = 0; i < r.region.inputs.size(); ++i) {
      const Tensor& t = env[r.region.inputs[i]];
      if (t.dtype() != g_.values[r.region.inputs[i]].dtype) return false;
      patterns.push_back(&r.input_sym[i]);
      actual.push_back(&t.shape());
    }
    r.last_miss_on_shape = !bind_all(patterns, actual, r.sym_values, r.sym_bound);
    if (r.last_miss_on_shape) return false;
    for (const auto& [d, least] : r.dim_checks)
      if (d.value(r.sym_values) < least) return false;
    return true;
  }
  for (size_t i = 0; i < r.region.inputs.size(); ++i) {
    const Tensor& t = env[r.region.inputs[i]];
    if (t.shape() != r.input_shapes[i] || t.dtype() != g_.values[r.region.inputs[i]].dtype)
      return false;
  }
  for (const auto& [i, want] : r.value_guards) {  // same shape and dtype: compare the bytes
    const Tensor& t = env[r.region.inputs[i]];
    if (t.dtype() != want.dtype() || std::memcmp(t.raw_data(), want.raw_data(), want.nbytes()))
      return false;
  }
  return true;
}

// The bytes of r's scratch block for the bound symbols: the static parts, then each symbolic part
// rounded up to 64 bytes (the kernel places them the same way).
int64_t ExecutableGraph::scratch_need(const RegionPlan& r) const {
  int64_t need = r.scratch_bytes;
  for (const auto& [elem_bytes, dims] : r.scratch_sym) {
    int64_t bytes = elem_bytes;
    for (const SymDim& d : dims)
      SG_CHECK(!__builtin_mul_overflow(bytes, d.value(r.sym_values), &bytes))
          << "a dynamic region's scratch size overflows at these shapes";
    SG_CHECK(!__builtin_add_overflow(need, (bytes + 63) / 64 * 64, &need))
        << "a dynamic region's scratch size overflows at these shapes";
  }
  return need;
}

void ExecutableGraph::call_kernel(RegionPlan& r, std::vector<Tensor>& env) const {
  std::vector<void*> buffers;
  buffers.reserve(r.region.inputs.size() + r.region.outputs.size());
  for (ValueId v : r.region.inputs) buffers.push_back(env[v].raw_data());
  r.last_outputs.resize(r.region.outputs.size());
  for (size_t k = 0; k < r.region.outputs.size(); ++k) {
    const ValueId v = r.region.outputs[k];
    if (r.region.dynamic) {
      env[v] = dynamic_output(r, k);
    } else if (!premade_.empty() && premade_[v].defined()) {  // its arena buffer
      env[v] = premade_[v];
    } else {
      Tensor& t = r.last_outputs[k];
      if (!t.sole_owner()) t = Tensor(r.output_dtypes[k], r.output_shapes[k]);
      env[v] = t;
    }
    buffers.push_back(env[v].raw_data());
    SG_ASSERT(reinterpret_cast<uintptr_t>(buffers.back()) % 64 == 0)
        << "a kernel output buffer is not 64-byte aligned";  // the kernels assume it
  }
  const auto region_str = [&] {
    return "region of " + std::to_string(r.region.nodes.size()) + " ops (first '" +
           g_.nodes[r.region.nodes.front()].name + "')";
  };
  if (const int64_t need = scratch_need(r); need > 0) {
    if (!r.scratch || r.scratch_capacity < need) {
      r.scratch.reset();
      r.scratch_capacity = 0;
      try {
        maybe_fail_for_testing();
        r.scratch = aligned_block(need);
      } catch (const std::bad_alloc&) {
        SG_FAIL() << region_str() << ": cannot allocate its " << need << "-byte scratch block";
      }
      r.scratch_capacity = need;
    }
    buffers.push_back(r.scratch.get());
  }
  take_kernel_failure();  // (none should be pending)
  r.fn(buffers.data(), r.region.dynamic ? r.sym_values.data() : nullptr, r.ctx.get());
  if (const std::string failed = take_kernel_failure(); !failed.empty())
    SG_FAIL() << region_str() << ": its kernel failed: " << failed;
  ++r.kernel_calls;
  ++r.hits_since_plan;
}

// Output k of a dynamic region at its shape for the bound symbols, in the region's block for it
// when nothing else holds that block and it is large enough; else in a new block, which is kept.
Tensor ExecutableGraph::dynamic_output(RegionPlan& r, size_t k) const {
  r.out_blocks.resize(r.output_sym.size());
  r.out_capacity.resize(r.output_sym.size(), 0);
  Shape shape = eval_shape(r.output_sym[k], r.sym_values);
  const int64_t bytes = std::max<int64_t>(
      kArenaAlign, numel(shape) * static_cast<int64_t>(dtype_size(r.output_dtypes[k])));
  std::shared_ptr<void>& block = r.out_blocks[k];
  const bool shared = block && block.use_count() > 1;  // (the caller kept an earlier output)
  if (!block || shared || r.out_capacity[k] < bytes) {
    const int64_t size = shared ? bytes : std::max(bytes, r.out_capacity[k]);
    try {
      block = aligned_block(size);
    } catch (const std::bad_alloc&) {
      SG_FAIL() << "cannot allocate " << size << " bytes for output '"
                << g_.values[r.region.outputs[k]].name << "' of a dynamic region";
    }
    r.out_capacity[k] = size;
  }
  return Tensor::wrap(r.output_dtypes[k], std::move(shape), block.get(), block);
}

std::vector<Tensor> ExecutableGraph::run(std::span<const Tensor> inputs,
                                         std::span<OpObserver* const> observers) {
  std::vector<Tensor> env = bind_inputs(g_, inputs);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& st = steps_[s];
    if (st.node >= 0) {
      runner_.run(g_, st.node, env, observers, premade_);
    } else {
      RegionPlan& r = regions_[st.region];
      if (r.fn != nullptr && guard_holds(r, env)) {
        call_kernel(r, env);
      } else {
        if (r.fn != nullptr) {
          ++r.guard_misses;
          ++r.misses_since_plan;
          r.shape_misses_since_plan += r.last_miss_on_shape;
        }
        for (int32_t node : r.region.nodes) runner_.run(g_, node, env, observers, premade_);
      }
    }
    for (ValueId v : release_after_[s]) env[v] = Tensor{};
  }
  std::vector<Tensor> result;
  for (ValueId v : g_.outputs) result.push_back(env[v]);
  return result;
}

}  // namespace sgraph
