#include "runtime/shape_tracker.h"

#include <algorithm>
#include <cstring>

#include "ops/op.h"

namespace sgraph {

ShapeTracker::ShapeTracker(const Graph& g)
    : g_(g), ops_(g.nodes.size()), values_(g.values.size()), seen_(g.values.size()) {
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
  for (std::vector<Seen>& s : seen_)
    if (!s.empty() && s.back().run == runs_) s.pop_back();
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
  for (size_t i = 0; i < e.inputs.size() && i < e.node.inputs.size(); ++i) {
    keep_value(e.node.inputs[i], e.inputs[i]);
    see(e.node.inputs[i], e.inputs[i]);
  }
  for (size_t k = 0; k < e.outputs.size() && k < e.node.outputs.size(); ++k) {
    keep_value(e.node.outputs[k], e.outputs[k]);
    see(e.node.outputs[k], e.outputs[k]);
  }
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

ShapeTracker::State ShapeTracker::state() const { return State{ops_, values_, seen_, runs_}; }

void ShapeTracker::restore(State s) {
  SG_CHECK(s.ops.size() == ops_.size())
      << "a record of " << s.ops.size() << " ops for a graph of " << ops_.size();
  SG_CHECK(s.values.size() == values_.size() && s.seen.size() == seen_.size())
      << "a record of " << s.values.size() << " values for a graph of " << values_.size();
  SG_CHECK(s.runs >= 1) << "a record of " << s.runs << " runs";
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const Node& n = g_.nodes[i];
    const OpRecord& r = s.ops[i];
    SG_CHECK(r.in.size() == n.inputs.size() && r.in_present.size() == n.inputs.size() &&
             r.out.size() == n.outputs.size())
        << "node '" << n.name << "': the record's inputs or outputs do not match the node's";
    SG_CHECK(r.last_run >= 0 && r.last_run <= s.runs)
        << "node '" << n.name << "': last seen in run " << r.last_run << " of " << s.runs;
    SG_CHECK(!r.change || (r.change->run >= 1 && r.change->run <= s.runs))
        << "node '" << n.name << "': changed in run " << r.change->run << " of " << s.runs;
    const auto valid = [](const Shape& sh) {
      return std::all_of(sh.begin(), sh.end(), [](int64_t d) { return d >= 0; });
    };
    SG_CHECK(std::all_of(r.in.begin(), r.in.end(), valid) &&
             std::all_of(r.out.begin(), r.out.end(), valid))
        << "node '" << n.name << "': a negative dim in the record";
  }
  for (size_t v = 0; v < s.seen.size(); ++v) {
    int last = 0;
    for (const Seen& x : s.seen[v]) {
      SG_CHECK(x.run > last && x.run <= s.runs)
          << "value '" << g_.values[v].name << "': runs out of order in the record";
      SG_CHECK(std::all_of(x.shape.begin(), x.shape.end(), [](int64_t d) { return d >= 0; }))
          << "value '" << g_.values[v].name << "': a negative dim in the record";
      last = x.run;
    }
    SG_CHECK(!s.values[v].defined() || s.values[v].numel() <= kMaxKeptElements)
        << "value '" << g_.values[v].name << "': a kept value of " << s.values[v].numel()
        << " elements (at most " << kMaxKeptElements << ")";
  }
  ops_ = std::move(s.ops);
  values_ = std::move(s.values);
  seen_ = std::move(s.seen);
  runs_ = s.runs;
  open_ = false;
  saved_.reset();
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

void ShapeTracker::see(ValueId v, const Tensor& t) {
  if (v < 0 || static_cast<size_t>(v) >= seen_.size() || !t.defined()) return;
  std::vector<Seen>& s = seen_[v];
  if (!s.empty() && s.back().run == runs_) return;  // a value has one shape per run
  std::optional<Ints> ints;
  if (small_integers(t.dtype(), t.numel())) ints = t.to_int64();
  s.push_back({runs_, t.shape(), std::move(ints)});
}

namespace {

// The declared name of dim d of value v (ONNX dim_param), or "".
std::string declared_name(const Graph& g, size_t v, size_t d) {
  const auto& shape = g.values[v].shape;
  if (!shape || d >= shape->size()) return "";
  return (*shape)[d].symbol;
}

// t = scale * s + offset in every run, with an integer scale > 0; s has >= 3 distinct values.
std::optional<SymDim> affine_fit(const Ints& s, const Ints& t, int32_t sym) {
  Ints distinct = s;
  std::sort(distinct.begin(), distinct.end());
  if (std::unique(distinct.begin(), distinct.end()) - distinct.begin() < 3) return std::nullopt;
  size_t j = 1;
  while (j < s.size() && s[j] == s[0]) ++j;
  const int64_t ds = s[j] - s[0], dt = t[j] - t[0];
  if (dt % ds != 0 || dt / ds <= 0) return std::nullopt;
  const SymDim d{sym, dt / ds, t[0] - dt / ds * s[0]};
  for (size_t r = 0; r < s.size(); ++r)
    if (d.scale * s[r] + d.offset != t[r]) return std::nullopt;
  return d;
}

// Symbolic dim d's value in warm-up run `run` (0-based), from its symbol's value then.
int64_t value_in_run(const ShapeTracker::SymbolicDims& sd, const SymDim& d, size_t run) {
  const int64_t x[] = {sd.symbols[static_cast<size_t>(d.sym)].seen[run]};
  return SymDim{0, d.scale, d.offset, d.div}.value(x);
}

// Symbol k replaced by e in d (d's symbol is k); nullopt when the result is no SymDim.
std::optional<SymDim> substitute(const SymDim& d, const SymDim& e) {
  if (d.div != 1) return std::nullopt;
  if (d.scale == 1) return e.plus(d.offset);
  if (e.div != 1) return std::nullopt;
  return SymDim{e.sym, d.scale * e.scale, d.scale * e.offset + d.offset, 1}.normalized();
}

}  // namespace

// Observation alone cannot relate a strided window's output size to its input's (w -> (w+1)/2 is
// no affine function): such a dim gets a symbol of its own, which then has to be bound from a
// region's inputs. Where an op's shape rule gives an output dim as a form of an input's symbol
// (OpDef::symbolic_shape) that matches every warm-up run, and the observed dim is a symbol first
// made there (named by no graph input), that symbol is replaced by the form everywhere, so the
// dims it named are related to the input's symbol as the rule relates them.
void ShapeTracker::derive_by_rules(SymbolicDims& sd) const {
  std::vector<bool> named_by_input(sd.symbols.size(), false);
  for (ValueId v : g_.inputs)
    if (sd.values[v])
      for (const SymDim& d : *sd.values[v])
        if (d.symbolic()) named_by_input[static_cast<size_t>(d.sym)] = true;
  for (const Node& n : g_.nodes) {
    const ops::OpDef& def = ops::op_def(n.op);
    if (!def.symbolic_shape || n.outputs.empty() || !sd.values[n.outputs[0]]) continue;
    std::vector<SymShape> constants;  // (a constant's shape, where the tracker has none)
    constants.reserve(n.inputs.size());
    std::vector<const SymShape*> in;
    for (ValueId v : n.inputs) {
      if (v != kNoValue && sd.values[v]) {
        in.push_back(&*sd.values[v]);
      } else if (v != kNoValue && g_.values[v].initializer.defined()) {
        SymShape c;
        for (int64_t d : g_.values[v].initializer.shape()) c.push_back(SymDim::constant(d));
        constants.push_back(std::move(c));
        in.push_back(&constants.back());
      } else {
        in.push_back(nullptr);
      }
    }
    const std::optional<SymShape> rule = def.symbolic_shape(g_, n, in);
    const SymShape seen = *sd.values[n.outputs[0]];  // (a copy: sd.values is replaced below)
    if (!rule || rule->size() != seen.size()) continue;
    for (size_t i = 0; i < seen.size(); ++i) {
      const SymDim e = (*rule)[i], o = (*sd.values[n.outputs[0]])[i];
      if (e == o || !e.symbolic() || !o.symbolic() || o.scale != 1 || o.offset != 0 || o.div != 1 ||
          o.sym == e.sym || named_by_input[static_cast<size_t>(o.sym)])
        continue;
      bool matches = true;
      for (size_t r = 0; r < sd.symbols[static_cast<size_t>(o.sym)].seen.size() && matches; ++r)
        matches = value_in_run(sd, e, r) == sd.symbols[static_cast<size_t>(o.sym)].seen[r];
      if (!matches) continue;
      // Every dim naming o.sym must take the form.
      std::vector<std::optional<SymShape>> next = sd.values;
      bool ok = true;
      for (std::optional<SymShape>& s : next)
        if (s)
          for (SymDim& d : *s)
            if (ok && d.sym == o.sym) {
              const std::optional<SymDim> r = substitute(d, e);
              ok = r.has_value();
              if (ok) d = *r;
            }
      if (ok) sd.values = std::move(next);
    }
  }
  // Renumber the symbols still named.
  std::vector<int32_t> renumber(sd.symbols.size(), -1);
  for (const std::optional<SymShape>& s : sd.values)
    if (s)
      for (const SymDim& d : *s)
        if (d.symbolic()) renumber[static_cast<size_t>(d.sym)] = 0;
  std::vector<Symbol> kept;
  for (size_t k = 0; k < sd.symbols.size(); ++k)
    if (renumber[k] == 0) {
      renumber[k] = static_cast<int32_t>(kept.size());
      kept.push_back(std::move(sd.symbols[k]));
    }
  for (std::optional<SymShape>& s : sd.values)
    if (s)
      for (SymDim& d : *s)
        if (d.symbolic()) d.sym = renumber[static_cast<size_t>(d.sym)];
  sd.symbols = std::move(kept);
}

// Each element of a small integer value made in every run: a constant, a form some dim takes (a
// symbol, or a rule's form such as (w+1)/2) in every run, or an affine function of a symbol.
void ShapeTracker::derive_elements(SymbolicDims& sd) const {
  sd.elements.assign(seen_.size(), std::nullopt);
  std::vector<SymDim> forms;  // every symbolic dim of the values, once
  for (const std::optional<SymShape>& s : sd.values)
    if (s)
      for (const SymDim& d : *s)
        if (d.symbolic() && std::find(forms.begin(), forms.end(), d) == forms.end())
          forms.push_back(d);
  std::stable_partition(forms.begin(), forms.end(), [](const SymDim& d) {  // symbols first
    return d.scale == 1 && d.offset == 0 && d.div == 1;
  });
  for (size_t v = 0; v < seen_.size(); ++v) {
    const std::vector<Seen>& s = seen_[v];
    if (s.size() != static_cast<size_t>(runs_) || !s[0].ints) continue;
    const size_t n = s[0].ints->size();
    if (std::any_of(s.begin(), s.end(),
                    [&](const Seen& x) { return !x.ints || x.ints->size() != n; }))
      continue;
    SymShape elems;
    for (size_t j = 0; j < n; ++j) {
      Ints seq;
      for (const Seen& x : s) seq.push_back((*x.ints)[j]);
      std::optional<SymDim> e;
      if (std::all_of(seq.begin(), seq.end(), [&](int64_t x) { return x == seq[0]; }))
        e = SymDim::constant(seq[0]);
      for (size_t f = 0; f < forms.size() && !e; ++f) {
        bool all = true;
        for (size_t r = 0; r < seq.size() && all; ++r)
          all = value_in_run(sd, forms[f], r) == seq[r];
        if (all) e = forms[f];
      }
      for (size_t k = 0; k < sd.symbols.size() && !e; ++k)
        e = affine_fit(sd.symbols[k].seen, seq, static_cast<int32_t>(k));
      if (!e) break;
      elems.push_back(*e);
    }
    if (elems.size() == n) sd.elements[v] = std::move(elems);
  }
}

ShapeTracker::SymbolicDims ShapeTracker::symbolic_dims() const {
  SymbolicDims out;
  out.values.resize(seen_.size());
  out.elements.resize(seen_.size());
  if (runs_ == 0) return out;
  for (size_t v = 0; v < seen_.size(); ++v) {
    const std::vector<Seen>& s = seen_[v];
    if (s.size() != static_cast<size_t>(runs_)) continue;  // not made in every run
    const size_t rank = s[0].shape.size();
    if (std::any_of(s.begin(), s.end(), [&](const Seen& x) { return x.shape.size() != rank; }))
      continue;
    SymShape shape;
    for (size_t d = 0; d < rank; ++d) {
      Ints seq;
      for (const Seen& x : s) seq.push_back(x.shape[d]);
      if (std::all_of(seq.begin(), seq.end(), [&](int64_t e) { return e == seq[0]; })) {
        shape.push_back(SymDim::constant(seq[0]));
        continue;
      }
      std::optional<SymDim> dim;
      for (size_t k = 0; k < out.symbols.size() && !dim; ++k)
        if (out.symbols[k].seen == seq) dim = SymDim{static_cast<int32_t>(k), 1, 0};
      for (size_t k = 0; k < out.symbols.size() && !dim; ++k)
        dim = affine_fit(out.symbols[k].seen, seq, static_cast<int32_t>(k));
      if (!dim) {
        dim = SymDim{static_cast<int32_t>(out.symbols.size()), 1, 0};
        out.symbols.push_back({"", seq});
      }
      Symbol& sym = out.symbols[static_cast<size_t>(dim->sym)];
      if (sym.name.empty() && dim->scale == 1 && dim->offset == 0)
        sym.name = declared_name(g_, v, d);
      shape.push_back(*dim);
    }
    out.values[v] = std::move(shape);
  }
  derive_by_rules(out);
  derive_elements(out);
  // Unnamed symbols, and names two symbols share: "s<k>" (or "<name>#<k>").
  for (size_t k = 0; k < out.symbols.size(); ++k) {
    Symbol& sym = out.symbols[k];
    bool taken = false;
    for (size_t j = 0; j < k; ++j) taken |= out.symbols[j].name == sym.name;
    if (sym.name.empty())
      sym.name = "s" + std::to_string(k);
    else if (taken)
      sym.name += "#" + std::to_string(k);
  }
  return out;
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
