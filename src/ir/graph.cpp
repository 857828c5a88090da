// Graph IR: attributes, construction, printing. Type/shape inference and verification apply the
// ops' rules, so they live a layer up, in src/ops/infer.cpp.
#include "sgraph/graph.h"

#include <sstream>

#include "ir/value_label.h"

namespace sgraph {

// ---- Dim ------------------------------------------------------------------------------------

std::string dims_str(const DimList& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    const Dim& d = dims[i];
    s += d.is_static() ? std::to_string(d.size) : (d.symbol.empty() ? "?" : d.symbol);
  }
  return s + "]";
}

DimList to_dims(const Shape& shape) { return DimList(shape.begin(), shape.end()); }

// ---- Attributes -----------------------------------------------------------------------------

Attributes::Attributes(std::initializer_list<std::pair<std::string, AttrValue>> items) {
  for (const auto& [k, v] : items) set(k, v);
}

void Attributes::set(std::string name, AttrValue value) {
  for (auto& [k, v] : items_)
    if (k == name) {
      v = std::move(value);
      return;
    }
  items_.emplace_back(std::move(name), std::move(value));
}

const AttrValue* Attributes::find(std::string_view name) const {
  for (const auto& [k, v] : items_)
    if (k == name) return &v;
  return nullptr;
}

template <class T>
const T& Attributes::get(std::string_view name, const char* type) const {
  const AttrValue* v = find(name);
  SG_CHECK(v != nullptr) << "missing required attribute '" << name << "'";
  const T* p = std::get_if<T>(v);
  SG_CHECK(p != nullptr) << "attribute '" << name << "' must be " << type << ", got "
                         << attr_str(*v);
  return *p;
}

int64_t Attributes::get_int(std::string_view name) const { return get<int64_t>(name, "an int"); }
int64_t Attributes::get_int(std::string_view name, int64_t dflt) const {
  return has(name) ? get_int(name) : dflt;
}
double Attributes::get_float(std::string_view name) const {
  if (const AttrValue* v = find(name); v && std::holds_alternative<int64_t>(*v))
    return static_cast<double>(std::get<int64_t>(*v));
  return get<double>(name, "a float");
}
double Attributes::get_float(std::string_view name, double dflt) const {
  return has(name) ? get_float(name) : dflt;
}
const std::string& Attributes::get_string(std::string_view name) const {
  return get<std::string>(name, "a string");
}
std::string Attributes::get_string(std::string_view name, std::string dflt) const {
  return has(name) ? get_string(name) : dflt;
}
const Ints& Attributes::get_ints(std::string_view name) const { return get<Ints>(name, "ints"); }
Ints Attributes::get_ints(std::string_view name, Ints dflt) const {
  return has(name) ? get_ints(name) : dflt;
}
const Floats& Attributes::get_floats(std::string_view name) const {
  return get<Floats>(name, "floats");
}
const Tensor& Attributes::get_tensor(std::string_view name) const {
  return get<Tensor>(name, "a tensor");
}
const Graph& Attributes::get_graph(std::string_view name) const {
  const auto& g = get<std::shared_ptr<const Graph>>(name, "a graph");
  SG_CHECK(g != nullptr) << "attribute '" << name << "' is an empty graph";
  return *g;
}

std::string attr_str(const AttrValue& v) {
  std::ostringstream os;
  auto list = [&](const auto& xs) {
    os << "[";
    for (size_t i = 0; i < xs.size(); ++i) os << (i ? "," : "") << xs[i];
    os << "]";
  };
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
          os << x;
        else if constexpr (std::is_same_v<T, std::string>)
          os << '"' << x << '"';
        else if constexpr (std::is_same_v<T, Tensor>)
          os << to_string(x, 8);
        else if constexpr (std::is_same_v<T, std::shared_ptr<const Graph>>)
          os << "graph " << (x ? x->name : "<null>");
        else
          list(x);
      },
      v);
  return os.str();
}

// ---- Graph ----------------------------------------------------------------------------------

ValueId Graph::add_value(std::string vname, DType dtype, std::optional<DimList> shape) {
  values.push_back(ValueInfo{std::move(vname), dtype, std::move(shape), {}, -1});
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::add_constant(std::string vname, Tensor value) {
  SG_CHECK(value.defined()) << "constant '" << vname << "' has no value";
  const ValueId id = add_value(std::move(vname), value.dtype(), to_dims(value.shape()));
  values[id].initializer = std::move(value);
  return id;
}

int32_t Graph::add_node(Node node) {
  const auto index = static_cast<int32_t>(nodes.size());
  for (ValueId out : node.outputs) {
    SG_CHECK(out >= 0 && out < static_cast<ValueId>(values.size()))
        << "node '" << node.name << "' has an output id " << out << " that is not a value";
    values[out].producer = index;
  }
  nodes.push_back(std::move(node));
  return index;
}

ValueId Graph::find_value(std::string_view vname) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == vname) return static_cast<ValueId>(i);
  return kNoValue;
}

const ValueInfo& Graph::value(ValueId id) const {
  SG_CHECK(id >= 0 && id < static_cast<ValueId>(values.size())) << "no value with id " << id;
  return values[id];
}

std::string value_label(const Graph& g, ValueId id) {
  const std::string& n = g.values[id].name;
  return n.empty() ? "%" + std::to_string(id) : n;
}

namespace {
// Prints `g` with every line prefixed by `pad`; subgraph attributes are printed nested.
void print_graph(std::ostream& os, const Graph& g, const std::string& pad) {
  auto typed = [&](ValueId id) {
    const ValueInfo& v = g.values[id];
    return value_label(g, id) + ": " + std::string(dtype_name(v.dtype)) +
           (v.shape ? dims_str(*v.shape) : "[?]");
  };
  os << "graph " << g.name << "(";
  for (size_t i = 0; i < g.inputs.size(); ++i) os << (i ? ", " : "") << typed(g.inputs[i]);
  os << ") {\n";
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].initializer.defined())
      os << pad << "  " << typed(static_cast<ValueId>(i)) << " = constant\n";
  for (const Node& n : g.nodes) {
    os << pad << "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << typed(n.outputs[i]);
    os << " = " << op_name(n.op) << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i)
      os << (i ? ", " : "") << (n.inputs[i] == kNoValue ? "_" : value_label(g, n.inputs[i]));
    os << ")";
    bool first = true;
    for (const auto& [k, v] : n.attrs) {
      if (std::holds_alternative<std::shared_ptr<const Graph>>(v)) continue;
      os << (first ? " {" : ", ") << k << "=" << attr_str(v);
      first = false;
    }
    if (!first) os << "}";
    os << "\n";
    for (const auto& [k, v] : n.attrs)
      if (const auto* sub = std::get_if<std::shared_ptr<const Graph>>(&v); sub && *sub) {
        os << pad << "    " << k << " = ";
        print_graph(os, **sub, pad + "    ");
      }
  }
  os << pad << "  return ";
  for (size_t i = 0; i < g.outputs.size(); ++i)
    os << (i ? ", " : "") << value_label(g, g.outputs[i]);
  os << "\n" << pad << "}\n";
}
}  // namespace

std::string Graph::to_string() const {
  std::ostringstream os;
  print_graph(os, *this, "");
  return os.str();
}

}  // namespace sgraph
