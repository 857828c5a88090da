// The training-step graph (forward, loss, backward, optimizer update) and the Trainer that runs it
// step after step, handing each step's updated parameters and state to the next (sgraph/train.h).
#include <algorithm>

#include "runtime/optimizer.h"
#include "sgraph/train.h"

namespace sgraph {

namespace {

// `g` without the nodes and constants its outputs do not need; graph inputs stay unless
// `drop_inputs`. A graph with subgraphs (If) is returned whole: a branch may read outer values
// by name.
Graph prune(const Graph& g, bool drop_inputs) {
  for (const Node& n : g.nodes)
    for (const auto& [name, attr] : n.attrs)
      if (std::holds_alternative<std::shared_ptr<const Graph>>(attr)) return g;
  std::vector<bool> needed(g.values.size(), false), keep(g.nodes.size(), false);
  for (ValueId v : g.outputs) needed[v] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    keep[i] = std::any_of(n.outputs.begin(), n.outputs.end(), [&](ValueId v) { return needed[v]; });
    if (keep[i])
      for (ValueId v : n.inputs)
        if (v != kNoValue) needed[v] = true;
  }
  Graph out;
  out.name = g.name;
  out.metadata = g.metadata;
  std::vector<ValueId> id(g.values.size(), kNoValue);
  auto copy = [&](ValueId v) {
    const ValueInfo& info = g.values[v];
    id[v] = info.initializer.defined() ? out.add_constant(info.name, info.initializer)
                                       : out.add_value(info.name, info.dtype, info.shape);
  };
  for (ValueId v : g.inputs)
    if (!drop_inputs || needed[v]) {
      copy(v);
      out.inputs.push_back(id[v]);
    }
  for (size_t v = 0; v < g.values.size(); ++v)
    if (needed[v] && g.values[v].initializer.defined()) copy(static_cast<ValueId>(v));
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep[i]) continue;
    Node n = g.nodes[i];
    for (ValueId& v : n.inputs)
      if (v != kNoValue) v = id[v];
    for (ValueId& v : n.outputs) {
      copy(v);
      v = id[v];
    }
    out.add_node(std::move(n));
  }
  for (ValueId v : g.outputs) out.outputs.push_back(id[v]);
  out.infer_and_verify();
  return out;
}

// `forward` with the named parameters as graph inputs after its own (an initializer becomes an
// input of its shape); `initial` gets each parameter's initializer (undefined for an input).
Graph parameters_as_inputs(const Graph& forward, const std::vector<std::string>& names,
                           std::vector<Tensor>& initial) {
  SG_CHECK(!names.empty()) << "no parameters to train";
  Graph g = forward;
  std::vector<ValueId> params;
  for (const std::string& name : names) {
    const ValueId v = g.find_value(name);
    SG_CHECK(v != kNoValue) << "graph '" << g.name << "' has no value named '" << name << "'";
    SG_CHECK(std::find(params.begin(), params.end(), v) == params.end())
        << "parameter '" << name << "' is listed twice";
    ValueInfo& info = g.values[v];
    SG_CHECK(is_float(info.dtype))
        << "parameter '" << name << "' must be float, not " << dtype_name(info.dtype);
    if (info.initializer.defined()) {
      initial.push_back(info.initializer);
      info.shape = to_dims(info.initializer.shape());
      info.initializer = Tensor();
    } else {
      auto it = std::find(g.inputs.begin(), g.inputs.end(), v);
      SG_CHECK(it != g.inputs.end())
          << "parameter '" << name << "' is neither an initializer nor a graph input";
      const bool fixed = info.shape && std::all_of(info.shape->begin(), info.shape->end(),
                                                   [](const Dim& d) { return d.is_static(); });
      SG_CHECK(fixed) << "parameter '" << name << "' must have a static shape, not "
                      << (info.shape ? dims_str(*info.shape) : "an unknown one");
      g.inputs.erase(it);
      initial.push_back(Tensor());
    }
    params.push_back(v);
  }
  g.inputs.insert(g.inputs.end(), params.begin(), params.end());
  return g;
}

Tensor zeros_like_value(const ValueInfo& v) {
  Shape s;
  for (const Dim& d : *v.shape) s.push_back(d.size);
  return Tensor::zeros(v.dtype, s);
}

}  // namespace

TrainingStep make_training_step(const Graph& forward, std::string_view loss,
                                const std::vector<std::string>& parameters,
                                const Optimizer& optimizer) {
  check_optimizer(optimizer);
  TrainingStep step;
  Graph g = parameters_as_inputs(forward, parameters, step.initial_parameters);
  const ValueId loss_id = g.find_value(loss);
  SG_CHECK(loss_id != kNoValue) << "graph '" << g.name << "' has no value named '" << loss << "'";
  const size_t n_data = g.inputs.size() - parameters.size();
  for (size_t i = 0; i < n_data; ++i) step.data.push_back(g.values[g.inputs[i]].name);
  step.parameters = parameters;
  std::vector<ValueId> params(g.inputs.begin() + static_cast<ptrdiff_t>(n_data), g.inputs.end());
  g.outputs.clear();

  GraphBuilder b(std::move(g));
  const std::vector<ValueId> grads = append_gradients(b, loss_id, params);
  // The state inputs: each parameter's slots, then the step count.
  const std::vector<std::string> slots = state_slots(optimizer);
  std::vector<std::vector<ValueId>> state(params.size());
  for (size_t p = 0; p < params.size(); ++p)
    for (const std::string& slot : slots) {
      const ValueInfo& info = b.graph().values[params[p]];
      step.state.push_back(parameters[p] + "." + slot);
      step.initial_state.push_back(zeros_like_value(info));
      const DimList dims = *info.shape;
      state[p].push_back(b.input(step.state.back(), info.dtype, dims));
    }
  ValueId count = kNoValue;
  if (counts_steps(optimizer)) {
    step.state.push_back("adam.step");
    step.initial_state.push_back(Tensor::scalar<int64_t>(0));
    count = b.input(step.state.back(), DType::i64, {});
  }
  // Outputs: the loss, the updated parameters, the updated state.
  b.output(loss_id);
  std::vector<ValueId> new_state;
  for (size_t p = 0; p < params.size(); ++p) {
    b.name_prefix(parameters[p] + "/update/");
    const Update u = append_update(b, optimizer, params[p], grads[p], state[p], count);
    b.output(u.parameter, parameters[p] + ".next");
    new_state.insert(new_state.end(), u.slots.begin(), u.slots.end());
  }
  b.name_prefix("adam/");
  if (count != kNoValue) new_state.push_back(b.add(count, b.scalar<int64_t>(1)));
  b.name_prefix("");
  for (size_t i = 0; i < new_state.size(); ++i) b.output(new_state[i], step.state[i] + ".next");
  step.graph = prune(b.build(), false);
  return step;
}

struct Trainer::Impl {
  TrainerOptions options;
  Graph forward;  // parameters as inputs (after the batch inputs)
  TrainingStep step;
  std::vector<Tensor> params, state;
  int64_t steps = 0;
  std::unique_ptr<Session> step_session, predict_session, eval_session;

  // The graph's inputs: a parameter's current value, else the next of `given` (in order).
  std::vector<Tensor> feed(const Graph& g, const std::vector<Tensor>& given, const char* what) {
    std::vector<Tensor> in;
    std::vector<std::string> wanted;
    size_t next = 0;
    for (ValueId v : g.inputs) {
      const std::string& name = g.values[v].name;
      auto p = std::find(step.parameters.begin(), step.parameters.end(), name);
      if (p != step.parameters.end()) {
        in.push_back(params[p - step.parameters.begin()]);
        continue;
      }
      wanted.push_back(name);
      if (next < given.size()) in.push_back(given[next]);
      ++next;
    }
    if (given.size() != wanted.size()) {
      std::string names;
      for (const std::string& n : wanted) names += (names.empty() ? "" : ", ") + n;
      SG_FAIL() << what << " takes " << wanted.size() << " inputs (" << names << "), got "
                << given.size();
    }
    return in;
  }
};

Trainer::Trainer(Graph forward, TrainerOptions options, std::map<std::string, Tensor> initial)
    : impl_(std::make_unique<Impl>()) {
  Impl& t = *impl_;
  forward.infer_and_verify();
  t.step = make_training_step(forward, options.loss, options.parameters, options.optimizer);
  std::vector<Tensor> unused;
  t.forward = parameters_as_inputs(forward, options.parameters, unused);
  t.params = t.step.initial_parameters;
  for (size_t p = 0; p < t.params.size(); ++p) {
    const std::string& name = t.step.parameters[p];
    if (auto it = initial.find(name); it != initial.end()) {
      const ValueInfo& v = t.forward.values[t.forward.find_value(name)];
      const Tensor& x = it->second;
      SG_CHECK(x.dtype() == v.dtype && to_dims(x.shape()) == *v.shape)
          << "initial value of parameter '" << name << "' is " << dtype_name(x.dtype())
          << shape_str(x.shape()) << ", not " << dtype_name(v.dtype) << dims_str(*v.shape);
      t.params[p] = x;
      initial.erase(it);
    }
    SG_CHECK(t.params[p].defined()) << "parameter '" << name << "' is a graph input: give its "
                                    << "initial value";
  }
  SG_CHECK(initial.empty()) << "initial value for '" << initial.begin()->first
                            << "', which is not a parameter";
  t.state = t.step.initial_state;
  t.options = std::move(options);
  t.step_session = std::make_unique<Session>(t.step.graph, t.options.session);
}

Trainer::~Trainer() = default;
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;

double Trainer::step(const std::vector<Tensor>& batch) {
  Impl& t = *impl_;
  SG_CHECK(batch.size() == t.step.data.size())
      << "step() takes " << t.step.data.size() << " batch inputs, got " << batch.size();
  std::vector<Tensor> in = batch;
  in.insert(in.end(), t.params.begin(), t.params.end());
  in.insert(in.end(), t.state.begin(), t.state.end());
  std::vector<Tensor> out = t.step_session->run(in);
  in.clear();  // the old parameters' last holders go: their buffers can take the next outputs
  const size_t np = t.params.size();
  for (size_t p = 0; p < np; ++p) t.params[p] = std::move(out[1 + p]);
  for (size_t s = 0; s < t.state.size(); ++s) t.state[s] = std::move(out[1 + np + s]);
  ++t.steps;
  return out[0].at_double(0);
}

std::vector<Tensor> Trainer::predict(const std::vector<Tensor>& inputs) {
  Impl& t = *impl_;
  if (!t.predict_session) {
    Graph g = t.forward;
    const ValueId loss = g.find_value(t.options.loss);
    std::erase(g.outputs, loss);
    SG_CHECK(!g.outputs.empty()) << "predict(): graph '" << g.name
                                 << "' has no output other than the loss";
    t.predict_session = std::make_unique<Session>(prune(g, true), t.options.session);
  }
  return t.predict_session->run(t.feed(t.predict_session->graph(), inputs, "predict()"));
}

std::vector<Tensor> Trainer::evaluate(const std::vector<Tensor>& batch) {
  Impl& t = *impl_;
  if (!t.eval_session) t.eval_session = std::make_unique<Session>(t.forward, t.options.session);
  return t.eval_session->run(t.feed(t.eval_session->graph(), batch, "evaluate()"));
}

const std::vector<std::string>& Trainer::parameter_names() const { return impl_->step.parameters; }

const Tensor& Trainer::parameter(std::string_view name) const {
  const auto& names = impl_->step.parameters;
  auto it = std::find(names.begin(), names.end(), name);
  SG_CHECK(it != names.end()) << "no parameter named '" << name << "'";
  return impl_->params[it - names.begin()];
}

const std::vector<Tensor>& Trainer::state() const { return impl_->state; }
int64_t Trainer::steps() const { return impl_->steps; }
const TrainingStep& Trainer::training_step() const { return impl_->step; }
const Session& Trainer::step_session() const { return *impl_->step_session; }
const Session* Trainer::predict_session() const { return impl_->predict_session.get(); }

}  // namespace sgraph
