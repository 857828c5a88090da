// sgraph/graph.h — the IR: a flat, topologically ordered list of nodes over integer value ids.
//
//   GraphBuilder b("mlp");
//   ValueId x = b.input("x", DType::f32, {Dim("batch"), 4});
//   ValueId w = b.constant("w", Tensor::from<float>({4, 3}, {...}));
//   ValueId y = b.relu(b.matmul(x, w));
//   b.output(y, "y");
//   Graph g = b.build();           // verified
//   std::cout << g.to_string();
//
// Values are numbered; a value is a graph input, an initializer (a constant tensor) or the
// output of exactly one node. Nodes appear after the nodes producing their inputs.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "sgraph/op_list.h"
#include "sgraph/tensor.h"

namespace sgraph {

class Graph;
using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;  // an absent optional input

std::string_view op_name(OpKind op);
std::optional<OpKind> op_from_name(std::string_view name);

// A declared dimension: a static size, or a named symbolic one ("batch"), or unknown (-1, "").
struct Dim {
  int64_t size = -1;
  std::string symbol;
  Dim() = default;
  Dim(int64_t s) : size(s) {}  // NOLINT: implicit so {Dim("n"), 4} reads naturally
  Dim(const char* sym) : symbol(sym) {}
  Dim(std::string sym) : symbol(std::move(sym)) {}
  bool is_static() const { return size >= 0; }
  bool operator==(const Dim&) const = default;
};
using DimList = std::vector<Dim>;
std::string dims_str(const DimList& dims);  // "[batch,4]"
DimList to_dims(const Shape& shape);

using Ints = std::vector<int64_t>;
using Floats = std::vector<double>;
using Strings = std::vector<std::string>;
using AttrValue = std::variant<int64_t, double, std::string, Ints, Floats, Strings, Tensor,
                               std::shared_ptr<const Graph>>;

// A small ordered name -> value map. Getters throw sgraph::Error naming the attribute when it
// is missing (and has no default) or has another type.
class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<std::string, AttrValue>> items);
  void set(std::string name, AttrValue value);
  bool has(std::string_view name) const { return find(name) != nullptr; }
  const AttrValue* find(std::string_view name) const;
  bool empty() const { return items_.empty(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

  int64_t get_int(std::string_view name) const;
  int64_t get_int(std::string_view name, int64_t dflt) const;
  double get_float(std::string_view name) const;
  double get_float(std::string_view name, double dflt) const;
  const std::string& get_string(std::string_view name) const;
  std::string get_string(std::string_view name, std::string dflt) const;
  const Ints& get_ints(std::string_view name) const;
  Ints get_ints(std::string_view name, Ints dflt) const;
  const Floats& get_floats(std::string_view name) const;
  const Tensor& get_tensor(std::string_view name) const;
  const Graph& get_graph(std::string_view name) const;

 private:
  template <class T>
  const T& get(std::string_view name, const char* type) const;
  std::vector<std::pair<std::string, AttrValue>> items_;
};
std::string attr_str(const AttrValue& v);

struct ValueInfo {
  std::string name;
  DType dtype = DType::undefined;
  std::optional<DimList> shape;  // declared or inferred; nullopt when unknown
  Tensor initializer;            // defined for constants
  int32_t producer = -1;         // index of the producing node, -1 for inputs and constants
};

struct Node {
  OpKind op;
  std::string name;
  std::vector<ValueId> inputs;  // kNoValue for an absent optional input
  std::vector<ValueId> outputs;
  Attributes attrs;
};

class Graph {
 public:
  std::string name = "graph";
  std::vector<ValueInfo> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::map<std::string, std::string> metadata;  // e.g. "onnx.opset" -> "13" for imported models

  ValueId add_value(std::string name, DType dtype = DType::undefined,
                    std::optional<DimList> shape = std::nullopt);
  ValueId add_constant(std::string name, Tensor value);
  // Appends a node; outputs must be fresh values. Returns the node's index.
  int32_t add_node(Node node);
  ValueId find_value(std::string_view name) const;  // kNoValue when absent
  const ValueInfo& value(ValueId id) const;
  bool is_constant(ValueId id) const { return values.at(id).initializer.defined(); }

  // Checks the graph and fills in each node's output dtypes and (where inputs are static) shapes.
  // Throws sgraph::Error naming the node and op for dangling or duplicate values, a node using a
  // value before it is produced (a cycle or misordering), a wrong input count, or a type error.
  void infer_and_verify();
  void verify() const;  // the same checks, without writing inferred types back

  std::string to_string() const;  // a readable listing, stable for use in tests
};

// Builds graphs with one method per op (generated from op_list.h):
//   b.add(x, y); b.transpose(x, Attributes{{"perm", Ints{1, 0}}}); b.clip(x, lo, hi);
// Every node is type-checked as it is added, so errors point at the line that caused them.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "graph");
  // Continues building `g`: new values and nodes are added after its own (autodiff appends the
  // backward pass this way).
  explicit GraphBuilder(Graph g);
  ValueId input(std::string name, DType dtype, DimList shape);
  ValueId constant(std::string name, Tensor value);
  template <class T>
  ValueId scalar(T v) {
    return constant("", Tensor::scalar<T>(v));
  }
  ValueId ints(const Ints& v) {
    return constant("", Tensor::from<int64_t>({int64_t(v.size())}, v));
  }
  void output(ValueId v, std::string name = "");

  // The general form: any op, any number of outputs.
  std::vector<ValueId> node(OpKind op, std::vector<ValueId> inputs, Attributes attrs = {},
                            int num_outputs = 1, std::string name = "");

#define SG_OP_METHOD(Name, method)                            \
  template <class... Args>                                    \
  ValueId method(Args&&... args) {                            \
    return single(OpKind::Name, std::forward<Args>(args)...); \
  }
  SG_FOR_EACH_OP(SG_OP_METHOD)
#undef SG_OP_METHOD

  // Generated node names ("mul_3") start with `prefix` from now on ("fc1/grad/mul_3").
  void name_prefix(std::string prefix) { prefix_ = std::move(prefix); }

  Graph build();  // verifies; the builder is left empty
  Graph& graph() { return graph_; }

 private:
  template <class... Args>
  ValueId single(OpKind op, Args&&... args) {
    std::vector<ValueId> ins;
    Attributes attrs;
    (collect(ins, attrs, std::forward<Args>(args)), ...);
    return node(op, std::move(ins), std::move(attrs), 1).front();
  }
  static void collect(std::vector<ValueId>& ins, Attributes&, ValueId v) { ins.push_back(v); }
  static void collect(std::vector<ValueId>&, Attributes& a, Attributes attrs) {
    a = std::move(attrs);
  }
  Graph graph_;
  void claim(const std::string& name);  // throws if a value already has the name
  std::map<std::string, int> name_counts_;
  std::unordered_set<std::string> names_;  // every value name in graph_
  std::string prefix_;
};

}  // namespace sgraph
