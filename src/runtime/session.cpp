// Session: the pipeline, top to bottom — warm-up (interpret + profile) -> classify -> partition
// -> (compile, with the JIT) -> serve.
#include "sgraph/session.h"

#include "runtime/debug.h"
#include "runtime/interpreter.h"
#include "runtime/op_profiler.h"
#include "runtime/region_builder.h"
#include "runtime/shape_tracker.h"

namespace sgraph {

namespace {
class TimingObserver final : public OpObserver {
 public:
  explicit TimingObserver(std::vector<OpTime>& out) : out_(out) {}
  void on_op(const OpEvent& e) override {
    out_.push_back(OpTime{e.node.name, e.node.op, e.elapsed_ns});
  }

 private:
  std::vector<OpTime>& out_;
};
}  // namespace

struct Session::Impl {
  Impl(Graph g, SessionOptions o) : graph(std::move(g)), options(o) {
    SG_CHECK(options.warmup_runs >= 1)
        << "warmup_runs must be at least 1, got " << options.warmup_runs;
    graph.infer_and_verify();
    interpreter = std::make_unique<Interpreter>(graph);
    tracker = std::make_unique<ShapeTracker>(graph);
    profiler = std::make_unique<OpProfiler>(graph, options.warmup_runs);
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    times.clear();
    TimingObserver timing(times);
    if (options.interpret_only || warmup_done()) {
      OpObserver* obs[] = {&timing};
      return interpreter->run(inputs, obs);
    }
    // 1. warm-up: interpret, recording shapes and costs
    OpObserver* obs[] = {&timing, tracker.get(), profiler.get()};
    tracker->begin_run();
    std::vector<Tensor> out = interpreter->run(inputs, obs);
    tracker->end_run();
    SG_LOG(1) << "warm-up run " << tracker->runs() << "/" << options.warmup_runs << " of graph '"
              << graph.name << "'";
    if (warmup_done()) plan();
    return out;
  }

  bool warmup_done() const { return tracker->runs() >= options.warmup_runs; }

  // 2. classify (the tracker's stable flags) and 3. partition into regions.
  void plan() {
    const std::vector<bool> stable = tracker->stable();
    partition = build_regions(graph, stable, RegionOptions{options.min_region_ops});
    planned = true;
    size_t n_stable = 0;
    for (bool s : stable) n_stable += s;
    SG_LOG(1) << "planned graph '" << graph.name << "': " << n_stable << " of " << stable.size()
              << " ops stable, " << partition.regions.size() << " regions";
    for (size_t r = 0; r < partition.regions.size(); ++r)
      SG_LOG(2) << "region " << r << ": " << partition.regions[r].nodes.size() << " ops";
  }

  Report report() const {
    Report rep;
    rep.graph = graph.name;
    rep.warmup_runs = tracker->runs();
    rep.planned = planned;
    auto names = [&](const std::vector<ValueId>& ids) {
      std::vector<std::string> out;
      for (ValueId v : ids)
        if (v != kNoValue) out.push_back(graph.values[v].name);
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
      }
      if (planned) {
        o.region = partition.region_of[i];
        o.reason = std::string(reason_str(partition.reason[i]));
      }
      const OpProfile& p = profiler->profile(n);
      o.median_ns = p.median_ns;
      o.bytes_read = p.bytes_read;
      o.bytes_written = p.bytes_written;
      o.allocations = p.allocations;
      o.inputs = names(node.inputs);
      o.outputs = names(node.outputs);
      rep.ops.push_back(std::move(o));
    }
    for (size_t r = 0; planned && r < partition.regions.size(); ++r) {
      const Region& reg = partition.regions[r];
      RegionReport rr;
      rr.id = static_cast<int>(r);
      for (int32_t n : reg.nodes) {
        rr.nodes.push_back(graph.nodes[n].name);
        rr.profiled_ns += profiler->profile(n).median_ns;
      }
      rr.inputs = names(reg.inputs);
      rr.outputs = names(reg.outputs);
      rep.regions.push_back(std::move(rr));
    }
    return rep;
  }

  Graph graph;
  SessionOptions options;
  std::unique_ptr<Interpreter> interpreter;
  std::unique_ptr<ShapeTracker> tracker;
  std::unique_ptr<OpProfiler> profiler;
  Partition partition;
  bool planned = false;
  std::vector<OpTime> times;
};

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
const std::vector<OpTime>& Session::last_op_times() const { return impl_->times; }
bool Session::planned() const { return impl_->planned; }
Report Session::report() const { return impl_->report(); }

}  // namespace sgraph
