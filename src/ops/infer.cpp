// Graph-level type and shape inference and verification, from the ops' dtype and shape rules
// (see infer.h): Graph::infer_and_verify, Graph::verify and GraphBuilder use it.
#include "ops/infer.h"

#include <set>
#include <sstream>

#include "ir/value_label.h"
#include "ops/op.h"

namespace sgraph {

namespace {

std::optional<Shape> static_shape(const ValueInfo& v) {
  if (v.initializer.defined()) return v.initializer.shape();
  if (!v.shape) return std::nullopt;
  Shape s;
  for (const Dim& d : *v.shape) {
    if (!d.is_static()) return std::nullopt;
    s.push_back(d.size);
  }
  return s;
}

}  // namespace

void check_arity(const Node& n) {
  const ops::OpDef& def = ops::op_def(n.op);
  const auto n_in = static_cast<int>(n.inputs.size());
  const auto n_out = static_cast<int>(n.outputs.size());
  SG_CHECK(n_in >= def.min_inputs && n_in <= def.max_inputs)
      << "takes " << def.min_inputs
      << (def.min_inputs == def.max_inputs ? "" : " to " + std::to_string(def.max_inputs))
      << " inputs, got " << n_in;
  SG_CHECK(n_out >= def.min_outputs && n_out <= def.max_outputs)
      << "has " << def.min_outputs
      << (def.min_outputs == def.max_outputs ? "" : " to " + std::to_string(def.max_outputs))
      << " outputs, got " << n_out;
  for (int i = 0; i < def.min_inputs; ++i)
    SG_CHECK(n.inputs[i] != kNoValue) << "required input " << i << " is missing";
}

namespace {

// Structure checks: ids, arity, use before definition.
void check_structure(const Graph& g, const Node& n, int32_t index, std::vector<bool>& defined) {
  check_arity(n);
  const auto nv = static_cast<ValueId>(g.values.size());
  const auto n_in = static_cast<int>(n.inputs.size());
  for (int i = 0; i < n_in; ++i) {
    const ValueId v = n.inputs[i];
    if (v == kNoValue) continue;
    SG_CHECK(v >= 0 && v < nv) << "input " << i << " refers to value id " << v
                               << ", which does not exist (dangling)";
    if (!defined[v]) {
      const int32_t p = g.values[v].producer;
      SG_CHECK(p < 0) << "uses value '" << value_label(g, v) << "' before node '" << g.nodes[p].name
                      << "' produces it (cycle or misordered nodes)";
      SG_FAIL() << "input " << i << " '" << value_label(g, v)
                << "' is neither a graph input, a constant nor produced by a node (dangling)";
    }
  }
  for (ValueId v : n.outputs) {
    SG_CHECK(v >= 0 && v < nv) << "output refers to value id " << v << ", which does not exist";
    SG_CHECK(!defined[v]) << "output '" << value_label(g, v) << "' is already defined";
    SG_CHECK(g.values[v].producer == index)
        << "output '" << value_label(g, v) << "' records another producer";
    defined[v] = true;
  }
}

}  // namespace

namespace {

// Runs the op's shape rule on concrete input shapes; nullopt when it needs an unknown value.
std::optional<std::vector<Shape>> run_shape_rule(const Graph& g, const Node& n,
                                                 const std::vector<std::optional<Shape>>& shapes,
                                                 std::span<const DType> types) {
  std::vector<const Shape*> shape_ptrs(n.inputs.size(), nullptr);
  std::vector<const Tensor*> value_ptrs(n.inputs.size(), nullptr);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] == kNoValue) continue;
    shape_ptrs[i] = &*shapes[i];
    const Tensor& c = g.values[n.inputs[i]].initializer;
    if (c.defined()) value_ptrs[i] = &c;
  }
  std::vector<Shape> out(n.outputs.size());
  ops::ShapeCtx sc{n, shape_ptrs, value_ptrs, types, out};
  try {
    ops::op_def(n.op).shapes(sc);
  } catch (const ops::ValueUnknown&) {
    return std::nullopt;
  }
  return out;
}

// Symbolic inference: the shape rule runs twice, each time with every non-static dim replaced by
// a distinct sentinel size. An output dim equal in both runs is static; one equal to a symbol's
// sentinel in both runs is that symbol; anything else is unknown. A rule that rejects the
// sentinels (e.g. broadcasting two different symbols) leaves the shapes unknown: the interpreter
// checks real shapes when it runs.
std::optional<std::vector<DimList>> infer_symbolic(const Graph& g, const Node& n,
                                                   std::span<const DType> types) {
  std::vector<std::string> symbols;  // index = sentinel slot; "" for an anonymous unknown dim
  auto slot_of = [&](const Dim& d) {
    if (!d.symbol.empty())
      for (size_t k = 0; k < symbols.size(); ++k)
        if (symbols[k] == d.symbol) return static_cast<int64_t>(k);
    symbols.push_back(d.symbol);
    return static_cast<int64_t>(symbols.size() - 1);
  };
  std::vector<std::optional<DimList>> dims(n.inputs.size());
  std::vector<std::vector<int64_t>> slots(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] == kNoValue) continue;
    const ValueInfo& v = g.values[n.inputs[i]];
    if (v.initializer.defined())
      dims[i] = to_dims(v.initializer.shape());
    else if (v.shape)
      dims[i] = *v.shape;
    else
      return std::nullopt;  // unknown rank
    for (const Dim& d : *dims[i]) slots[i].push_back(d.is_static() ? -1 : slot_of(d));
  }
  const int64_t base[2] = {1009, 2003}, step[2] = {2, 3};
  std::optional<std::vector<Shape>> out[2];
  for (int run = 0; run < 2; ++run) {
    std::vector<std::optional<Shape>> shapes(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!dims[i]) continue;
      Shape s;
      for (size_t d = 0; d < dims[i]->size(); ++d)
        s.push_back(slots[i][d] < 0 ? (*dims[i])[d].size : base[run] + step[run] * slots[i][d]);
      shapes[i] = std::move(s);
    }
    try {
      out[run] = run_shape_rule(g, n, shapes, types);
    } catch (const Error&) {
      return std::nullopt;
    }
    if (!out[run]) return std::nullopt;
  }
  std::vector<DimList> result(n.outputs.size());
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const Shape &a = (*out[0])[k], &b = (*out[1])[k];
    if (a.size() != b.size()) return std::nullopt;
    for (size_t d = 0; d < a.size(); ++d) {
      Dim dim;  // unknown
      if (a[d] == b[d]) {
        dim = Dim(a[d]);
      } else if ((a[d] - base[0]) % step[0] == 0) {
        const int64_t slot = (a[d] - base[0]) / step[0];
        if (slot >= 0 && slot < static_cast<int64_t>(symbols.size()) &&
            b[d] == base[1] + step[1] * slot)
          dim.symbol = symbols[slot];
      }
      result[k].push_back(std::move(dim));
    }
  }
  return result;
}

}  // namespace

NodeTypes infer_node_types(const Graph& g, const Node& n) {
  NodeTypes r;
  std::vector<DType> in_types(n.inputs.size(), DType::undefined);
  std::vector<std::optional<Shape>> in_shapes(n.inputs.size());
  bool all_static = true;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] == kNoValue) continue;
    const ValueInfo& v = g.values[n.inputs[i]];
    in_types[i] = v.dtype;
    SG_CHECK(v.dtype != DType::undefined) << "input " << i << " '" << v.name << "' has no dtype";
    in_shapes[i] = static_shape(v);
    all_static = all_static && in_shapes[i].has_value();
  }
  r.dtypes.assign(n.outputs.size(), DType::undefined);
  ops::TypeCtx tc{n, in_types, r.dtypes};
  ops::op_def(n.op).types(tc);
  for (size_t i = 0; i < r.dtypes.size(); ++i)
    SG_ASSERT(r.dtypes[i] != DType::undefined) << "op left output " << i << " untyped";
  if (!all_static) {
    r.shapes = infer_symbolic(g, n, in_types);
    return r;
  }
  if (auto out = run_shape_rule(g, n, in_shapes, in_types)) {
    r.shapes.emplace();
    for (const Shape& s : *out) r.shapes->push_back(to_dims(s));
  }
  return r;
}

void infer_node(Graph& g, int32_t index) {
  Node& n = g.nodes[index];
  try {
    NodeTypes t = infer_node_types(g, n);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      ValueInfo& v = g.values[n.outputs[i]];
      v.dtype = t.dtypes[i];
      if (t.shapes) v.shape = (*t.shapes)[i];
    }
  } catch (Error& e) {
    e.at_node(n.name, std::string(op_name(n.op)));
    throw;
  }
}

namespace {
// Verifies `g`; with `write` (the same graph) also records inferred output types in it.
void check_graph(const Graph& g, Graph* write) {
  const auto nv = static_cast<ValueId>(g.values.size());
  std::vector<bool> defined(g.values.size(), false);
  std::set<std::string> names;
  for (const ValueInfo& v : g.values)
    if (!v.name.empty())
      SG_CHECK(names.insert(v.name).second)
          << "graph '" << g.name << "' has two values named '" << v.name << "'";
  for (ValueId v : g.inputs) {
    SG_CHECK(v >= 0 && v < nv) << "graph input id " << v << " does not exist";
    SG_CHECK(!defined[v]) << "graph input '" << g.values[v].name << "' is listed twice";
    SG_CHECK(g.values[v].dtype != DType::undefined)
        << "graph input '" << g.values[v].name << "' has no dtype";
    defined[v] = true;
  }
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].initializer.defined()) defined[i] = true;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    try {
      check_structure(g, n, static_cast<int32_t>(i), defined);
      for (const auto& [key, attr] : n.attrs)
        if (const auto* sub = std::get_if<std::shared_ptr<const Graph>>(&attr); sub && *sub) {
          try {
            (*sub)->verify();
          } catch (const Error& e) {
            throw Error("subgraph '" + key + "': " + e.what());
          }
        }
      if (write) {
        infer_node(*write, static_cast<int32_t>(i));
      } else {
        NodeTypes t = infer_node_types(g, n);
        for (size_t k = 0; k < n.outputs.size(); ++k) {
          const ValueInfo& v = g.values[n.outputs[k]];
          SG_CHECK(v.dtype == t.dtypes[k])
              << "output '" << v.name << "' is declared " << dtype_name(v.dtype)
              << " but the op produces " << dtype_name(t.dtypes[k]);
        }
      }
    } catch (Error& e) {
      e.at_node(n.name, std::string(op_name(n.op)));
      throw;
    }
  }
  for (ValueId v : g.outputs) {
    SG_CHECK(v >= 0 && v < nv) << "graph output id " << v << " does not exist";
    SG_CHECK(defined[v]) << "graph output '" << g.values[v].name << "' is never produced";
  }
}
}  // namespace

void Graph::infer_and_verify() { check_graph(*this, this); }
void Graph::verify() const { check_graph(*this, nullptr); }

}  // namespace sgraph
