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
  check_tensor_bytes(bytes, "a compiled region's memory block");
  const auto align = std::align_val_t(kArenaAlign);
  return std::shared_ptr<void>(::operator new(static_cast<size_t>(bytes), align),
                               [align](void* p) { ::operator delete(p, align); });
}

}  // namespace

// A region's state in one call state: its bound symbols, and the blocks it keeps from call to
// call; and the counts of the call running, added to the region's stats when it returns.
struct ExecutableGraph::RegionCall {
  std::vector<int64_t> sym_values;
  std::vector<bool> sym_bound;
  std::vector<std::shared_ptr<void>> out_blocks;  // a dynamic region's outputs
  std::vector<int64_t> out_capacity;              // bytes of each block
  std::shared_ptr<void> scratch;                  // the kernel's scratch block
  int64_t scratch_capacity = 0;                   // its bytes
  // Outputs outside the arena (graph outputs, values a view ties to one): the previous call's
  // buffers, reused for the next call when nothing else holds them (writing into fresh large
  // allocations costs page faults that can exceed the kernel).
  std::vector<Tensor> last_outputs;
  bool last_miss_on_shape = false;                                   // (set by guard_holds)
  int64_t calls = 0, misses = 0, shape_misses = 0, grown_bytes = 0;  // the call running
  int64_t interpreted = 0;                                           // (without a kernel)
};

// What one call uses and no other call may touch at the same time.
struct ExecutableGraph::CallState {
  explicit CallState(ops::SubgraphRunner* subgraphs) : runner(subgraphs) {}
  std::shared_ptr<void> arena;
  std::vector<Tensor> premade;  // per value id: its arena buffer, or undefined (empty: none)
  // Per value id: the graph's constants, bound when the state is made (a call used to copy every
  // one of them into a fresh table: 13% of silero_vad_legacy's serving time, in its If branches'
  // Sessions); the other values are set during a call and cleared when it ends.
  std::vector<Tensor> env;
  std::vector<RegionCall> regions;
  NodeRunner runner;
};

ExecutableGraph::ExecutableGraph(const Graph& g, std::vector<RegionPlan> regions,
                                 const WarmupShapes& warmup, ops::SubgraphRunner* subgraphs)
    : g_(g), subgraphs_(subgraphs), regions_(std::move(regions)) {
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
  for (size_t i = 0; i < values.size(); ++i)
    planned_.push_back(Planned{values[i], std::move(shapes[i]), plan.offsets[i]});
  arena_stats_ = ArenaStats{values.size(), plan.arena_bytes, plan.unshared_bytes};
}

ExecutableGraph::ExecutableGraph(const ExecutableGraph& other, std::vector<RegionPlan> regions)
    : g_(other.g_),
      subgraphs_(other.subgraphs_),
      regions_(std::move(regions)),
      steps_(other.steps_),
      release_after_(other.release_after_),
      planned_(other.planned_),
      arena_stats_(other.arena_stats_) {
  SG_ASSERT(regions_.size() == other.regions_.size()) << "a plan copy with other regions";
  for (size_t r = 0; r < regions_.size(); ++r)
    SG_ASSERT(regions_[r].region.nodes == other.regions_[r].region.nodes)
        << "a plan copy with other regions";
}

ExecutableGraph::~ExecutableGraph() {
  // The dynamic blocks of the states going away no longer count (no call holds one now).
  for (const auto& state : pool_)
    for (size_t r = 0; r < regions_.size(); ++r) {
      const RegionCall& c = state->regions[r];
      int64_t bytes = c.scratch_capacity;
      for (int64_t b : c.out_capacity) bytes += b;
      if (regions_[r].region.dynamic) regions_[r].stats->dynamic_bytes -= bytes;
    }
}

std::unique_ptr<ExecutableGraph::CallState> ExecutableGraph::make_state() const {
  auto state = std::make_unique<CallState>(subgraphs_);
  state->regions.resize(regions_.size());
  state->env = bind_constants(g_);
  if (planned_.empty()) return state;
  try {
    state->arena = aligned_block(arena_stats_.arena_bytes);
  } catch (const std::bad_alloc&) {
    SG_FAIL() << "cannot allocate a " << arena_stats_.arena_bytes << "-byte arena for graph '"
              << g_.name << "'";
  }
  state->premade.assign(g_.values.size(), Tensor{});
  for (const Planned& p : planned_)
    state->premade[p.value] =
        Tensor::wrap(g_.values[p.value].dtype, p.shape,
                     static_cast<std::byte*>(state->arena.get()) + p.offset, state->arena);
  return state;
}

size_t ExecutableGraph::call_states() const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  return states_made_;
}

const void* ExecutableGraph::arena_data() const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  return pool_.empty() ? nullptr : pool_.back()->arena.get();
}

std::vector<const void*> ExecutableGraph::kept_outputs(size_t region) const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  std::vector<const void*> out;
  if (!pool_.empty())
    for (const Tensor& t : pool_.back()->regions.at(region).last_outputs)
      out.push_back(t.defined() ? t.raw_data() : nullptr);
  return out;
}

bool ExecutableGraph::guard_holds(const RegionPlan& r, RegionCall& c,
                                  const std::vector<Tensor>& env) const {
  c.last_miss_on_shape = false;
  if (r.region.dynamic) {
    c.sym_values.assign(r.symbols.size(), 0);
    c.sym_bound.assign(r.symbols.size(), false);
    std::vector<const SymShape*> patterns;
    std::vector<const Shape*> actual;
    for (size_t i = 0; i < r.region.inputs.size(); ++i) {
      const Tensor& t = env[r.region.inputs[i]];
      if (t.dtype() != g_.values[r.region.inputs[i]].dtype) return false;
      patterns.push_back(&r.input_sym[i]);
      actual.push_back(&t.shape());
    }
    c.last_miss_on_shape = !bind_all(patterns, actual, c.sym_values, c.sym_bound);
    if (c.last_miss_on_shape) return false;
    for (const auto& [d, least] : r.dim_checks)
      if (d.value(c.sym_values) < least) return false;
    for (const auto& [i, elems] : r.value_sym_guards) {
      const Tensor& t = env[r.region.inputs[i]];
      if (t.numel() != static_cast<int64_t>(elems.size())) return false;
      for (size_t j = 0; j < elems.size(); ++j) {
        const int64_t x = t.dtype() == DType::i64   ? t.data<int64_t>()[j]
                          : t.dtype() == DType::i32 ? t.data<int32_t>()[j]
                                                    : INT64_MIN;
        if (x != elems[j].value(c.sym_values)) return false;
      }
    }
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

// The bytes of r's scratch block for the bound symbols (the kernel places its parts the same way).
int64_t ExecutableGraph::scratch_need(const RegionPlan& r, const RegionCall& c) const {
  const std::optional<int64_t> need =
      jit::scratch_need(r.scratch_bytes, r.scratch_sym, c.sym_values);
  SG_CHECK(need) << "a dynamic region's scratch size overflows at these shapes";
  return *need;
}

void ExecutableGraph::call_kernel(const RegionPlan& r, RegionCall& c, CallState& state,
                                  std::vector<Tensor>& env) const {
  std::vector<void*> buffers;
  buffers.reserve(r.region.inputs.size() + r.region.outputs.size());
  for (ValueId v : r.region.inputs) buffers.push_back(env[v].raw_data());
  c.last_outputs.resize(r.region.outputs.size());
  for (size_t k = 0; k < r.region.outputs.size(); ++k) {
    const ValueId v = r.region.outputs[k];
    if (r.region.dynamic) {
      env[v] = dynamic_output(r, c, k);
    } else if (!state.premade.empty() && state.premade[v].defined()) {  // its arena buffer
      env[v] = state.premade[v];
    } else {
      Tensor& t = c.last_outputs[k];
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
  if (const int64_t need = scratch_need(r, c); need > 0) {
    if (!c.scratch || c.scratch_capacity < need) {
      c.grown_bytes -= c.scratch_capacity;
      c.scratch.reset();
      c.scratch_capacity = 0;
      try {
        maybe_fail_for_testing();
        c.scratch = aligned_block(need);
      } catch (const std::bad_alloc&) {
        SG_FAIL() << region_str() << ": cannot allocate its " << need << "-byte scratch block";
      }
      c.scratch_capacity = need;
      c.grown_bytes += need;
    }
    buffers.push_back(c.scratch.get());
  }
  take_kernel_failure();  // (none should be pending)
  r.fn(buffers.data(), r.region.dynamic ? c.sym_values.data() : nullptr, r.ctx.get());
  if (const std::string failed = take_kernel_failure(); !failed.empty())
    SG_FAIL() << region_str() << ": its kernel failed: " << failed;
  ++c.calls;
}

// Output k of a dynamic region at its shape for the bound symbols, in the region's block for it
// when nothing else holds that block and it is large enough; else in a new block, which is kept.
Tensor ExecutableGraph::dynamic_output(const RegionPlan& r, RegionCall& c, size_t k) const {
  c.out_blocks.resize(r.output_sym.size());
  c.out_capacity.resize(r.output_sym.size(), 0);
  Shape shape = eval_shape(r.output_sym[k], c.sym_values);
  const int64_t bytes = std::max<int64_t>(
      kArenaAlign, numel(shape) * static_cast<int64_t>(dtype_size(r.output_dtypes[k])));
  std::shared_ptr<void>& block = c.out_blocks[k];
  const bool shared = block && block.use_count() > 1;  // (the caller kept an earlier output)
  if (!block || shared || c.out_capacity[k] < bytes) {
    const int64_t size = shared ? bytes : std::max(bytes, c.out_capacity[k]);
    try {
      block = aligned_block(size);
    } catch (const std::bad_alloc&) {
      SG_FAIL() << "cannot allocate " << size << " bytes for output '"
                << g_.values[r.region.outputs[k]].name << "' of a dynamic region";
    }
    c.grown_bytes += size - c.out_capacity[k];
    c.out_capacity[k] = size;
  }
  return Tensor::wrap(r.output_dtypes[k], std::move(shape), block.get(), block);
}

std::vector<Tensor> ExecutableGraph::run(std::span<const Tensor> inputs,
                                         std::span<OpObserver* const> observers) const {
  std::unique_ptr<CallState> state;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      state = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (!state) {
    state = make_state();
    std::lock_guard<std::mutex> lock(pool_mu_);
    ++states_made_;
  }
  // The state goes back to the pool however the call ends; its counts reach the stats only when
  // it returns (a call that throws counts nothing; the blocks it grew count).
  struct Return {
    const ExecutableGraph& eg;
    std::unique_ptr<CallState>& state;
    bool through = false;  // every step ran: only the inputs and outputs are still bound
    ~Return() {
      std::vector<Tensor>& env = state->env;  // (the constants stay bound)
      if (through) {
        for (ValueId v : eg.g_.inputs) env[v] = Tensor{};
        for (ValueId v : eg.g_.outputs)
          if (!eg.g_.values[v].initializer.defined()) env[v] = Tensor{};
      } else {
        for (size_t v = 0; v < env.size(); ++v)
          if (!eg.g_.values[v].initializer.defined()) env[v] = Tensor{};
      }
      for (size_t r = 0; r < eg.regions_.size(); ++r) {
        RegionCall& c = state->regions[r];
        if (c.grown_bytes != 0) eg.regions_[r].stats->dynamic_bytes += c.grown_bytes;
        c.calls = c.misses = c.shape_misses = c.grown_bytes = c.interpreted = 0;
      }
      std::lock_guard<std::mutex> lock(eg.pool_mu_);
      eg.pool_.push_back(std::move(state));
    }
  } give_back{*this, state};
  CallState& st = *state;
  check_inputs(g_, inputs);
  std::vector<Tensor>& env = st.env;
  for (size_t i = 0; i < inputs.size(); ++i) env[g_.inputs[i]] = inputs[i];
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    if (step.node >= 0) {
      st.runner.run(g_, step.node, env, observers, st.premade);
    } else {
      const RegionPlan& r = regions_[step.region];
      RegionCall& c = st.regions[step.region];
      if (r.fn != nullptr && guard_holds(r, c, env)) {
        call_kernel(r, c, st, env);
      } else {
        if (r.fn != nullptr) {
          ++c.misses;
          c.shape_misses += c.last_miss_on_shape;
        } else {
          ++c.interpreted;
        }
        for (int32_t node : r.region.nodes) st.runner.run(g_, node, env, observers, st.premade);
      }
    }
    for (ValueId v : release_after_[s]) env[v] = Tensor{};
  }
  std::vector<Tensor> result;
  result.reserve(g_.outputs.size());
  for (ValueId v : g_.outputs) result.push_back(env[v]);
  give_back.through = true;
  for (size_t r = 0; r < regions_.size(); ++r) {  // the call returns: its counts count
    const RegionCall& c = st.regions[r];
    RegionStats& stats = *regions_[r].stats;
    if (c.calls) stats.kernel_calls += c.calls;
    if (c.misses) {
      stats.guard_misses += c.misses;
      stats.misses_since_plan += c.misses;
    }
    if (c.shape_misses) stats.shape_misses_since_plan += c.shape_misses;
    if (c.interpreted) stats.interpreted_calls += c.interpreted;
    if (c.calls || c.misses) stats.note_recent(c.calls, c.misses);
  }
  return result;
}

}  // namespace sgraph
