// ONNX export: Graph -> ModelProto, the inverse of import.cpp.
//
// Each sgraph node is written as one ONNX node of the same op type, attributes and inputs, at one
// ai.onnx opset for the whole model (17, or 18/19 when a node needs that version's form). The
// forms of older op versions that sgraph keeps as the importer read them (Slice-1's attributes,
// say) are rewritten where the chosen opset lacks them: their attributes become constant inputs.
//
// If branches: sgraph passes every outer value a branch reads as an input of the If node and of
// the branch graph, in the same order; ONNX subgraphs read outer values by name instead. A branch
// is written with no inputs, its references to branch input i written as the name of the If
// node's input i + 1, so re-import captures the same values in the same order. Names inside a
// branch never shadow a name of an enclosing graph. A branch returning an outer value as it is
// returns an Identity of it (ONNX Runtime rejects the outer name as a subgraph output).
//
// Function groups: each group becomes one call of a model-local function whose body is the
// group's nodes, written with the values' own names, so inlining the call gives the group back.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "onnx/tensor_proto.h"
#include "ops/op.h"
#include "sgraph/onnx.h"

namespace sgraph {

namespace {

constexpr const char* kFunctionDomain = "sgraph.region";

// Names kept at their first occurrence when non-empty; the others get `generated(i)` (an empty
// name) or "<name>_<k>" (a repeated one), with the first k >= 1 that is free.
template <class Generated>
std::vector<std::string> unique_names(std::vector<std::string> names, Generated generated) {
  std::unordered_set<std::string> taken;
  std::vector<bool> keep(names.size(), false);
  for (size_t i = 0; i < names.size(); ++i)
    if (!names[i].empty() && taken.insert(names[i]).second) keep[i] = true;
  for (size_t i = 0; i < names.size(); ++i) {
    if (keep[i]) continue;
    const std::string base = names[i].empty() ? generated(i) : names[i];
    std::string n = base;
    for (int k = 1; taken.count(n); ++k) n = base + "_" + std::to_string(k);
    taken.insert(n);
    names[i] = std::move(n);
  }
  return names;
}

bool is_reduce(OpKind op) {
  switch (op) {
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd:
    case OpKind::ReduceL1:
    case OpKind::ReduceL2:
    case OpKind::ReduceLogSum:
    case OpKind::ReduceLogSumExp:
    case OpKind::ReduceSumSquare:
      return true;
    default:
      return false;
  }
}

bool has_input(const Node& n, size_t i) { return i < n.inputs.size() && n.inputs[i] != kNoValue; }

// The lowest opset (17, 18 or 19) that writes every node of `g` and its subgraphs as it is.
int64_t needed_opset(const Graph& g) {
  int64_t v = 17;
  for (const Node& n : g.nodes) {
    const Attributes& a = n.attrs;
    if (n.op == OpKind::Mish ||
        (is_reduce(n.op) && n.op != OpKind::ReduceSum &&
         (has_input(n, 1) || a.has("noop_with_empty_axes"))) ||
        (n.op == OpKind::Split && a.has("num_outputs")) ||
        (n.op == OpKind::Pad && has_input(n, 3)) ||
        (n.op == OpKind::Resize &&
         (a.has("axes") || a.has("keep_aspect_ratio_policy") || a.has("antialias"))))
      v = std::max<int64_t>(v, 18);
    if ((n.op == OpKind::AveragePool && a.has("dilations")) ||
        (n.op == OpKind::Resize &&
         a.get_string("coordinate_transformation_mode", "") == "half_pixel_symmetric"))
      v = std::max<int64_t>(v, 19);
    for (const auto& [key, value] : a)
      if (const auto* sub = std::get_if<std::shared_ptr<const Graph>>(&value); sub && *sub)
        v = std::max(v, needed_opset(**sub));
  }
  return v;
}

// Every value name of `g` and its subgraphs.
void collect_names(const Graph& g, std::unordered_set<std::string>& out) {
  for (const ValueInfo& v : g.values) out.insert(v.name);
  for (const Node& n : g.nodes)
    for (const auto& [key, value] : n.attrs)
      if (const auto* sub = std::get_if<std::shared_ptr<const Graph>>(&value); sub && *sub)
        collect_names(**sub, out);
}

void set_type(onnx::ValueInfoProto& vi, const ValueInfo& v) {
  if (v.dtype == DType::undefined) return;
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(onnx_dtype_code(v.dtype)));
  if (!v.shape) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : *v.shape) {
    auto* pd = shape->add_dim();
    if (d.is_static())
      pd->set_dim_value(d.size);
    else if (!d.symbol.empty())
      pd->set_dim_param(d.symbol);
  }
}

using NodeList = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

// The names one graph's values are written with, and the names visible in it (its own and its
// enclosing graphs').
struct ExportScope {
  const Graph& g;
  std::vector<std::string> names;  // by value id
  const ExportScope* parent = nullptr;
  std::unordered_set<std::string> own;  // names defined in this graph (constants added as made)
  std::string label;  // a branch's: "<If node>/<attribute>", nested ones joined by '/'

  bool visible(const std::string& n) const {
    return own.count(n) || (parent != nullptr && parent->visible(n));
  }
};

class Exporter {
 public:
  Exporter(int64_t opset, std::unordered_set<std::string> reserved, onnx::ModelProto& m,
           const OnnxSaveOptions& options)
      : opset_(opset), reserved_(std::move(reserved)), model_(m), options_(options) {}

  // Writes node `n` of s.g as `name` into `out`, after the Constant nodes its rewriting needs.
  void write_node(ExportScope& s, const Node& n, const std::string& name, NodeList& out);
  // Writes s.g's nodes (named node_names) into `out` in a topological order of the graph with each
  // group contracted, each group one call of a model-local function named fnames[k].
  void write_grouped(ExportScope& s, const std::vector<std::string>& node_names,
                     const std::vector<std::vector<int32_t>>& groups,
                     const std::vector<std::string>& fnames, NodeList& out);
  bool wrote_functions() const { return model_.functions_size() > 0; }
  // The domains other than the default one that written nodes belong to.
  const std::set<std::string>& domains() const { return domains_; }

 private:
  // A Constant node holding `t`, named "<node>/<what>" (made unique); returns the value's name.
  std::string constant(ExportScope& s, const std::string& node, const std::string& what,
                       const Tensor& t, NodeList& out);
  void write_branch(const ExportScope& outer, const Node& n, const std::string& key, const Graph& b,
                    onnx::GraphProto& gp);
  void write_attribute(const ExportScope& s, const Node& n, const std::string& key,
                       const AttrValue& v, onnx::AttributeProto& a);

  int64_t opset_;
  std::set<std::string> domains_;
  std::unordered_set<std::string> reserved_;  // every value name written or to be written
  onnx::ModelProto& model_;
  const OnnxSaveOptions& options_;
};

std::string Exporter::constant(ExportScope& s, const std::string& node, const std::string& what,
                               const Tensor& t, NodeList& out) {
  const std::string base = node + "/" + what;
  std::string name = base;
  for (int k = 1; reserved_.count(name) || s.visible(name); ++k)
    name = base + "_" + std::to_string(k);
  reserved_.insert(name);
  s.own.insert(name);
  onnx::NodeProto& c = *out.Add();
  c.set_op_type("Constant");
  c.set_name(name);
  c.add_output(name);
  onnx::AttributeProto& a = *c.add_attribute();
  a.set_name("value");
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = onnx_import::tensor_to_proto(t, "");
  return name;
}

void Exporter::write_attribute(const ExportScope& s, const Node& n, const std::string& key,
                               const AttrValue& v, onnx::AttributeProto& a) {
  using A = onnx::AttributeProto;
  a.set_name(key);
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          a.set_type(A::INT);
          a.set_i(x);
        } else if constexpr (std::is_same_v<T, double>) {
          a.set_type(A::FLOAT);
          a.set_f(static_cast<float>(x));
        } else if constexpr (std::is_same_v<T, std::string>) {
          a.set_type(A::STRING);
          a.set_s(x);
        } else if constexpr (std::is_same_v<T, Ints>) {
          a.set_type(A::INTS);
          for (int64_t i : x) a.add_ints(i);
        } else if constexpr (std::is_same_v<T, Floats>) {
          a.set_type(A::FLOATS);
          for (double f : x) a.add_floats(static_cast<float>(f));
        } else if constexpr (std::is_same_v<T, Strings>) {
          a.set_type(A::STRINGS);
          for (const std::string& str : x) a.add_strings(str);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          a.set_type(A::TENSOR);
          *a.mutable_t() = onnx_import::tensor_to_proto(x, "");
        } else {
          SG_CHECK(x != nullptr) << "attribute '" << key << "' is an empty graph";
          SG_CHECK(n.op == OpKind::If && (key == "then_branch" || key == "else_branch"))
              << "graph attribute '" << key << "' has no ONNX form (only If's branches do)";
          a.set_type(A::GRAPH);
          write_branch(s, n, key, *x, *a.mutable_g());
        }
      },
      v);
}

void Exporter::write_node(ExportScope& s, const Node& n, const std::string& name, NodeList& out) {
  const std::string op(op_name(n.op));
  try {
    SG_CHECK(op_from_name(op).has_value()) << "op '" << op << "' has no ONNX equivalent";
    std::vector<std::string> ins;
    for (ValueId v : n.inputs) ins.push_back(v == kNoValue ? "" : s.names.at(v));
    std::set<std::string> dropped = {"consumed_inputs", "broadcast"};
    Tensor value_1d;  // ConstantOfShape's value, as ONNX wants it
    auto set_input = [&](size_t i, std::string v) {
      if (ins.size() <= i) ins.resize(i + 1);
      ins[i] = std::move(v);
    };
    auto ints_input = [&](const std::string& key) {
      const Ints& v = n.attrs.get_ints(key);
      return constant(s, name, key, Tensor::from<int64_t>({static_cast<int64_t>(v.size())}, v),
                      out);
    };
    // An attribute of an older op version that this opset takes as input `i`.
    auto attr_to_input = [&](const char* key, size_t i) {
      if (!has_input(n, i) && n.attrs.has(key)) set_input(i, ints_input(key));
      dropped.insert(key);
    };
    switch (n.op) {
      case OpKind::Slice:  // Slice-1: starts, ends, axes attributes
        if (!has_input(n, 1) && n.attrs.has("starts")) {
          set_input(1, ints_input("starts"));
          set_input(2, ints_input("ends"));
          if (n.attrs.has("axes")) set_input(3, ints_input("axes"));
        }
        dropped.insert({"starts", "ends", "axes"});
        break;
      case OpKind::Squeeze:
      case OpKind::Unsqueeze:
        attr_to_input("axes", 1);
        break;
      case OpKind::Split:
        attr_to_input("split", 1);
        break;
      case OpKind::Pad:  // Pad-2: pads and value attributes
        if (!has_input(n, 1) && n.attrs.has("pads")) {
          set_input(1, ints_input("pads"));
          if (n.attrs.has("value"))
            set_input(2,
                      constant(s, name, "value",
                               onnx_import::scalar_from_double(s.g.values.at(n.inputs.at(0)).dtype,
                                                               n.attrs.get_float("value")),
                               out));
        }
        dropped.insert({"pads", "value"});
        break;
      case OpKind::Resize:  // Upsample-7's scales attribute
        if (!has_input(n, 2) && !has_input(n, 3) && n.attrs.has("scales")) {
          std::vector<float> v;
          for (double x : n.attrs.get_floats("scales")) v.push_back(static_cast<float>(x));
          set_input(2, constant(s, name, "scales",
                                Tensor::from<float>({static_cast<int64_t>(v.size())}, v), out));
        }
        dropped.insert("scales");
        break;
      case OpKind::Clip:  // Clip-6's bounds: sgraph reads only the inputs
        dropped.insert({"min", "max"});
        break;
      case OpKind::ConstantOfShape:  // ONNX wants the value as a one-element 1-D tensor
        if (const AttrValue* v = n.attrs.find("value");
            v && std::holds_alternative<Tensor>(*v) && std::get<Tensor>(*v).rank() == 0) {
          dropped.insert("value");
          value_1d = std::get<Tensor>(*v).reshape({1});
        }
        break;
      case OpKind::BatchNormalization:
        dropped.insert({"is_test", "spatial"});
        break;
      default:
        if (is_reduce(n.op) && (n.op == OpKind::ReduceSum || opset_ >= 18)) {
          // An empty axes attribute reduces everything, as no axes input does.
          if (n.attrs.has("axes") && !n.attrs.get_ints("axes").empty()) attr_to_input("axes", 1);
          dropped.insert("axes");
        }
        break;
    }
    if (n.op == OpKind::If) ins.resize(1);  // the branches read the rest by name
    while (!ins.empty() && ins.back().empty()) ins.pop_back();

    onnx::NodeProto& np = *out.Add();
    np.set_op_type(op);
    if (const std::string_view d = ops::op_def(n.op).domain; !d.empty()) {
      np.set_domain(std::string(d));
      domains_.emplace(d);
    }
    np.set_name(name);
    for (const std::string& i : ins) np.add_input(i);
    for (ValueId v : n.outputs) np.add_output(s.names.at(v));
    for (const auto& [key, value] : n.attrs)
      if (!dropped.count(key)) write_attribute(s, n, key, value, *np.add_attribute());
    if (value_1d.defined()) write_attribute(s, n, "value", value_1d, *np.add_attribute());
  } catch (Error& e) {
    e.at_node(name, op);
    throw;
  }
}

void Exporter::write_branch(const ExportScope& outer, const Node& n, const std::string& key,
                            const Graph& b, onnx::GraphProto& gp) {
  SG_CHECK(b.inputs.size() + 1 == n.inputs.size())
      << "branch '" << b.name << "' has " << b.inputs.size() << " inputs, the node passes "
      << n.inputs.size() - 1 << " outer values";
  ExportScope s{
      b, {}, &outer, {}, (outer.label.empty() ? "" : outer.label + "/") + n.name + "/" + key};
  const OnnxNames base = onnx_names(b);
  s.names.assign(b.values.size(), "");
  std::vector<bool> bound(b.values.size(), false);
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    SG_CHECK(n.inputs[i + 1] != kNoValue) << "If input " << i + 1 << " is absent";
    s.names[b.inputs[i]] = outer.names.at(n.inputs[i + 1]);
    bound[b.inputs[i]] = true;
  }
  std::unordered_set<std::string> assigned;
  for (size_t v = 0; v < b.values.size(); ++v)
    if (bound[v]) assigned.insert(s.names[v]);
  for (size_t v = 0; v < b.values.size(); ++v) {
    if (bound[v]) continue;
    std::string name = base.values[v];
    if (outer.visible(name) || assigned.count(name)) {  // shadowing: a fresh name instead
      int k = 1;
      do name = base.values[v] + "_" + std::to_string(k++);
      while (outer.visible(name) || assigned.count(name) || reserved_.count(name));
    }
    assigned.insert(name);
    reserved_.insert(name);
    s.own.insert(name);
    s.names[v] = std::move(name);
  }

  gp.set_name(b.name);
  for (size_t v = 0; v < b.values.size(); ++v)
    if (b.values[v].initializer.defined() && !bound[v])
      *gp.add_initializer() = onnx_import::tensor_to_proto(b.values[v].initializer, s.names[v]);
  // The branch's function groups (OnnxSaveOptions::subgraph_functions), named after the label.
  std::vector<std::vector<int32_t>> groups;
  std::vector<std::string> fnames;
  if (auto it = options_.subgraph_functions.find(s.label);
      it != options_.subgraph_functions.end()) {
    groups = it->second;
    std::string stem;
    for (char ch : s.label) stem += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    for (size_t k = 0; k < groups.size(); ++k) {
      std::string f = stem + "_region_" + std::to_string(k);
      const auto taken = [&](const std::string& name) {
        for (const auto& fp : model_.functions())
          if (fp.name() == name) return true;
        return std::find(fnames.begin(), fnames.end(), name) != fnames.end();
      };
      for (int j = 1; taken(f); ++j)
        f = stem + "_region_" + std::to_string(k) + "_" + std::to_string(j);
      fnames.push_back(f);
    }
  }
  write_grouped(s, base.nodes, groups, fnames, *gp.mutable_node());
  for (ValueId v : b.outputs) {
    std::string name = s.names.at(v);
    if (bound[v]) {  // an outer value returned as is: ONNX Runtime wants an Identity in between
      name = base.values[v];
      for (int k = 1; outer.visible(name) || assigned.count(name) || reserved_.count(name); ++k)
        name = base.values[v] + "_" + std::to_string(k);
      assigned.insert(name);
      reserved_.insert(name);
      s.own.insert(name);
      onnx::NodeProto& id = *gp.add_node();
      id.set_op_type("Identity");
      id.set_name(name);
      id.add_input(s.names[v]);
      id.add_output(name);
    }
    onnx::ValueInfoProto& vi = *gp.add_output();
    vi.set_name(name);
    set_type(vi, b.values.at(v));
  }
}

// The nodes of `g` contracted: each function group is one unit, every other node one of its own.
struct Contraction {
  std::vector<int32_t> unit_of;               // by node index
  std::vector<std::vector<int32_t>> members;  // by unit, ascending node indices
  std::vector<int32_t> order;                 // units in a topological order
};

// Whether a path of `g` leaves group k (unit_of[i] == k) and comes back into it.
bool leaves_and_returns(const Graph& g, const std::vector<int32_t>& unit_of, int32_t k) {
  const size_t n = g.nodes.size();
  std::vector<std::vector<int32_t>> readers(g.values.size());
  for (size_t j = 0; j < n; ++j)
    for (ValueId v : g.nodes[j].inputs)
      if (v != kNoValue) readers[v].push_back(static_cast<int32_t>(j));
  std::vector<bool> seen(n, false);
  std::vector<int32_t> stack;
  for (size_t i = 0; i < n; ++i)
    if (unit_of[i] == k) stack.push_back(static_cast<int32_t>(i));
  while (!stack.empty()) {  // outside nodes reachable from the group
    const int32_t i = stack.back();
    stack.pop_back();
    for (ValueId v : g.nodes[i].outputs)
      for (int32_t j : readers[v]) {
        if (unit_of[j] == k) {
          if (unit_of[i] != k) return true;
          continue;
        }
        if (!seen[j]) {
          seen[j] = true;
          stack.push_back(j);
        }
      }
  }
  return false;
}

Contraction contract(const Graph& g, const std::vector<std::vector<int32_t>>& groups,
                     const OnnxNames& names) {
  const auto n_nodes = static_cast<int32_t>(g.nodes.size());
  const auto n_groups = static_cast<int32_t>(groups.size());
  Contraction c;
  c.unit_of.assign(n_nodes, -1);
  c.members.resize(n_groups);
  for (int32_t k = 0; k < n_groups; ++k) {
    SG_CHECK(!groups[k].empty()) << "function group " << k << " is empty";
    for (int32_t i : groups[k]) {
      SG_CHECK(i >= 0 && i < n_nodes) << "function group " << k << " lists node index " << i
                                      << ", but the graph has " << n_nodes << " nodes";
      SG_CHECK(c.unit_of[i] < 0) << "node '" << names.nodes[i] << "' (index " << i
                                 << ") is in function group " << c.unit_of[i] << " and in group "
                                 << k << ": groups must be disjoint";
      c.unit_of[i] = k;
      c.members[k].push_back(i);
    }
    std::sort(c.members[k].begin(), c.members[k].end());
  }
  for (int32_t i = 0; i < n_nodes; ++i)
    if (c.unit_of[i] < 0) {
      c.unit_of[i] = static_cast<int32_t>(c.members.size());
      c.members.push_back({i});
    }
  const size_t n_units = c.members.size();
  std::vector<std::vector<int32_t>> succ(n_units);
  std::vector<int32_t> indegree(n_units, 0);
  for (int32_t j = 0; j < n_nodes; ++j)
    for (ValueId v : g.nodes[j].inputs) {
      if (v == kNoValue) continue;
      const int32_t p = g.values.at(v).producer;
      if (p < 0 || c.unit_of[p] == c.unit_of[j]) continue;
      succ[c.unit_of[p]].push_back(c.unit_of[j]);
    }
  for (auto& s : succ) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    for (int32_t u : s) ++indegree[u];
  }
  // Kahn's algorithm, taking the ready unit with the lowest first node: without groups, the
  // graph's own order.
  using Item = std::pair<int32_t, int32_t>;  // (first node index, unit)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (size_t u = 0; u < n_units; ++u)
    if (indegree[u] == 0) ready.emplace(c.members[u].front(), static_cast<int32_t>(u));
  while (!ready.empty()) {
    const int32_t u = ready.top().second;
    ready.pop();
    c.order.push_back(u);
    for (int32_t w : succ[u])
      if (--indegree[w] == 0) ready.emplace(c.members[w].front(), w);
  }
  if (c.order.size() != n_units) {
    // The groups left: those a path leaves and comes back into, or else (groups that make a cycle
    // only together) all of them.
    std::vector<int32_t> left, cyclic;
    for (int32_t k = 0; k < n_groups; ++k)
      if (indegree[k] > 0) left.push_back(k);
    for (int32_t k : left)
      if (leaves_and_returns(g, c.unit_of, k)) cyclic.push_back(k);
    std::string list;
    for (int32_t k : cyclic.empty() ? left : cyclic)
      list += (list.empty() ? "" : ", ") + std::to_string(k);
    SG_FAIL() << "function groups cannot be contracted without a cycle: a path leaves "
              << (cyclic.empty() ? "groups {" : "each of groups {") << list
              << "} and comes back into it through other nodes";
  }
  return c;
}

void Exporter::write_grouped(ExportScope& s, const std::vector<std::string>& node_names,
                             const std::vector<std::vector<int32_t>>& groups,
                             const std::vector<std::string>& fnames, NodeList& out) {
  const Graph& g = s.g;
  const Contraction c = contract(g, groups, OnnxNames{node_names, s.names});
  std::vector<bool> read_outside(g.values.size(), false);
  for (size_t j = 0; j < g.nodes.size(); ++j)
    for (ValueId v : g.nodes[j].inputs)
      if (v != kNoValue && g.values.at(v).producer >= 0 &&
          c.unit_of[g.values[v].producer] != c.unit_of[j])
        read_outside[v] = true;
  for (ValueId v : g.outputs) read_outside.at(v) = true;
  std::unordered_set<std::string> taken(node_names.begin(), node_names.end());

  for (int32_t u : c.order) {
    if (u >= static_cast<int32_t>(groups.size())) {
      const int32_t i = c.members[u].front();
      write_node(s, g.nodes[i], node_names[i], out);
      continue;
    }
    onnx::FunctionProto& f = *model_.add_functions();
    f.set_name(fnames[u]);
    f.set_domain(kFunctionDomain);
    auto* fo = f.add_opset_import();
    fo->set_domain("");
    fo->set_version(opset_);
    std::unordered_set<ValueId> produced, listed;
    for (int32_t i : c.members[u])
      produced.insert(g.nodes[i].outputs.begin(), g.nodes[i].outputs.end());
    onnx::NodeProto call;
    call.set_op_type(fnames[u]);
    call.set_domain(kFunctionDomain);
    std::string call_name = fnames[u];
    for (int k = 1; taken.count(call_name); ++k) call_name = fnames[u] + "_" + std::to_string(k);
    taken.insert(call_name);
    call.set_name(call_name);
    for (int32_t i : c.members[u])
      for (ValueId v : g.nodes[i].inputs)
        if (v != kNoValue && !produced.count(v) && listed.insert(v).second) {
          f.add_input(s.names[v]);
          call.add_input(s.names[v]);
        }
    for (int32_t i : c.members[u])
      for (ValueId v : g.nodes[i].outputs)
        if (read_outside[v]) {
          f.add_output(s.names[v]);
          call.add_output(s.names[v]);
        }
    for (int32_t i : c.members[u]) write_node(s, g.nodes[i], node_names[i], *f.mutable_node());
    *out.Add() = std::move(call);
  }
}

onnx::ModelProto export_model(const Graph& g, const OnnxSaveOptions& options) {
  const int64_t opset = needed_opset(g);
  const OnnxNames names = onnx_names(g);
  std::unordered_set<std::string> reserved(names.values.begin(), names.values.end());
  collect_names(g, reserved);
  onnx::ModelProto m;
  Exporter ex(opset, std::move(reserved), m, options);
  ExportScope top{g, names.values, nullptr, {}, ""};
  top.own.insert(names.values.begin(), names.values.end());

  m.set_ir_version(8);  // model-local functions need 8
  m.set_producer_name("sgraph");
  m.set_producer_version(SGRAPH_VERSION);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  for (const auto& [key, value] : g.metadata) {
    auto* p = m.add_metadata_props();
    p->set_key(key);
    p->set_value(value);
  }

  onnx::GraphProto& gp = *m.mutable_graph();
  gp.set_name(g.name);
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].initializer.defined())
      *gp.add_initializer() =
          onnx_import::tensor_to_proto(g.values[v].initializer, names.values[v]);
  for (ValueId v : g.inputs) {
    const ValueInfo& info = g.values.at(v);
    if (info.initializer.defined()) continue;
    SG_CHECK(info.dtype != DType::undefined)
        << "graph input '" << names.values[v] << "' has no dtype";
    onnx::ValueInfoProto& vi = *gp.add_input();
    vi.set_name(names.values[v]);
    set_type(vi, info);
  }

  // Function groups: names, then the contracted order.
  const auto n_groups = static_cast<int32_t>(options.functions.size());
  SG_CHECK(options.function_names.size() <= options.functions.size())
      << "function_names has " << options.function_names.size() << " names for "
      << options.functions.size() << " function groups";
  std::vector<std::string> fnames;
  for (int32_t k = 0; k < n_groups; ++k) {
    const bool given = static_cast<size_t>(k) < options.function_names.size() &&
                       !options.function_names[k].empty();
    fnames.push_back(given ? options.function_names[k] : "region_" + std::to_string(k));
    for (int32_t j = 0; j < k; ++j)
      SG_CHECK(fnames[j] != fnames[k])
          << "function groups " << j << " and " << k << " have the same name '" << fnames[k] << "'";
  }
  ex.write_grouped(top, names.nodes, options.functions, fnames, *gp.mutable_node());
  if (ex.wrote_functions()) {
    auto* fd = m.add_opset_import();
    fd->set_domain(kFunctionDomain);
    fd->set_version(1);
  }
  // Nodes of other domains, at version 1 (the one sgraph knows of each); every function imports
  // them too, as its body may hold such nodes.
  for (const std::string& d : ex.domains()) {
    auto* od = m.add_opset_import();
    od->set_domain(d);
    od->set_version(1);
    for (onnx::FunctionProto& f : *m.mutable_functions()) {
      auto* fo = f.add_opset_import();
      fo->set_domain(d);
      fo->set_version(1);
    }
  }

  for (ValueId v : g.outputs) {
    onnx::ValueInfoProto& vi = *gp.add_output();
    vi.set_name(names.values.at(v));
    set_type(vi, g.values[v]);
  }
  return m;
}

}  // namespace

OnnxNames onnx_names(const Graph& g) {
  OnnxNames r;
  std::vector<std::string> nodes, values;
  for (const Node& n : g.nodes) nodes.push_back(n.name);
  for (const ValueInfo& v : g.values) values.push_back(v.name);
  r.nodes = unique_names(std::move(nodes), [&](size_t i) {
    return std::string(op_name(g.nodes[i].op)) + "_" + std::to_string(i);
  });
  r.values = unique_names(std::move(values), [](size_t i) { return "value_" + std::to_string(i); });
  return r;
}

std::string save_onnx_bytes(const Graph& g, const OnnxSaveOptions& options) {
  const onnx::ModelProto m = export_model(g, options);
  std::string bytes;
  SG_CHECK(m.SerializeToString(&bytes)) << "the model does not serialize (2 GiB or more?)";
  return bytes;
}

void save_onnx(const Graph& g, const std::string& path, const OnnxSaveOptions& options) {
  const std::string bytes = save_onnx_bytes(g, options);
  std::ofstream out(path, std::ios::binary);
  SG_CHECK(out) << path << ": cannot write file";
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  SG_CHECK(out.good()) << path << ": write failed";
}

}  // namespace sgraph
