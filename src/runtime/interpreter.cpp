#include "runtime/interpreter.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <new>

#include "ops/op.h"

namespace sgraph {

void check_inputs(const Graph& g, std::span<const Tensor> inputs) {
  SG_CHECK(inputs.size() == g.inputs.size())
      << "graph '" << g.name << "' takes " << g.inputs.size() << " inputs, got " << inputs.size();
  std::map<std::string, std::pair<int64_t, std::string>> symbols;  // dim name -> size, where seen
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& v = g.values[g.inputs[i]];
    const Tensor& t = inputs[i];
    SG_CHECK(t.defined()) << "input '" << v.name << "' is missing (undefined tensor)";
    SG_CHECK(t.dtype() == v.dtype) << "input '" << v.name << "' must be " << dtype_name(v.dtype)
                                   << ", got " << dtype_name(t.dtype());
    if (!v.shape) continue;
    const DimList& dims = *v.shape;
    SG_CHECK(t.rank() == static_cast<int64_t>(dims.size()))
        << "input '" << v.name << "' must have shape " << dims_str(dims) << ", got "
        << shape_str(t.shape()) << " (rank " << t.rank() << ")";
    for (size_t d = 0; d < dims.size(); ++d) {
      const int64_t got = t.shape()[d];
      if (dims[d].is_static()) {
        SG_CHECK(got == dims[d].size)
            << "input '" << v.name << "' must have shape " << dims_str(dims) << ", got "
            << shape_str(t.shape()) << " (dimension " << d << ")";
      } else if (!dims[d].symbol.empty()) {
        auto [it, fresh] = symbols.try_emplace(dims[d].symbol, got, v.name);
        SG_CHECK(fresh || it->second.first == got)
            << "dimension '" << dims[d].symbol << "' is " << it->second.first << " in input '"
            << it->second.second << "' but " << got << " in input '" << v.name << "'";
      }
    }
  }
}

namespace {
// Runs a control-flow op's branch in an interpreter of its own (when no runner was given).
class InterpretSubgraphs final : public ops::SubgraphRunner {
 public:
  std::vector<Tensor> run(const Node&, const Graph& g, std::span<const Tensor> inputs) override {
    return Interpreter(g).run(inputs);
  }
};
}  // namespace

ops::SubgraphRunner& interpret_subgraphs() {
  static InterpretSubgraphs runner;
  return runner;
}

Interpreter::Interpreter(const Graph& g, ops::SubgraphRunner* subgraphs)
    : g_(g), subgraphs_(subgraphs), release_after_(g.nodes.size()) {
  std::vector<int32_t> last_use(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs)
      if (v != kNoValue) last_use[v] = static_cast<int32_t>(i);
  std::vector<bool> keep(g.values.size(), false);
  for (ValueId v : g.outputs) keep[v] = true;
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (keep[v] || g.values[v].initializer.defined()) continue;
    int32_t at = last_use[v];
    if (at < 0) at = g.values[v].producer;  // never used: free right after it is made
    if (at >= 0) release_after_[at].push_back(static_cast<ValueId>(v));
  }
}

void NodeRunner::bind_inputs(const Node& n, const std::vector<Tensor>& env) {
  const size_t nin = n.inputs.size();
  in_.assign(nin, Tensor{});
  in_shapes_.assign(nin, nullptr);
  in_values_.assign(nin, nullptr);
  in_types_.assign(nin, DType::undefined);
  for (size_t i = 0; i < nin; ++i) {
    if (n.inputs[i] == kNoValue) continue;
    in_[i] = env[n.inputs[i]];
    SG_ASSERT(in_[i].defined()) << "value " << n.inputs[i] << " was released too early";
    in_shapes_[i] = &in_[i].shape();
    in_values_[i] = &in_[i];
    in_types_[i] = in_[i].dtype();
  }
}

void NodeRunner::infer_output_shapes(const Node& n) {
  out_shapes_.assign(n.outputs.size(), Shape{});
  ops::ShapeCtx sc{n, in_shapes_, in_values_, in_types_, out_shapes_};
  ops::op_def(n.op).shapes(sc);
}

const std::vector<Shape>& NodeRunner::output_shapes(const Graph& g, int32_t index,
                                                    const std::vector<Tensor>& env) {
  const Node& n = g.nodes[index];
  SG_ASSERT(!ops::op_def(n.op).makes_outputs) << "output_shapes of control flow";
  bind_inputs(n, env);
  infer_output_shapes(n);
  in_.clear();  // (as after run)
  return out_shapes_;
}

void NodeRunner::run(const Graph& g, int32_t index, std::vector<Tensor>& env,
                     std::span<OpObserver* const> observers, std::span<const Tensor> premade) {
  using Clock = std::chrono::steady_clock;
  const Node& n = g.nodes[index];
  const ops::OpDef& def = ops::op_def(n.op);
  const bool timed = std::any_of(observers.begin(), observers.end(),
                                 [](const OpObserver* o) { return o->reads_time(); });
  const auto t0 = timed ? Clock::now() : Clock::time_point{};
  try {
    bind_inputs(n, env);
    out_.assign(n.outputs.size(), Tensor{});
    if (def.makes_outputs) {  // control flow: the kernel makes its outputs
      ops::KernelCtx kc{n, in_, out_, subgraphs_ ? subgraphs_ : &interpret_subgraphs()};
      def.run(kc);
      for (size_t k = 0; k < out_.size(); ++k)
        SG_CHECK(out_[k].dtype() == g.values[n.outputs[k]].dtype)
            << "output " << k << " is " << dtype_name(out_[k].dtype()) << ", declared "
            << dtype_name(g.values[n.outputs[k]].dtype);
    } else {
      infer_output_shapes(n);
      if (def.view) {
        out_[0] = in_[0].reshape(out_shapes_[0]);
      } else {
        for (size_t k = 0; k < out_.size(); ++k) {
          const ValueId v = n.outputs[k];
          if (!premade.empty() && premade[v].defined() && premade[v].shape() == out_shapes_[k])
            out_[k] = premade[v];
          else
            out_[k] = Tensor(g.values[v].dtype, std::move(out_shapes_[k]));
        }
        ops::KernelCtx kc{n, in_, out_};
        def.run(kc);
      }
    }
  } catch (Error& e) {
    e.at_node(n.name, std::string(op_name(n.op)));
    throw;
  } catch (const std::bad_alloc&) {
    throw Error("out of memory").at_node(n.name, std::string(op_name(n.op)));
  }
  const int64_t ns =
      timed ? std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count() : 0;
  for (OpObserver* o : observers) o->on_op(OpEvent{index, n, in_, out_, ns});
  for (size_t k = 0; k < out_.size(); ++k) env[n.outputs[k]] = std::move(out_[k]);
  in_.clear();  // hold no tensor between nodes (keeps buffers free for reuse and release)
  out_.clear();
}

std::vector<Tensor> bind_constants(const Graph& g) {
  std::vector<Tensor> env(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].initializer.defined()) env[v] = g.values[v].initializer;
  return env;
}

std::vector<Tensor> bind_inputs(const Graph& g, std::span<const Tensor> inputs) {
  check_inputs(g, inputs);
  std::vector<Tensor> env = bind_constants(g);
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs[i]] = inputs[i];
  return env;
}

std::vector<Tensor> Interpreter::run(std::span<const Tensor> inputs,
                                     std::span<OpObserver* const> observers) const {
  std::vector<Tensor> env = bind_inputs(g_, inputs);
  NodeRunner runner(subgraphs_);
  for (size_t ni = 0; ni < g_.nodes.size(); ++ni) {
    runner.run(g_, static_cast<int32_t>(ni), env, observers);
    for (ValueId v : release_after_[ni]) env[v] = Tensor{};
  }
  std::vector<Tensor> result;
  result.reserve(g_.outputs.size());
  for (ValueId v : g_.outputs) result.push_back(env[v]);
  return result;
}

}  // namespace sgraph
