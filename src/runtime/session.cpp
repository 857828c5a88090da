// Session: the pipeline, top to bottom — 1. warm-up (interpret, recording shapes and costs),
// 2. classify (stable/changed), 3. partition into regions, 4. compile one kernel per region,
// 5. serve through the executable graph; repeated guard misses re-plan only what changed.
// CompileMode::per_signature, the per-signature compiler baseline, has its own section below.
#include "sgraph/session.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "ir/debug.h"
#include "jit/parallel.h"
#include "jit/region_compiler.h"
#include "ops/op.h"
#include "ops/params.h"
#include "runtime/background_compiler.h"
#include "runtime/constant_folding.h"
#include "runtime/executable_graph.h"
#include "runtime/interpreter.h"
#include "runtime/op_profiler.h"
#include "runtime/region_builder.h"
#include "runtime/runtime_impl.h"
#include "runtime/shape_tracker.h"
#include "runtime/subgraph_sessions.h"
#include "runtime/value_guards.h"
#include "runtime/warmup_record.h"

namespace sgraph {

namespace {

// Per-op times of a call. A control-flow op is listed after the interpreted ops of the subgraph
// it ran, with the time its subgraph Session took taken off its own.
class TimingObserver final : public OpObserver {
 public:
  TimingObserver(std::vector<OpTime>& out, SubgraphTimes& subs) : out_(out), subs_(subs) {}
  void on_op(const OpEvent& e) override {
    for (OpTime& t : subs_.times) out_.push_back(std::move(t));
    subs_.times.clear();
    out_.push_back(OpTime{e.node.name, e.node.op, e.elapsed_ns - std::exchange(subs_.ns, 0)});
  }

 private:
  std::vector<OpTime>& out_;
  SubgraphTimes& subs_;
};

// While serving: notes the interpreted ops of one call whose shapes differ from the warm-up's
// (`tracker`: the record the plan was made from), so a re-plan can mark them changed; `differs`
// says whether any interpreted op's shapes (changed ops' too) differ from the last recorded run.
class ServingShapes final : public OpObserver {
 public:
  explicit ServingShapes(const ShapeTracker& t) : tracker_(t) {}
  void on_op(const OpEvent& e) override {
    const bool noted = tracker_.changed(e.node_index) || notes.count(e.node_index);
    if ((noted && differs) || tracker_.same_as_recorded(e)) return;
    differs = true;  // (the text only for a note: a changed op's shapes may differ every call)
    if (!noted) notes.emplace(e.node_index, *tracker_.difference(e));
  }
  bool reads_time() const override { return false; }
  std::map<int32_t, std::string> notes;
  bool differs = false;

 private:
  const ShapeTracker& tracker_;
};

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

struct Session::Impl {
  Impl(Graph g, SessionOptions o) : graph(std::move(g)), options(std::move(o)) {
    SG_CHECK(options.warmup_runs >= 1)
        << "warmup_runs must be at least 1, got " << options.warmup_runs;
    SG_CHECK(options.max_guard_misses >= 1)
        << "max_guard_misses must be at least 1, got " << options.max_guard_misses;
    SG_CHECK(options.background_nice >= 0 && options.background_nice <= 19)
        << "background_nice must be from 0 to 19, got " << options.background_nice;
    SG_CHECK(options.threads >= 0)
        << "threads must be at least 0 (0: hardware concurrency), got " << options.threads;
    max_threads = options.threads > 0 ? options.threads : hardware_threads();
    if (!options.runtime) options.runtime = Runtime::process();
    graph.infer_and_verify();
    // (Not in interpret_only mode: the plain interpreter of the graph as given, the reference.)
    if (options.fold_constants && !options.interpret_only) folded_ops = fold_constants(graph);
    std::map<std::string, std::string> sub_records;  // (a planned model's, for its subgraphs)
    const std::string prefix = std::string(kWarmupRecordKey) + ":";
    if (options.use_warmup_record)
      for (const auto& [key, text] : graph.metadata)
        if (key.compare(0, prefix.size(), prefix) == 0)
          sub_records[key.substr(prefix.size())] = text;
    subgraphs = std::make_unique<SubgraphSessions>(options, std::move(sub_records), &graph);
    interpreter = std::make_unique<Interpreter>(graph, subgraphs.get());
    tracker = std::make_unique<ShapeTracker>(graph);
    profiler = std::make_unique<OpProfiler>(graph, options.warmup_runs);
    if (options.background_compile && options.mode == CompileMode::profile_guided)
      background = std::make_unique<BackgroundCompiler>(1, options.background_nice);
    if (auto it = graph.metadata.find(kWarmupRecordKey); it != graph.metadata.end())
      plan_from_record(it->second);
  }

  // A model saved with its warm-up record: planned now, without warm-up runs. A record that does
  // not fit is ignored (the reason in the report) and the Session warms up as usual.
  void plan_from_record(const std::string& text) {
    if (!options.use_warmup_record) {
      record_status = "ignored: SessionOptions::use_warmup_record is false";
      return;
    }
    if (options.interpret_only || options.mode != CompileMode::profile_guided) {
      record_status = "ignored: not used in this mode";
      return;
    }
    std::lock_guard<std::mutex> lock(plan_mu);
    bool planned = true;
    try {
      planned = load_warmup_record(graph, text, *tracker, *profiler);
    } catch (const Error& e) {
      record_status = std::string("ignored: ") + e.what();
      SG_LOG(0) << "graph '" << graph.name << "': " << record_status;
      return;
    }
    if (!planned && tracker->runs() < options.warmup_runs) {
      // A record of fewer warm-up runs (a branch the warm-up took less often): the warm-up goes
      // on from it.
      record_status = "loaded: " + std::to_string(tracker->runs()) + " of " +
                      std::to_string(options.warmup_runs) + " warm-up runs, warming up on";
      SG_LOG(1) << "graph '" << graph.name << "': " << record_status;
      return;
    }
    record_status = "loaded";
    SG_LOG(1) << "graph '" << graph.name << "': planned from its warm-up record ("
              << tracker->runs() << " runs)";
    plan(1);
  }

  ~Impl() {
    // No call runs now. The compiler threads go first (they use the graph and the JIT), then the
    // kernels this Session holds in the shared JIT are released.
    if (background) {
      background.reset();
    }
    {
      std::lock_guard<std::mutex> lock(exec_mu);
      exec.reset();
    }
    signatures.clear();
    current.reset();
    if (jit)
      for (uint64_t h : handles) jit->remove(h);
  }

  // One call. Its op times are collected when asked for (Session::set_op_times) or when it runs
  // a branch for a call that collects them (its SubgraphTimesScope is open), and then kept (and
  // handed to that call).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    if (!op_times.load(std::memory_order_relaxed) && SubgraphTimesScope::current() == nullptr)
      return run_counted(inputs, nullptr);
    std::vector<OpTime> call_times;
    SubgraphTimes sub;
    SubgraphTimesScope scope(&sub);
    TimingObserver timing(call_times, sub);
    std::vector<Tensor> out = run_counted(inputs, &timing);
    if (scope.outer() != nullptr) hand_op_times(call_times);
    std::lock_guard<std::mutex> lock(times_mu);
    times = std::move(call_times);
    return out;
  }

  std::vector<Tensor> run_counted(const std::vector<Tensor>& inputs, TimingObserver* timing) {
    const int call = ++runs;
    try {
      return run_call(inputs, timing, call);
    } catch (...) {
      --runs;
      throw;
    }
  }

  // The observers of a call: `timing` when given, then `more` (no allocation per call).
  struct Observers {
    std::array<OpObserver*, 4> list{};
    size_t n = 0;
    operator std::span<OpObserver* const>() const { return {list.data(), n}; }
  };
  static Observers with_timing(TimingObserver* timing, std::initializer_list<OpObserver*> more) {
    SG_ASSERT(more.size() < Observers{}.list.size()) << more.size() << " observers";
    Observers obs;
    if (timing) obs.list[obs.n++] = timing;
    for (OpObserver* o : more) obs.list[obs.n++] = o;
    return obs;
  }

  std::vector<Tensor> run_call(const std::vector<Tensor>& inputs, TimingObserver* timing,
                               int call) {
    if (options.interpret_only) return interpreter->run(inputs, with_timing(timing, {}));
    if (options.mode == CompileMode::per_signature) return run_per_signature(inputs, timing);
    install_ready(call);
    if (Published p = published(); p.exec) return serve(p, inputs, timing);
    std::unique_lock<std::mutex> lock(plan_mu);
    if (Published p = published(); p.exec) {  // planned while this call waited
      lock.unlock();
      return serve(p, inputs, timing);
    }
    // 1. warm-up: interpret, recording shapes and costs (one call at a time)
    std::vector<Tensor> out = observe(inputs, timing);
    SG_LOG(1) << "warm-up run " << tracker->runs() << "/" << options.warmup_runs << " of graph '"
              << graph.name << "'";
    if (tracker->runs() >= options.warmup_runs) plan(call);
    return out;
  }

  // Session::warm_up.
  void warm_up(const std::vector<std::vector<Tensor>>& data_sets) {
    SG_CHECK(!data_sets.empty()) << "warm_up of graph '" << graph.name << "' without data sets";
    SG_CHECK(!options.interpret_only && options.mode == CompileMode::profile_guided)
        << "warm_up of graph '" << graph.name << "': nothing to warm up in "
        << (options.interpret_only ? "interpret_only" : "per_signature") << " mode";
    for (size_t i = 0; i < data_sets.size(); ++i) {
      try {
        check_inputs(graph, data_sets[i]);
      } catch (const Error& e) {
        SG_FAIL() << "warm_up data set " << i << ": " << e.what();
      }
    }
    std::lock_guard<std::mutex> lock(plan_mu);
    const bool was_planned = published().exec != nullptr;
    for (const std::vector<Tensor>& inputs : data_sets) observe(inputs, nullptr);
    if (was_planned) {
      ++replans;
      std::lock_guard<std::mutex> notes_lock(notes_mu);
      serving_notes.clear();
    }
    plan(runs + 1);
  }

  // What serving calls read, published together (under exec_mu).
  struct Published {
    std::shared_ptr<const ExecutableGraph> exec;
    std::shared_ptr<const ShapeTracker> tracker;  // the record the plan was made from
  };
  Published published() const {
    std::lock_guard<std::mutex> lock(exec_mu);
    return {exec, exec_tracker};
  }
  void publish(std::shared_ptr<const ExecutableGraph> e, std::shared_ptr<const ShapeTracker> t) {
    std::lock_guard<std::mutex> lock(exec_mu);
    exec = std::move(e);
    if (t) exec_tracker = std::move(t);
  }

  // A re-plan is due for a region that misses its guard too often (SessionOptions).
  bool replan_due(const ExecutableGraph& ex) const {
    return std::any_of(ex.regions().begin(), ex.regions().end(), [&](const RegionPlan& r) {
      const RegionStats& st = *r.stats;
      return (st.misses_since_plan >= options.max_guard_misses &&
              st.recent_misses >= st.recent_hits) ||
             st.shape_misses_since_plan >= options.max_guard_misses;
    });
  }

  // 5. serve; a region missing its guard too often gets its changed ops re-planned.
  std::vector<Tensor> serve(const Published& p, const std::vector<Tensor>& inputs,
                            TimingObserver* timing) {
    ServingShapes shapes(*p.tracker);
    // A call that throws counts nothing and notes no shape (it must not cause a re-plan).
    std::vector<Tensor> out = p.exec->run(inputs, with_timing(timing, {&shapes}));
    if (!shapes.notes.empty()) {
      std::lock_guard<std::mutex> lock(notes_mu);
      serving_notes.merge(shapes.notes);
    }
    if (std::any_of(p.exec->regions().begin(), p.exec->regions().end(), deferred_due)) {
      std::unique_lock<std::mutex> lock(plan_mu, std::try_to_lock);
      if (lock.owns_lock()) compile_deferred(runs + 1);
    }
    // Only a call whose shapes differ from the recorded ones re-plans: it is observed as a
    // warm-up run, and a call at the recorded shapes would add no symbol (the changed ops would
    // then be left interpreted, with no guard left to miss and ask for another re-plan).
    if (!shapes.differs || !replan_due(*p.exec)) return out;
    // One call re-plans; the others keep serving on the plan they have meanwhile.
    std::unique_lock<std::mutex> lock(plan_mu, std::try_to_lock);
    if (!lock.owns_lock()) return out;
    const Published now = published();
    if (!now.exec || !replan_due(*now.exec)) return out;  // (re-planned meanwhile)
    // The ops whose shapes differ are changed for good; this call's inputs are interpreted once
    // more, observed like a warm-up run, so that the dims that changed are symbols of the new
    // plan (their ops then join dynamic regions: compiled once more, for every value).
    std::map<int32_t, std::string> notes;
    {
      std::lock_guard<std::mutex> notes_lock(notes_mu);
      notes = std::exchange(serving_notes, {});
    }
    for (auto& [node, what] : notes) tracker->mark_changed(node, runs, what);
    ++replans;
    SG_LOG(1) << "re-planning graph '" << graph.name << "' after repeated guard misses";
    try {
      observe(inputs, nullptr);
    } catch (...) {  // (it ran once already: not expected)
    }
    plan(runs + 1);
    return out;
  }

  // A warm-up run of `inputs` for the tracker and profiler (and `timing`, when given); one that
  // throws leaves them as they were. Under plan_mu.
  std::vector<Tensor> observe(const std::vector<Tensor>& inputs, TimingObserver* timing) {
    std::vector<OpObserver*> obs;
    if (timing) obs.push_back(timing);
    obs.push_back(tracker.get());
    obs.push_back(profiler.get());
    tracker->begin_run();
    profiler->begin_run();
    std::vector<Tensor> out;
    try {
      out = interpreter->run(inputs, obs);
    } catch (...) {
      tracker->abort_run();
      profiler->abort_run();
      throw;
    }
    profiler->end_run();
    tracker->end_run();
    return out;
  }

  // 2. classify and 3. partition; 4. compile the regions not compiled before; publish the plan
  // (`call`: the first call that may use it). Under plan_mu.
  void plan(int call) {
    const std::vector<bool> stable = tracker->stable();
    symbolic = tracker->symbolic_dims();
    value_shapes = shapes_seen(*tracker);  // (the merge of tiers asks for value guards)
    partition = build_regions(graph, stable, region_options(stable));
    const std::shared_ptr<const ExecutableGraph> before = published().exec;
    std::vector<RegionPlan> old = before ? before->regions() : std::vector<RegionPlan>{};
    std::vector<RegionPlan> plans;
    std::vector<bool> kept(old.size(), false);
    Batch batch(*this);
    for (const Region& r : partition.regions) {
      // An unchanged region keeps its kernel and counters: the same nodes, and for a dynamic
      // region the same symbolic shapes (a dim that became a symbol makes it a new region).
      RegionPlan p = r.dynamic ? dynamic_shapes(r) : RegionPlan{};
      auto same = std::find_if(old.begin(), old.end(), [&](const RegionPlan& o) {
        return o.region.nodes == r.nodes && o.region.dynamic == r.dynamic &&
               o.planned_sym == p.planned_sym && o.symbols == p.symbols &&
               o.value_sym_guards == p.value_sym_guards;
      });
      if (same != old.end()) {
        same->stats->reset_since_plan();
        kept[static_cast<size_t>(same - old.begin())] = true;
        plans.push_back(std::move(*same));
        continue;
      }
      if (r.dynamic) {
        compile_dynamic(p);
        plan_threads(p, *profiler);
        plans.push_back(std::move(p));
      } else {
        plans.push_back(make_plan(r, value_shapes, *profiler, jit::Jit::Reuse::same_code));
      }
    }
    batch.run(plans, *profiler);
    for (size_t i = 0; i < old.size(); ++i)  // regions not kept: their counts still count (their
      if (!kept[i]) dropped.push_back(old[i].stats);  // kernels stay in the JIT for the session)
    for (RegionPlan& p : plans)
      if (p.fn != nullptr && p.active_from_call == 0) p.active_from_call = call;
    auto ex = std::make_shared<const ExecutableGraph>(
        graph, std::move(plans), WarmupShapes{value_shapes, stable}, subgraphs.get());
    if (background)  // jobs for regions re-planned away need not run
      background->drop_unless([&](uint64_t id) {
        return std::any_of(ex->regions().begin(), ex->regions().end(),
                           [&](const RegionPlan& r) { return r.compile_job == id; });
      });
    size_t n_stable = 0;
    for (bool st : stable) n_stable += st;
    SG_LOG(1) << "planned graph '" << graph.name << "': " << n_stable << " of " << stable.size()
              << " ops stable, " << partition.regions.size() << " regions, " << ex->num_steps()
              << " steps";
    SG_LOG(1) << "memory plan: " << ex->arena_stats().buffers << " buffers in a "
              << ex->arena_stats().arena_bytes << "-byte arena ("
              << ex->arena_stats().unshared_bytes << " bytes without sharing)";
    for (size_t r = 0; r < partition.regions.size(); ++r)
      SG_LOG(2) << "region " << r << ": " << partition.regions[r].nodes.size() << " ops";
    publish(std::move(ex), std::make_shared<const ShapeTracker>(*tracker));
    planned_flag = true;
  }

  // What may join a region: the op, then this node's dtypes etc. (the JIT's reason when not).
  RegionOptions region_options(const std::vector<bool>& stable) {
    RegionOptions ro;
    ro.min_region_ops = options.min_region_ops;
    not_compilable.assign(graph.nodes.size(), "");
    ro.compilable = [this](const Graph& g, int32_t i) {
      if (!ops::is_compilable(g.nodes[i].op)) return false;
      Region one;
      one.nodes = {i};
      not_compilable[i] = jit::why_not_compilable(g, one);
      return not_compilable[i].empty();
    };
    not_dynamic.assign(graph.nodes.size(), "");
    if (options.dynamic)  // (planned without the JIT too: the same plan, interpreted)
      ro.dynamic = [this](const Graph& g, int32_t i) {
        // A node changed after warm-up (a guard miss) has no symbolic dim yet: it stays out.
        bool any = false;
        for (const auto* vs : {&g.nodes[i].inputs, &g.nodes[i].outputs})
          for (ValueId v : *vs)
            any |= v != kNoValue && symbolic.values[v] && !is_static(*symbolic.values[v]);
        not_dynamic[i] = any ? jit::why_not_dynamic(g, g.nodes[i], symbolic.values)
                             : "no dim changed during warm-up";
        return not_dynamic[i].empty();
      };
    // Merging tiers (SessionOptions::merge_tiers): one kernel for a static region and an
    // adjacent dynamic one where the merged region is a dynamic region the JIT compiles (its
    // stable ops' dims stay constants, so they lose no specialisation). Without the option, a
    // static region of shape arithmetic only (small integer values: Shape(x)[0:2] concatenated
    // with constants) still merges, since it costs nothing to make again and would otherwise cut
    // the dynamic region it sits in two (the region making x, the one reshaping by it).
    if (ro.dynamic)
      ro.merge_tiers = [this, stable](const Graph& g, const std::vector<int32_t>& nodes) {
        if (!options.merge_tiers)
          for (int32_t n : nodes)
            if (stable[n] && !small_integers(g.nodes[n])) return false;
        Region r = region_of_nodes(g, nodes);
        r.dynamic = true;
        for (int32_t n : nodes)
          if (!jit::why_not_dynamic(g, g.nodes[n], symbolic.values).empty()) return false;
        return dynamic_shapes(r).why_interpreted.empty();
      };
    return ro;
  }

  // Whether node n makes small integer values only (ShapeTracker::small_integers, at a static
  // shape): shape arithmetic.
  bool small_integers(const Node& n) const {
    for (ValueId v : n.outputs) {
      const std::optional<SymShape>& s = symbolic.values[v];
      if (!s || !is_static(*s) ||
          !ShapeTracker::small_integers(graph.values[v].dtype, numel(eval_shape(*s, {}))))
        return false;
    }
    return true;
  }

  // A dynamic region's shapes over symbols of its own (numbered in the order its inputs name
  // them, so that regions of the same code share a kernel whatever the graph's numbering).
  RegionPlan dynamic_shapes(const Region& r) const {
    RegionPlan p;
    p.region = r;
    std::vector<int32_t> local(symbolic.symbols.size(), -1);
    const auto remap = [&](ValueId v, bool from_input) {
      SymShape s = *symbolic.values.at(v);
      for (SymDim& d : s) {
        if (!d.symbolic()) continue;
        int32_t& k = local[static_cast<size_t>(d.sym)];
        if (k < 0 && from_input) {
          k = static_cast<int32_t>(p.symbols.size());
          p.symbols.push_back(symbolic.symbols[static_cast<size_t>(d.sym)].name);
        }
        if (k < 0) p.why_interpreted = "a symbol of its outputs is none of its inputs'";
        d.sym = k;
      }
      p.planned_sym.emplace_back(v, s);
      return s;
    };
    for (ValueId v : r.inputs) p.input_sym.push_back(remap(v, true));
    for (int32_t n : r.nodes)
      for (ValueId v : graph.nodes[n].outputs) remap(v, false);
    const auto require = [&](const SymDim& d, int64_t least) {  // d >= least, once per dim
      const auto at = std::find_if(p.dim_checks.begin(), p.dim_checks.end(),
                                   [&](const auto& c) { return c.first == d; });
      if (at == p.dim_checks.end())
        p.dim_checks.emplace_back(d, least);
      else
        at->second = std::max(at->second, least);
    };
    for (const auto& [v, s] : p.planned_sym)
      for (size_t i = 0; i < s.size(); ++i) {
        if (!s[i].symbolic() || !p.why_interpreted.empty()) continue;
        const SymDim global = (*symbolic.values[v])[i];  // (over the graph's symbols)
        int64_t least = 1;                               // 0 if warm-up saw this dim empty
        for (int64_t x : symbolic.symbols[static_cast<size_t>(global.sym)].seen) {
          const int64_t one[] = {x};
          if (SymDim{0, global.scale, global.offset, global.div}.value(one) == 0) least = 0;
        }
        require(s[i], least);
      }
    // What the kernels need beyond that (a slice of static length from a symbolic dim).
    for (int32_t n : r.nodes)
      for (auto [d, least] : jit::dynamic_needs(graph, graph.nodes[n], symbolic.values)) {
        if (!d.symbolic()) continue;
        const int32_t k = local[static_cast<size_t>(d.sym)];
        if (k < 0) {
          p.why_interpreted = "a symbol its kernels need bounded is none of its inputs'";
          continue;
        }
        d.sym = k;
        require(d, least);
      }
    for (ValueId v : r.outputs) {  // (in Region::outputs' order, the kernel's)
      const SymShape* s = planned(p, v);
      SG_ASSERT(s) << "a region output no node of it makes";
      p.output_sym.push_back(*s);
      p.output_dtypes.push_back(graph.values[v].dtype);
    }
    // A kernel's shapes come from the symbols alone. The values they may depend on are a
    // Reshape's or Expand's shape operand, a Slice's ends and a Range's limit (its start and
    // delta constants), whose elements are forms of the region's symbols (Shape(x) -> Gather ->
    // Concat, as exporters write x.view(x.size(0), -1)): a region input whose elements were such
    // forms in every warm-up run (the guard checks them), or a value the region computes from its
    // own shapes and such inputs (ops::symbolic_value). The op's planned output must be what its
    // rule makes of those forms. Any other value keeps the region interpreted (a static region
    // guards such values).
    const ValueGuards vg = value_guards(graph, r, value_shapes, tracker->small_values());
    if (!vg.why_not.empty()) {
      p.why_interpreted = vg.why_not;
    } else if ((!vg.guards.empty() || vg.of_shapes) && p.why_interpreted.empty()) {
      std::vector<SymDim> used;  // (symbolic elements: each must be 1 or more)
      if (std::string why = symbolic_value_guards(r, vg, local, p, used); !why.empty())
        p.why_interpreted = "its shapes depend on the values of " + why;
      else
        for (const SymDim& d : used) require(d, 1);  // (0 would make Reshape copy the input's dim)
    }
    if (p.why_interpreted.empty()) collapse_divided_symbols(p);
    return p;
  }

  // A symbol that the region's inputs give only divided (a transformer block after a strided
  // stem sees its length as (width+3)/4, never width) cannot be bound from them: the guard would
  // miss on every call. When every dim of the region naming it is that one form, the form is
  // the region's symbol instead (any width with that quotient gives the same sizes, so the
  // kernel cannot tell them apart); otherwise the region is interpreted.
  static void collapse_divided_symbols(RegionPlan& p) {
    const auto each_dim = [&](const auto& f) {
      for (SymShape& s : p.input_sym)
        for (SymDim& d : s) f(d);
      for (SymShape& s : p.output_sym)
        for (SymDim& d : s) f(d);
      for (auto& [v, s] : p.planned_sym)
        for (SymDim& d : s) f(d);
      for (auto& [i, s] : p.value_sym_guards)
        for (SymDim& d : s) f(d);
      for (auto& [d, least] : p.dim_checks) f(d);
    };
    for (size_t k = 0; k < p.symbols.size(); ++k) {
      const auto sym = static_cast<int32_t>(k);
      bool direct = false;
      for (const SymShape& s : p.input_sym)
        for (const SymDim& d : s) direct |= d.sym == sym && d.div == 1;
      if (direct) continue;
      std::optional<SymDim> form;
      bool one_form = true;
      each_dim([&](SymDim& d) {
        if (d.sym != sym) return;
        if (!form) form = d;
        one_form &= d == *form;
      });
      if (!form) continue;
      if (!one_form) {
        p.why_interpreted = "its inputs give symbol '" + p.symbols[k] +
                            "' only divided, and its dims name it in other forms too";
        return;
      }
      const SymDim f = *form;
      each_dim([&](SymDim& d) {
        if (d.sym == sym) d = SymDim{sym, 1, 0, 1};
      });
      std::vector<Symbol> names;
      for (const std::string& n : p.symbols) names.push_back({n, {}});
      p.symbols[k] = sym_dim_str(f, names);
    }
  }

  // v's planned symbolic shape in p, nullptr when p neither reads nor makes it.
  static const SymShape* planned(const RegionPlan& p, ValueId v) {
    for (const auto& [w, s] : p.planned_sym)
      if (w == v) return &s;
    return nullptr;
  }

  // symbolic_value_guards' planned output of Reshape node n for shape operand elements `e` (over
  // p's symbols): "" when p.planned_sym has exactly that, else why not.
  std::string reshape_matches(const RegionPlan& p, const Node& n, const SymShape& e) const {
    const SymShape* in = planned(p, n.inputs[0]);
    const SymShape* out = planned(p, n.outputs[0]);
    if (!in || !out || out->size() != e.size()) return "its output's rank";
    if (n.attrs.get_int("allowzero", 0) != 0) return "allowzero";
    int inferred = 0;
    for (size_t j = 0; j < e.size(); ++j) {
      if (e[j].symbolic()) {
        if (!(e[j] == (*out)[j])) return "a dim not the operand's element";
      } else if (e[j].offset == -1) {
        ++inferred;  // (the view's lowering checks that the element counts agree)
      } else if (e[j].offset == 0) {
        if (j >= in->size() || !((*in)[j] == (*out)[j])) return "a copied dim not the input's";
      } else if (e[j].offset < -1 || !((*out)[j] == e[j])) {
        return "a dim not the operand's element";
      }
    }
    return inferred <= 1 ? "" : "two inferred dims";
  }

  // symbolic_value_guards' planned output of Expand node n for shape operand elements `e` (over
  // p's symbols): "" when p.planned_sym has exactly what broadcasting the input to them makes,
  // for every value of the symbols the guard lets through (each symbolic element at least 1).
  std::string expand_matches(const RegionPlan& p, const Node& n, const SymShape& e) const {
    const SymShape* in = planned(p, n.inputs[0]);
    const SymShape* out = planned(p, n.outputs[0]);
    if (!in || !out || out->size() != std::max(in->size(), e.size())) return "its output's rank";
    const size_t r = out->size();
    for (size_t d = 0; d < r; ++d) {
      const SymDim one = SymDim::constant(1);
      const SymDim& x = d + in->size() >= r ? (*in)[d + in->size() - r] : one;
      const SymDim& t = d + e.size() >= r ? e[d + e.size() - r] : one;
      const SymDim& o = (*out)[d];
      if (t.is_one()) {
        if (!(o == x)) return "a dim not the input's";
      } else if (t.symbolic() || t.offset > 1) {
        // (x of 1 broadcasts to t; x of t's form stays t; another x might be neither at run time)
        if (!(o == t) || !(x.is_one() || x == t))
          return "a dim neither the input's nor the operand's";
      } else {
        return "an operand element below 1";
      }
    }
    return "";
  }

  // symbolic_value_guards' planned output of Slice node n for computed ends `e` (over p's
  // symbols), its starts (>= 0), axes and steps (1) constants: "" when each sliced dim of
  // p.planned_sym is e - start and the guard can make sure that start < e <= the input's dim (the
  // planned dim's own check puts e - start at 1 or more; `require` gets what else it takes), else
  // why not.
  template <class Require>
  std::string slice_matches(const RegionPlan& p, const Node& n, const SymShape& e,
                            const Require& require) const {
    const SymShape* in = planned(p, n.inputs[0]);
    const SymShape* out = planned(p, n.outputs[0]);
    if (!in || !out || in->size() != out->size()) return "its output's rank";
    const auto constant = [&](size_t i) -> const Tensor* {
      if (i >= n.inputs.size() || n.inputs[i] == kNoValue) return nullptr;
      const Tensor& t = graph.values[n.inputs[i]].initializer;
      return t.defined() ? &t : nullptr;
    };
    const auto absent = [&](size_t i) { return i >= n.inputs.size() || n.inputs[i] == kNoValue; };
    if (!constant(1) || !(absent(3) || constant(3)) || !(absent(4) || constant(4)))
      return "its starts, axes or steps";
    std::string why;
    const std::optional<ops::SliceFromStarts> f =
        ops::slice_from_starts(in->size(), *constant(1), constant(3), constant(4), why);
    if (!f) return why;
    if (e.size() != f->axis.size()) return "as many ends as starts";
    std::vector<bool> sliced(in->size(), false);
    for (size_t i = 0; i < f->axis.size(); ++i) {
      const size_t a = f->axis[i];
      sliced[a] = true;
      const SymDim& dim = (*in)[a];
      const SymDim& o = (*out)[a];
      const SymDim& end = e[i];
      if (!(o == end.plus(-f->start[i]))) return "a sliced dim not its end less its start";
      if (end == dim) continue;  // (to the input's end)
      if (!end.symbolic()) {
        if (end.offset < 1) return "an end below 1";
        if (dim.symbolic())
          require(dim, end.offset);  // dim >= end
        else if (dim.offset < end.offset)
          return "an end past its input";
      } else if (!dim.symbolic() && end.div == 1 && end.scale > 0) {
        require(SymDim{end.sym, -end.scale, dim.offset - end.offset, 1}, 0);  // dim - end >= 0
      } else {
        return "an end that may pass its input's dim";
      }
    }
    for (size_t d = 0; d < in->size(); ++d)
      if (!sliced[d] && !((*in)[d] == (*out)[d])) return "an unsliced dim not its input's";
    return "";
  }

  // Whether symbolic_value_guards follows input k of node n, a value its shape rule reads, as forms
  // of the symbols (operand_matches, range_matches).
  static bool follows(const Node& n, size_t k) {
    switch (n.op) {
      case OpKind::Reshape:
      case OpKind::Expand:
        return k == 1;  // the shape operand
      case OpKind::Slice:
        return k == 2;  // the ends
      case OpKind::ConstantOfShape:
      case OpKind::Range:
        return true;
      default:
        return false;
    }
  }

  // symbolic_value_guards' check of node n's planned output for the elements `e` of the operand it
  // follows (but Range's, range_matches): "" when the output is what n's rule makes of them, else
  // why not.
  template <class Require>
  std::string operand_matches(const RegionPlan& p, const Node& n, const SymShape& e,
                              const Require& require) const {
    switch (n.op) {
      case OpKind::Reshape:
        return reshape_matches(p, n, e);
      case OpKind::Expand:
        return expand_matches(p, n, e);
      case OpKind::Slice:
        return slice_matches(p, n, e, require);
      case OpKind::ConstantOfShape: {
        const SymShape* out = planned(p, n.outputs[0]);
        return out && *out == e ? "" : "its dims not the operand's elements";
      }
      default:
        return "not an operand the planner follows";
    }
  }

  // symbolic_value_guards' planned output of Range node n for its start, limit and delta forms
  // (over p's symbols): "" when p.planned_sym has the count ceil((limit - start) / delta), its
  // start and delta constants (delta >= 1), else why not. (A count below the planned dim's least
  // value, an empty or negative one included, fails that dim's guard check.)
  std::string range_matches(const RegionPlan& p, const Node& n, const SymDim& start,
                            const SymDim& limit, const SymDim& delta) const {
    const SymShape* out = planned(p, n.outputs[0]);
    if (!out || out->size() != 1) return "its output's rank";
    if (start.symbolic() || delta.symbolic() || delta.offset < 1) return "its start or delta";
    const SymDim count = limit.plus(delta.offset - 1 - start.offset).divided(delta.offset);
    return (*out)[0] == count ? "" : "its size not the count its limit gives";
  }

  // Fills p.value_sym_guards for vg's guards when every value the region's shape rules read is
  // the shape operand of a Reshape or an Expand, a Slice's ends or a Range's scalars, whose
  // elements are forms of the symbols: a region input with symbolic elements
  // (ShapeTracker::SymbolicDims::elements), or a value the region makes from its shapes and such
  // inputs (region_elements). Returns "" and adds the symbolic elements read to `used`, or why not
  // ("'value'" and maybe more).
  std::string symbolic_value_guards(const Region& r, const ValueGuards& vg,
                                    const std::vector<int32_t>& local, RegionPlan& p,
                                    std::vector<SymDim>& used) const {
    const auto quoted = [&](ValueId v) { return "'" + graph.values[v].name + "'"; };
    for (const auto& [node, k] : vg.reads) {
      const Node& n = graph.nodes[node];
      if (graph.values[n.inputs[k]].initializer.defined()) continue;  // (in the code)
      if (!follows(n, k)) return quoted(n.inputs[k]);
    }
    // The guarded inputs' elements, over the region's symbols.
    std::vector<std::optional<SymShape>> elements(graph.values.size());
    std::vector<std::pair<size_t, SymShape>> guards;
    for (const auto& [i, values] : vg.guards) {
      const ValueId v = r.inputs[i];
      if (static_cast<size_t>(v) >= symbolic.elements.size() || !symbolic.elements[v])
        return quoted(v) + ", not forms of its symbols";
      SymShape e = *symbolic.elements[v];
      for (SymDim& d : e) {
        if (!d.symbolic()) continue;
        const int32_t k = local[static_cast<size_t>(d.sym)];
        if (k < 0) return quoted(v) + ", forms of a symbol none of its inputs has";
        d.sym = k;
      }
      elements[v] = e;
      guards.emplace_back(i, std::move(e));
    }
    std::vector<std::pair<SymDim, int64_t>> needs;  // (for p.dim_checks)
    const auto require = [&](const SymDim& d, int64_t least) { needs.emplace_back(d, least); };
    for (const auto& [node, k] : vg.reads) {
      const Node& n = graph.nodes[node];
      const ValueId v = n.inputs[k];
      if (n.op == OpKind::Range) {  // (its three scalars at once)
        if (k != 1) continue;
        std::optional<SymShape> e[3];
        for (size_t i = 0; i < 3; ++i) {
          e[i] = region_elements(r, p, n.inputs[i], elements);
          if (!e[i] || e[i]->size() != 1)
            return quoted(n.inputs[i]) + ", not a form of its symbols";
        }
        if (std::string no = range_matches(p, n, e[0]->front(), e[1]->front(), e[2]->front());
            !no.empty())
          return quoted(v) + " (Range '" + n.name + "': " + no + ")";
        continue;
      }
      if (graph.values[v].initializer.defined()) continue;
      const std::optional<SymShape> e = region_elements(r, p, v, elements);
      if (!e) return quoted(v) + ", computed in it from values not forms of its symbols";
      const std::string no = operand_matches(p, n, *e, require);
      if (!no.empty())
        return quoted(v) + " (" + std::string(op_name(n.op)) + " '" + n.name + "': " + no + ")";
      for (const SymDim& d : *e)
        if (d.symbolic()) used.push_back(d);
    }
    for (const auto& [i, e] : guards)
      for (const SymDim& d : e)
        if (d.symbolic()) used.push_back(d);
    p.value_sym_guards = std::move(guards);
    p.dim_checks.insert(p.dim_checks.end(), needs.begin(), needs.end());
    return "";
  }

  // The elements of value v of region r as forms of p's symbols, memoised in `known` (which
  // holds the guarded inputs'): a constant's, or those the region's nodes make from their
  // inputs' planned shapes and elements (ops::symbolic_value); nullopt where not known.
  std::optional<SymShape> region_elements(const Region& r, const RegionPlan& p, ValueId v,
                                          std::vector<std::optional<SymShape>>& known) const {
    if (known[v]) return known[v];
    const ValueInfo& val = graph.values[v];
    if (val.initializer.defined()) {
      if (!ShapeTracker::small_integers(val.dtype, val.initializer.numel())) return std::nullopt;
      SymShape e;
      for (int64_t x : val.initializer.to_int64()) e.push_back(SymDim::constant(x));
      return known[v] = e;
    }
    const int32_t producer = val.producer;
    if (producer < 0 || !std::binary_search(r.nodes.begin(), r.nodes.end(), producer))
      return std::nullopt;  // (an input not guarded by value)
    const Node& n = graph.nodes[producer];
    if (n.outputs.size() != 1) return std::nullopt;
    const bool of_shapes = ops::op_def(n.op).value_of_shapes;
    std::vector<std::optional<SymShape>> elems(n.inputs.size());
    std::vector<const SymShape*> in(n.inputs.size(), nullptr), el(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] == kNoValue) continue;
      in[i] = planned(p, n.inputs[i]);
      if (!of_shapes) elems[i] = region_elements(r, p, n.inputs[i], known);
      if (elems[i]) el[i] = &*elems[i];
    }
    try {
      std::optional<SymShape> e = ops::symbolic_value(graph, n, in, el);
      if (e) known[v] = e;
      return e;
    } catch (const Error&) {  // (parameters the op's rule rejects)
      return std::nullopt;
    }
  }

  void compile_dynamic(RegionPlan& p) {
    if (!p.why_interpreted.empty()) return;
    std::vector<std::optional<SymShape>> shapes(graph.values.size());
    for (const auto& [v, s] : p.planned_sym) shapes[v] = s;
    compile(p, [this, region = p.region, shapes = std::move(shapes), symbols = p.symbols.size(),
                serial = serial_kernel()](jit::Jit& j, bool cached_only) {
      return jit::compile_dynamic_region(
          j, graph, region, shapes, symbols, "sg_dynamic",
          cached_only ? jit::Jit::Reuse::cached_only : jit::Jit::Reuse::same_code, serial);
    });
  }

  // Every value's shape as the tracker's latest run saw it (the shapes kernels are compiled for).
  std::vector<Shape> shapes_seen(const ShapeTracker& t) const {
    std::vector<Shape> shapes(graph.values.size());
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const Node& n = graph.nodes[i];
      const auto idx = static_cast<int32_t>(i);
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (n.inputs[k] != kNoValue) shapes[n.inputs[k]] = t.input_shapes(idx)[k];
      for (size_t k = 0; k < n.outputs.size(); ++k) shapes[n.outputs[k]] = t.output_shapes(idx)[k];
    }
    return shapes;
  }

  // A region's plan at `shapes` (`values`: the small values recorded with them): its guards, its
  // kernel (`reuse`: shared with earlier regions of the same code, or always compiled afresh)
  // and its threads, from `prof`'s times.
  RegionPlan make_plan(const Region& r, const std::vector<Shape>& shapes, const OpProfiler& prof,
                       jit::Jit::Reuse reuse, const std::vector<Tensor>* values = nullptr) {
    RegionPlan p;
    p.region = r;
    for (ValueId v : r.inputs) p.input_shapes.push_back(shapes[v]);
    for (ValueId v : r.outputs) {
      p.output_shapes.push_back(shapes[v]);
      p.output_dtypes.push_back(graph.values[v].dtype);
    }
    ValueGuards vg = value_guards(graph, r, shapes, values ? *values : tracker->small_values());
    if (vg.why_not.empty()) {
      p.value_guards = std::move(vg.guards);
      compile(p, [this, region = p.region, shapes, reuse, serial = serial_kernel()](
                     jit::Jit& j, bool cached_only) {
        return jit::compile_region(j, graph, region, shapes, "sg_region",
                                   cached_only ? jit::Jit::Reuse::cached_only : reuse, serial);
      });
    } else {
      p.why_interpreted = vg.why_not;  // its shapes depend on values it cannot check
    }
    plan_threads(p, prof);
    return p;
  }

  // Whether every kernel runs on one thread, so it is compiled with its nests called directly
  // (jit::compile_region's `serial`). From the configuration alone, not from the region's
  // profiled time like its threads (plan_threads): the kernel's code, and so its disk cache key,
  // must not follow a warm-up's timing, or replicas of one service on a loaded machine would miss
  // each other's kernels. A kernel of the parallel form on one thread (a small region) is as
  // fast: its nests too small to repay a dispatch are inlined anyway (KernelBuilder::loop_nest),
  // and sgraph_parallel_for on a one-thread context calls the others directly.
  bool serial_kernel() const { return max_threads == 1; }

  // Resources: a kernel's threads, from its ops' profiled time; every plan gets its own
  // context (a cached kernel is shared, its context is not).
  void plan_threads(RegionPlan& p, const OpProfiler& prof) const {
    if (p.fn == nullptr) {
      p.threads_why = "interpreted";
      return;
    }
    p.threads = region_threads(profiled_ns(p.region, prof), max_threads, &p.threads_why);
    p.ctx = std::make_shared<KernelContext>(p.threads);
    SG_LOG(2) << "region of " << p.region.nodes.size() << " ops: " << p.threads_why;
  }

  // The sum of a region's ops' median interpreted time over the runs `prof` saw.
  static int64_t profiled_ns(const Region& r, const OpProfiler& prof) {
    int64_t ns = 0;
    for (int32_t n : r.nodes) ns += prof.profile(n).median_ns;
    return ns;
  }

  // 4. compile: one fused kernel per region; a region the JIT cannot compile stays interpreted,
  // with the reason in the report. The JIT shares a kernel between regions whose emitted code is
  // the same (repeated layers, a re-planned region returning to a known form): the key is the
  // code, so nothing the code depends on can be left out of it. With background compilation the
  // job goes to the compiler threads (it owns copies of what it reads, but the graph and the JIT),
  // and the region is interpreted until a call installs its kernel (install_compiled).
  // Builds the region's kernel; `cached_only`: only if the JIT's memory or disk cache has it
  // (else returns no kernel, compiling nothing).
  using CompileJob = std::function<jit::CompiledRegion(jit::Jit&, bool cached_only)>;
  void compile(RegionPlan& p, CompileJob compile_it) {
    if (!options.jit) {
      p.why_interpreted = "JIT disabled";
      return;
    }
    if (budget_defers(p)) {
      if (p.saving_ns > 0 && load_cached(p, compile_it)) return;
      p.deferred_job = std::move(compile_it);
      return;
    }
    compile_now(p, std::move(compile_it));
  }

  // The compile budget (SessionOptions::compile_horizon). The predictions: a kernel's time is the
  // bytes its region reads and writes at memory bandwidth (optimistic for compute-bound regions,
  // so those are rather compiled than not); a compile takes kCompileMs + kCompileMsPerOp per op
  // (fitted to this machine's serial-kernel compiles of ../shared/testdata's models, 0.7-2.6x
  // either way: bench/compile/budget.sh, bench/README.md "The compile budget"), scaled by how
  // this Session's compiles compared with that.
  static constexpr double kBytesPerNs = 10.0;  // ~10 GB/s
  static constexpr double kCompileMs = 8.0, kCompileMsPerOp = 2.5;
  static double base_compile_ms(const Region& r) {
    return kCompileMs + kCompileMsPerOp * static_cast<double>(r.nodes.size());
  }
  bool budget_defers(RegionPlan& p) {
    if (options.compile_horizon <= 0 || options.mode != CompileMode::profile_guided) return false;
    int64_t bytes = 0;
    const auto add = [&](ValueId v) {
      if (v == kNoValue || static_cast<size_t>(v) >= value_shapes.size()) return;
      bytes += numel(value_shapes[v]) * static_cast<int64_t>(dtype_size(graph.values[v].dtype));
    };
    for (ValueId v : p.region.inputs) add(v);
    for (ValueId v : p.region.outputs) add(v);
    const int64_t interpreted = profiled_ns(p.region, *profiler);
    const auto kernel = static_cast<int64_t>(static_cast<double>(bytes) / kBytesPerNs);
    p.saving_ns = interpreted - kernel;
    const double scale = base_ms_compiled > 0 ? ms_compiled / base_ms_compiled : 1.0;
    p.predicted_compile_ms = base_compile_ms(p.region) * scale;
    std::ostringstream why;
    why.precision(3);
    if (p.saving_ns <= 0) {
      why << "left interpreted: its ops take ~" << interpreted / 1e3 << " us a call, a kernel ~"
          << kernel / 1e3 << " us (no saving)";
      p.budget = why.str();
      p.why_interpreted = "compile budget: " + p.budget;
      return true;
    }
    const auto repaid =
        static_cast<int64_t>(p.predicted_compile_ms * 1e6 / static_cast<double>(p.saving_ns)) + 1;
    why << "saves ~" << static_cast<double>(p.saving_ns) / 1e3 << " us a call, compiling ~"
        << p.predicted_compile_ms << " ms repays after " << repaid << " calls (horizon "
        << options.compile_horizon << ")";
    if (repaid <= options.compile_horizon) {
      p.budget = "compiled at once: " + why.str();
      return false;
    }
    p.budget = "deferred: " + why.str() + "; compiled once it has run that many calls interpreted";
    p.why_interpreted = "compile budget: deferred";
    return true;
  }
  // A deferred region whose interpreted calls have repaid its predicted compile.
  static bool deferred_due(const RegionPlan& p) {
    return p.deferred_job && p.saving_ns > 0 &&
           static_cast<double>(p.stats->interpreted_calls) * static_cast<double>(p.saving_ns) >=
               p.predicted_compile_ms * 1e6;
  }
  // Compiles the deferred regions that are due, in a new copy of the plan (their kernels serve
  // from the next call, or once the compiler threads have them). Under plan_mu.
  void compile_deferred(int call) {
    const Published p = published();
    if (!p.exec) return;
    std::vector<RegionPlan> regions = p.exec->regions();
    std::vector<size_t> due;
    Batch batch(*this);
    for (size_t i = 0; i < regions.size(); ++i) {
      RegionPlan& r = regions[i];
      if (!deferred_due(r)) continue;
      due.push_back(i);
      CompileJob job = std::move(r.deferred_job);
      r.deferred_job = nullptr;
      r.why_interpreted.clear();
      r.budget += "; compiled after " + std::to_string(r.stats->interpreted_calls.load()) +
                  " calls interpreted";
      compile_now(r, std::move(job));
    }
    batch.run(regions, *profiler);
    for (size_t i : due)
      if (regions[i].fn != nullptr) regions[i].active_from_call = call;
    if (!due.empty())
      publish(std::make_shared<const ExecutableGraph>(*p.exec, std::move(regions)), nullptr);
  }

  // Synchronous compiles of one plan (or of the deferred regions due), run together: while a
  // Batch is open, compile_now queues each region's job (the region's compile_job holds its id)
  // instead of compiling it; run() compiles them all at once, on up to the JIT's compile threads
  // (regions of a model compile concurrently, the JIT compiling outside its lock), records each
  // kernel in its plan and plans its threads (from `prof`). With background compilation a Batch
  // does nothing: the jobs go to the compiler threads as they come.
  class Batch {
   public:
    explicit Batch(Impl& s) : s_(s) {
      if (!s_.background) s_.batch.emplace();
    }
    ~Batch() { s_.batch.reset(); }  // (a plan that threw: its jobs are dropped)
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;
    void run(std::vector<RegionPlan>& plans, const OpProfiler& prof) {
      if (!s_.batch) return;
      std::vector<BackgroundCompiler::Queued> jobs = std::exchange(*s_.batch, {});
      if (jobs.empty()) return;
      const auto start = std::chrono::steady_clock::now();
      std::vector<BackgroundCompiler::Done> done;
      try {
        done = BackgroundCompiler::run_all(std::move(jobs), s_.the_jit().compile_threads());
      } catch (const std::exception& e) {  // (out of memory queueing them)
        for (RegionPlan& r : plans)
          if (r.compile_job != 0) {
            r.compile_job = 0;
            r.why_interpreted = std::string("compiling failed: ") + e.what();
          }
        return;
      }
      s_.compile_wall_ms += ms_since(start);
      for (BackgroundCompiler::Done& d : done) s_.take_done(plans, d, prof);
    }

   private:
    Impl& s_;
  };

  void compile_now(RegionPlan& p, CompileJob compile_it) {
    try {
      if (background || batch) {
        jit::Jit& j = the_jit();
        p.compile_job = ++compile_jobs;
        BackgroundCompiler::Job job = [j = &j, f = std::move(compile_it)] { return f(*j, false); };
        if (batch) {
          batch->push_back({p.compile_job, std::move(job)});
          return;
        }
        background->set_workers(j.compile_threads());
        background->submit(p.compile_job, std::move(job));
        return;
      }
      const auto start = std::chrono::steady_clock::now();
      jit::CompiledRegion c = compile_it(the_jit(), false);
      compile_wall_ms += ms_since(start);
      record(p, std::move(c));
    } catch (const Error& e) {
      p.why_interpreted = e.what();
    }
  }

  // The JIT this Session's kernels go to (its Runtime's for the Session's cache directory), got
  // at the first compile.
  jit::Jit& the_jit() {
    if (!jit) jit = options.runtime->impl().jit({options.cache_dir, options.cache_max_bytes});
    return *jit;
  }

  // A region the budget would defer whose kernel is already in the JIT's memory or disk cache
  // costs no compile: it is taken now (in this thread: building the IR to key it and loading the
  // object take milliseconds). False when no cache has it.
  bool load_cached(RegionPlan& p, const CompileJob& compile_it) {
    try {
      const auto start = std::chrono::steady_clock::now();
      jit::CompiledRegion c = compile_it(the_jit(), true);
      compile_wall_ms += ms_since(start);
      if (c.kernel.fn == nullptr) return false;
      p.why_interpreted.clear();
      p.budget = "its kernel was cached (" + std::string(c.kernel.from_disk ? "disk" : "memory") +
                 "), taken at once; else " + p.budget;
      record(p, std::move(c));
      return true;
    } catch (const Error& e) {
      SG_LOG(1) << "compile budget: looking the kernel up in the caches failed: " << e.what();
      return false;
    }
  }

  // A compiled region's kernel in its plan (and its resources once installed after the plan).
  void record(RegionPlan& p, jit::CompiledRegion c) {
    if (c.kernel.fn == nullptr) {
      p.why_interpreted = c.why_not;
      return;
    }
    handles.push_back(c.kernel.handle);
    p.fn = c.kernel.fn;
    p.kernel_handle = c.kernel.handle;
    p.scratch_bytes = c.scratch_bytes;
    p.scratch_sym = std::move(c.scratch_sym);
    p.cache_hit = c.kernel.reused;
    if (p.cache_hit) return;
    p.compile_ms += c.compile_ms;
    compile_ms_total += c.compile_ms;
    if (c.kernel.from_disk) {
      p.disk_hit = true;
      ++disk_loads;
      return;
    }
    ++p.compiles;
    ++compilations;
    ms_compiled += c.compile_ms;
    base_ms_compiled += base_compile_ms(p.region);
  }

  // A finished compile job's kernel (or its error) in the plan among `plans` that holds the job,
  // with the plan's threads (from `prof`); that plan, or nullptr when none holds the job any more
  // (its region re-planned away: its kernel is dropped). For background and Batch jobs alike.
  RegionPlan* take_done(std::vector<RegionPlan>& plans, BackgroundCompiler::Done& d,
                        const OpProfiler& prof) {
    auto r = std::find_if(plans.begin(), plans.end(),
                          [&](const RegionPlan& rp) { return rp.compile_job == d.job; });
    if (r == plans.end()) {
      if (d.compiled.kernel.fn != nullptr) jit->remove(d.compiled.kernel.handle);
      return nullptr;
    }
    r->compile_job = 0;
    if (!d.error.empty()) {
      r->why_interpreted = d.error;
    } else {
      record(*r, std::move(d.compiled));
      plan_threads(*r, prof);
    }
    return &*r;
  }

  // Background compilation: the kernels finished since the last call, installed in a new copy
  // of the plan (`call`: the first call to use them), published for the calls that start after;
  // calls in flight finish on the copy they have. A kernel whose region was re-planned away
  // meanwhile is dropped. Called by a call (install_ready) or wait_compiled(); under plan_mu.
  void install_compiled(int call) {
    if (!background) return;
    std::vector<BackgroundCompiler::Done> done = background->take_done();
    if (done.empty()) return;
    const Published p = published();
    std::vector<RegionPlan> regions = p.exec ? p.exec->regions() : std::vector<RegionPlan>{};
    bool changed = false;
    for (BackgroundCompiler::Done& d : done) {
      RegionPlan* r = take_done(regions, d, *profiler);
      if (r == nullptr) continue;
      changed = true;
      if (!d.error.empty()) continue;
      if (r->fn != nullptr) r->active_from_call = call;
      SG_LOG(2) << "installed the kernel of a region of " << r->region.nodes.size()
                << " ops for call " << call;
    }
    if (changed)
      publish(std::make_shared<const ExecutableGraph>(*p.exec, std::move(regions)), nullptr);
  }

  // A call's chance to install finished kernels: only when there are some and no other thread
  // is planning (then a later call installs them).
  void install_ready(int call) {
    if (!background || !background->has_done()) return;
    std::unique_lock<std::mutex> lock(plan_mu, std::try_to_lock);
    if (lock.owns_lock()) install_compiled(call);
  }

  // --- CompileMode::per_signature: the per-signature compiler baseline ---
  // A call with a new signature (its inputs' shapes) is interpreted once, recording every value's
  // shape and every op's time; then the whole graph is planned at those shapes (every op stable,
  // so every compilable op joins a region) and each region compiled afresh, sharing no kernel
  // with another signature. Later calls with that signature run its plan. No warm-up, no
  // re-plans: a guard can only miss when shapes depend on input values, and then the region's
  // ops are interpreted.
  struct SignaturePlan {
    Partition partition;
    std::unique_ptr<OpProfiler> profile;  // of the signature's interpreted call
    std::shared_ptr<const ExecutableGraph> exec;
  };

  // Calls of known signatures run at once; a new signature's call plans and compiles under
  // plan_mu (calls needing a plan wait for it: this is the baseline, not the product).
  std::vector<Tensor> run_per_signature(const std::vector<Tensor>& inputs, TimingObserver* timing) {
    std::vector<Shape> signature;
    for (const Tensor& t : inputs) signature.push_back(t.shape());
    std::shared_ptr<const SignaturePlan> known;
    std::unique_lock<std::mutex> lock(plan_mu);
    if (auto it = signatures.find(signature); it != signatures.end()) {
      current = known = it->second;
      lock.unlock();
      return known->exec->run(inputs, with_timing(timing, {}));
    }
    ShapeTracker shapes(graph);
    auto profile = std::make_unique<OpProfiler>(graph, 1);
    shapes.begin_run();
    std::vector<Tensor> out =
        interpreter->run(inputs, with_timing(timing, {&shapes, profile.get()}));
    shapes.end_run();
    auto sp = std::make_shared<const SignaturePlan>(
        plan_signature(shapes_seen(shapes), shapes.small_values(), std::move(profile)));
    signatures.emplace(std::move(signature), sp);
    current = sp;
    planned_flag = true;
    return out;
  }

  SignaturePlan plan_signature(const std::vector<Shape>& shapes, const std::vector<Tensor>& values,
                               std::unique_ptr<OpProfiler> profile) {
    SignaturePlan sp;
    sp.profile = std::move(profile);
    const std::vector<bool> all_stable(graph.nodes.size(), true);
    sp.partition = build_regions(graph, all_stable, region_options(all_stable));
    std::vector<RegionPlan> plans;
    Batch batch(*this);
    for (const Region& r : sp.partition.regions)
      plans.push_back(make_plan(r, shapes, *sp.profile, jit::Jit::Reuse::never, &values));
    batch.run(plans, *sp.profile);
    sp.exec = std::make_shared<const ExecutableGraph>(
        graph, std::move(plans), WarmupShapes{shapes, all_stable}, subgraphs.get());
    SG_LOG(1) << "compiled graph '" << graph.name << "' for input signature "
              << signatures.size() + 1 << ": " << sp.partition.regions.size() << " regions, "
              << sp.exec->num_steps() << " steps";
    return sp;
  }

  Report report() const {
    std::lock_guard<std::mutex> lock(plan_mu);
    // What is being served: the profile-guided plan, or the latest call's signature's.
    const std::shared_ptr<const ExecutableGraph> served = published().exec;
    const ExecutableGraph* ex = current ? current->exec.get() : served.get();
    const Partition& part = current ? current->partition : partition;
    const OpProfiler& prof = current ? *current->profile : *profiler;
    Report rep;
    rep.graph = graph.name;
    rep.mode = options.interpret_only                       ? "interpret"
               : options.mode == CompileMode::per_signature ? "per_signature"
                                                            : "profile_guided";
    rep.warmup_runs = tracker->runs();
    rep.warmup_record = record_status;
    rep.planned = ex != nullptr;
    rep.folded_ops = folded_ops;
    rep.replans = replans;
    rep.steps = ex ? ex->num_steps() : graph.nodes.size();
    rep.compilations = compilations;
    rep.compile_ms_total = compile_ms_total;
    rep.compile_wall_ms = compile_wall_ms + (background ? background->busy_ms() : 0.0);
    rep.disk_loads = disk_loads;
    rep.signatures = static_cast<int>(signatures.size());
    for (const auto& stats : dropped) {
      rep.kernel_calls += stats->kernel_calls;
      rep.guard_misses += stats->guard_misses;
    }
    for (const auto& [sig, other] : signatures) {
      if (other == current) continue;  // its regions are counted with the report's regions
      for (const RegionPlan& plan : other->exec->regions()) {
        rep.kernel_calls += plan.stats->kernel_calls;
        rep.guard_misses += plan.stats->guard_misses;
      }
    }
    if (ex) {
      rep.call_states = ex->call_states();
      rep.arena_buffers = ex->arena_stats().buffers;
      rep.arena_bytes = ex->arena_stats().arena_bytes;
      rep.arena_unshared_bytes = ex->arena_stats().unshared_bytes;
    }
    auto names = [&](const std::vector<ValueId>& ids) {
      std::vector<std::string> out;
      for (ValueId v : ids)
        if (v != kNoValue) out.push_back(graph.values[v].name);
      return out;
    };
    const ShapeTracker::SymbolicDims sym = tracker->symbolic_dims();
    for (const Symbol& s : sym.symbols) {
      std::string values;
      for (int64_t x : s.seen) values += (values.empty() ? "" : ",") + std::to_string(x);
      rep.symbols.push_back(s.name + " = " + values);
    }
    const auto sym_str = [&](const std::vector<ValueId>& ids) {
      std::string out;
      for (ValueId v : ids) {
        if (v == kNoValue) continue;
        if (!out.empty()) out += ", ";
        out += graph.values[v].name;
        out += sym.values[v] ? sym_shape_str(*sym.values[v], sym.symbols) : "?";
      }
      return out;
    };
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const auto n = static_cast<int32_t>(i);
      const Node& node = graph.nodes[i];
      OpReport o;
      o.node = node.name;
      o.op = node.op;
      if (const auto& c = tracker->change(n)) {
        o.stable = false;
        o.changed_at_run = c->run;
        o.change = c->what;
        o.symbolic_shapes = sym_str(node.inputs) + " -> " + sym_str(node.outputs);
      }
      if (ex) {
        o.region = part.region_of[i];
        o.reason = std::string(reason_str(part.reason[i]));
        if (part.reason[i] == NoRegionReason::not_compilable && !not_compilable[i].empty())
          o.reason += ": " + not_compilable[i];
        if (part.reason[i] == NoRegionReason::changed && i < not_dynamic.size())
          o.why_not_dynamic = not_dynamic[i];
      }
      const OpProfile& p = prof.profile(n);
      o.median_ns = p.median_ns;
      o.bytes_read = p.bytes_read;
      o.bytes_written = p.bytes_written;
      o.allocations = p.allocations;
      o.inputs = names(node.inputs);
      o.outputs = names(node.outputs);
      rep.ops.push_back(std::move(o));
    }
    const std::vector<bool> stable_now =
        tracker ? tracker->stable() : std::vector<bool>(graph.nodes.size(), false);
    for (size_t r = 0; ex && r < ex->regions().size(); ++r) {
      const RegionPlan& plan = ex->regions()[r];
      RegionReport rr;
      rr.id = static_cast<int>(r);
      for (int32_t n : plan.region.nodes) rr.nodes.push_back(graph.nodes[n].name);
      rr.node_ids = plan.region.nodes;
      rr.profiled_ns = profiled_ns(plan.region, prof);
      rr.threads = plan.threads;
      rr.threads_why = plan.threads_why;
      rr.inputs = names(plan.region.inputs);
      rr.outputs = names(plan.region.outputs);
      for (const auto& [i, values] : plan.value_guards)
        rr.value_guarded.push_back(graph.values[plan.region.inputs[i]].name);
      for (const auto& [i, elems] : plan.value_sym_guards) {
        std::vector<Symbol> syms;
        for (const std::string& name : plan.symbols) syms.push_back({name, {}});
        rr.value_guarded.push_back(graph.values[plan.region.inputs[i]].name + " = " +
                                   sym_shape_str(elems, syms));
      }
      rr.compiled = plan.fn != nullptr;
      rr.why_interpreted = plan.why_interpreted;
      rr.compiles = plan.compiles;
      rr.dynamic = plan.region.dynamic;
      if (rr.dynamic)
        for (int32_t n : plan.region.nodes) rr.stable_ops += stable_now[n];
      rr.symbols = plan.symbols;
      if (rr.dynamic) rr.dynamic_bytes = plan.stats->dynamic_bytes;
      rep.dynamic_bytes += rr.dynamic_bytes;
      rr.cache_hit = plan.cache_hit;
      rr.disk_hit = plan.disk_hit;
      rr.compiling = plan.compile_job != 0;
      rr.active_from_call = plan.active_from_call;
      rr.compile_ms = plan.compile_ms;
      rr.budget = plan.budget;
      rr.interpreted_calls = plan.stats->interpreted_calls;
      rr.kernel_calls = plan.stats->kernel_calls;
      rr.guard_misses = plan.stats->guard_misses;
      rep.kernel_calls += rr.kernel_calls;
      rep.guard_misses += rr.guard_misses;
      rep.regions.push_back(std::move(rr));
    }
    rep.subgraphs = subgraphs->reports();
    return rep;
  }

  Graph graph;
  SessionOptions options;
  int max_threads = 1;  // per region kernel: options.threads, or the hardware's
  std::unique_ptr<SubgraphSessions> subgraphs;  // If branches' Sessions; outlives their users
  std::unique_ptr<Interpreter> interpreter;     // (thread-safe)
  std::shared_ptr<jit::Jit> jit;                // the runtime's: outlives the kernels plans call
  std::atomic<int> runs{0};                     // calls begun, less those that threw
  std::atomic<bool> planned_flag{false};
  std::atomic<bool> op_times{options.op_times};  // calls collect their op times

  // The published plan, read by every serving call.
  mutable std::mutex exec_mu;
  std::shared_ptr<const ExecutableGraph> exec;
  std::shared_ptr<const ShapeTracker> exec_tracker;

  // Shapes serving calls saw differ from the plan's, since the last plan (for a re-plan).
  std::mutex notes_mu;
  std::map<int32_t, std::string> serving_notes;

  mutable std::mutex times_mu;
  std::vector<OpTime> times;  // the latest call's that returned

  // Everything below: under plan_mu (warm-up observation, planning, installing kernels, report).
  mutable std::mutex plan_mu;
  std::unique_ptr<ShapeTracker> tracker;
  std::unique_ptr<OpProfiler> profiler;
  Partition partition;
  std::vector<Shape> value_shapes;
  std::vector<std::string> not_compilable;  // per node: the JIT's reason, when it refused it
  std::vector<std::string> not_dynamic;     // per changed node: why it is in no dynamic region
  ShapeTracker::SymbolicDims symbolic;      // the warm-up's symbolic dims, as planned
  int replans = 0;
  int folded_ops = 0;                                 // Report::folded_ops
  std::string record_status;                          // Report::warmup_record
  std::vector<std::shared_ptr<RegionStats>> dropped;  // counters of regions re-planned away
  int compilations = 0;                               // kernels compiled, in either mode
  double compile_ms_total = 0;
  double ms_compiled = 0, base_ms_compiled = 0;  // fresh compiles: taken, and predicted unscaled
  int disk_loads = 0;
  std::vector<uint64_t> handles;  // the kernels this Session got from the JIT
  // per_signature: plans by input shapes, and the latest call's
  std::map<std::vector<Shape>, std::shared_ptr<const SignaturePlan>> signatures;
  std::shared_ptr<const SignaturePlan> current;
  uint64_t compile_jobs = 0;  // compile jobs queued (their ids), in a Batch or in the background
  // While a Batch is open: the synchronous compile jobs it will run.
  std::optional<std::vector<BackgroundCompiler::Queued>> batch;
  double compile_wall_ms = 0;  // synchronous compiles' wall time (Report::compile_wall_ms)
  // Its thread uses the graph and the JIT: the destructor stops it first.
  std::unique_ptr<BackgroundCompiler> background;
};

std::string env_cache_dir() {
  const char* dir = std::getenv("SGRAPH_CACHE_DIR");
  return dir ? dir : "";
}

Session::Session(Graph graph, SessionOptions options)
    : impl_(std::make_unique<Impl>(std::move(graph), options)) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) { return impl_->run(inputs); }

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) {
  const Graph& g = impl_->graph;
  std::vector<Tensor> ordered;
  for (ValueId id : g.inputs) {
    auto it = inputs.find(g.values[id].name);
    SG_CHECK(it != inputs.end()) << "input '" << g.values[id].name << "' is missing";
    ordered.push_back(it->second);
  }
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (ValueId id : g.inputs) known = known || g.values[id].name == name;
    SG_CHECK(known) << "graph '" << g.name << "' has no input named '" << name << "'";
  }
  std::vector<Tensor> outs = run(ordered);
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < outs.size(); ++i) named[g.values[g.outputs[i]].name] = outs[i];
  return named;
}

const Graph& Session::graph() const { return impl_->graph; }
const SessionOptions& Session::options() const { return impl_->options; }
void Session::warm_up(const std::vector<std::vector<Tensor>>& data_sets) {
  impl_->warm_up(data_sets);
}
void Session::set_op_times(bool on) { impl_->op_times.store(on, std::memory_order_relaxed); }
bool Session::op_times() const { return impl_->op_times.load(std::memory_order_relaxed); }
std::vector<OpTime> Session::last_op_times() const {
  std::lock_guard<std::mutex> lock(impl_->times_mu);
  return impl_->times;
}
bool Session::planned() const { return impl_->planned_flag; }
void Session::wait_compiled() {
  if (impl_->background) {
    impl_->background->wait_idle();
    std::lock_guard<std::mutex> lock(impl_->plan_mu);
    impl_->install_compiled(impl_->runs + 1);
  }
  impl_->subgraphs->wait_compiled();
}
bool Session::compiling() const {
  if (impl_->background && impl_->background->busy()) return true;
  if (const auto ex = impl_->published().exec)
    for (const RegionPlan& r : ex->regions())
      if (r.compile_job != 0) return true;
  return impl_->subgraphs->compiling();
}
Report Session::report() const { return impl_->report(); }

std::map<std::string, std::string> Session::subgraph_warmup_records() const {
  return impl_->subgraphs->warmup_records();
}

std::string Session::warmup_record(const std::vector<std::string>& node_names,
                                   const std::vector<std::string>& value_names) const {
  const Impl& m = *impl_;
  SG_CHECK(!m.options.interpret_only && m.options.mode == CompileMode::profile_guided)
      << "graph '" << m.graph.name << "': no warm-up record in "
      << (m.options.interpret_only ? "interpret_only" : "per_signature") << " mode";
  std::lock_guard<std::mutex> lock(m.plan_mu);
  SG_CHECK(m.tracker->runs() >= 1)
      << "graph '" << m.graph.name << "': no warm-up record before the Session's first warm-up run";
  return save_warmup_record(m.graph, *m.tracker, *m.profiler, node_names, value_names,
                            m.planned_flag);
}

}  // namespace sgraph
