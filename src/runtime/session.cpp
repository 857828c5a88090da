#include "sgraph/session.h"

#include "runtime/interpreter.h"

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
    graph.infer_and_verify();
    interpreter = std::make_unique<Interpreter>(graph);
  }
  Graph graph;
  SessionOptions options;
  std::unique_ptr<Interpreter> interpreter;
  std::vector<OpTime> times;
};

Session::Session(Graph graph, SessionOptions options)
    : impl_(std::make_unique<Impl>(std::move(graph), options)) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) {
  impl_->times.clear();
  TimingObserver timing(impl_->times);
  OpObserver* observers[] = {&timing};
  return impl_->interpreter->run(inputs, observers);
}

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

}  // namespace sgraph
