#include "runtime/shape_tracker.h"

#include <algorithm>
#include <cstring>

namespace sgraph {

ShapeTracker::ShapeTracker(const Graph& g) : g_(g), ops_(g.nodes.size()), values_(g.values.size()) {
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Node& n = g.nodes[i];
    ops_[i].in.resize(n.inputs.size());
    ops_[i].in_present.resize(n.inputs.size());
    ops_[i].out.resize(n.outputs.size());
  }
}

void ShapeTracker::check(int32_t node) const {
  SG_ASSERT(node >= 0 && static_cast<size_t>(node) < ops_.size())
      << "node " << node << " out of range (" << ops_.size() << " nodes)";
}

void ShapeTracker::begin_run() {
  if (open_) end_run();
  saved_ = Saved{ops_, values_, runs_};
  ++runs_;
  open_ = true;
}

void ShapeTracker::abort_run() {
  if (!open_) return;
  open_ = false;
  ops_ = std::move(saved_->ops);
  values_ = std::move(saved_->values);
  runs_ = saved_->runs;
  saved_.reset();
}

void ShapeTracker::end_run() {
  if (!open_) return;
  open_ = false;
  saved_.reset();
  for (OpRecord& r : ops_)
    if (r.last_run != runs_ && !r.change)
      r.change = Change{runs_, "not run in run " + std::to_string(runs_)};
}

void ShapeTracker::on_op(const OpEvent& e) {
  SG_ASSERT(open_) << "ShapeTracker::on_op outside begin_run()/end_run()";
  for (size_t i = 0; i < e.inputs.size() && i < e.node.inputs.size(); ++i)
    keep_value(e.node.inputs[i], e.inputs[i]);
  for (size_t k = 0; k < e.outputs.size() && k < e.node.outputs.size(); ++k)
    keep_value(e.node.outputs[k], e.outputs[k]);
  OpRecord& r = op(e.node_index);
  const bool first = r.last_run == 0;
  r.last_run = runs_;
  // Hot path: an unchanged op whose shapes are the same costs a few vector compares.
  if (!first && !r.change) {
    if (same_shapes(r, e)) return;
    r.change = Change{runs_, describe(r, e)};
  }
  record(r, e);
}

void ShapeTracker::keep_value(ValueId v, const Tensor& t) {
  if (v < 0 || static_cast<size_t>(v) >= values_.size()) return;
  if (!t.defined() || t.numel() > kMaxKeptElements) {
    values_[v] = Tensor{};
    return;
  }
  Tensor& kept = values_[v];
  if (kept.defined() && kept.dtype() == t.dtype() && kept.shape() == t.shape() &&
      kept.sole_owner()) {
    std::memcpy(kept.raw_data(), t.raw_data(), t.nbytes());
    return;
  }
  kept = t.clone();
}

void ShapeTracker::mark_changed(int32_t node, int run, std::string what) {
  OpRecord& r = op(node);
  if (!r.change) r.change = Change{run, std::move(what)};
}

std::vector<bool> ShapeTracker::stable() const {
  std::vector<bool> s(ops_.size());
  for (size_t i = 0; i < ops_.size(); ++i)
    s[i] = runs_ > 0 && ops_[i].last_run == runs_ && !ops_[i].change;
  return s;
}

std::optional<std::string> ShapeTracker::difference(const OpEvent& e) const {
  const OpRecord& r = op(e.node_index);
  if (same_shapes(r, e)) return std::nullopt;
  return describe(r, e);
}

bool ShapeTracker::same_shapes(const OpRecord& r, const OpEvent& e) {
  if (r.in.size() != e.inputs.size() || r.out.size() != e.outputs.size()) return false;
  for (size_t i = 0; i < r.in.size(); ++i) {
    const Tensor& t = e.inputs[i];
    if (r.in_present[i] != t.defined() || (t.defined() && r.in[i] != t.shape())) return false;
  }
  for (size_t k = 0; k < r.out.size(); ++k)
    if (r.out[k] != e.outputs[k].shape()) return false;
  return true;
}

void ShapeTracker::record(OpRecord& r, const OpEvent& e) {
  r.in.resize(e.inputs.size());
  r.in_present.resize(e.inputs.size());
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    r.in_present[i] = e.inputs[i].defined();
    if (r.in_present[i]) {
      r.in[i] = e.inputs[i].shape();
    } else {
      r.in[i].clear();
    }
  }
  r.out.resize(e.outputs.size());
  for (size_t k = 0; k < e.outputs.size(); ++k) r.out[k] = e.outputs[k].shape();
}

// "input 0 'x': [2,8,32] -> [2,17,32]; output 0 'y': [2,8] -> [2,17]": every input and output
// whose shape differs, named by the graph's value names.
std::string ShapeTracker::describe(const OpRecord& before, const OpEvent& now) const {
  std::string what;
  auto item = [&](const char* kind, size_t i, ValueId v, const Shape* was, const Shape* is) {
    if (was && is ? *was == *is : was == is) return;  // same shape, or absent both times
    if (!what.empty()) what += "; ";
    what += std::string(kind) + " " + std::to_string(i);
    if (v >= 0 && static_cast<size_t>(v) < g_.values.size() && !g_.values[v].name.empty())
      what += " '" + g_.values[v].name + "'";
    what += ": " + (was ? shape_str(*was) : "absent") + " -> " + (is ? shape_str(*is) : "absent");
  };
  const std::vector<ValueId>& ins = now.node.inputs;
  const std::vector<ValueId>& outs = now.node.outputs;
  for (size_t i = 0; i < std::max(before.in.size(), now.inputs.size()); ++i) {
    const Shape* was = i < before.in.size() && before.in_present[i] ? &before.in[i] : nullptr;
    const Shape* is =
        i < now.inputs.size() && now.inputs[i].defined() ? &now.inputs[i].shape() : nullptr;
    item("input", i, i < ins.size() ? ins[i] : kNoValue, was, is);
  }
  for (size_t k = 0; k < std::max(before.out.size(), now.outputs.size()); ++k) {
    const Shape* was = k < before.out.size() ? &before.out[k] : nullptr;
    const Shape* is = k < now.outputs.size() ? &now.outputs[k].shape() : nullptr;
    item("output", k, k < outs.size() ? outs[k] : kNoValue, was, is);
  }
  return what;
}

}  // namespace sgraph
