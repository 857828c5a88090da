// Model validation: a model the ONNX spec rejects is rejected before it is converted, with the
// rule it breaks; what the graph computes is checked against what the model declares after.
//
// Before conversion, sgraph's own rules: the IR version and opset imports in range, no domain
// imported twice, a Constant with exactly one value, no model-local function calling itself.
// The importer then checks names (a value defined twice, a graph input listed twice) and tensor
// encodings, and the op rules check attributes' values.
//
// After conversion, parts of ONNX's own checker (libonnx 1.12) where they are sound: each node
// of the main graph against its op schema (an attribute the op does not have, an attribute of
// the wrong type, input and output counts) and each initializer's encoding (data given in two
// fields). Not its whole-model check_model: it rejects valid models (nodes in domain "ai.onnx"
// spelt out, model-local functions in their own domains or importing other opset versions of
// the default domain, graph inputs and outputs with no declared shape), and its shape inference
// (the "full check") divides by attribute values such as strides before anything validates them.
// Its schemas end at opset 17: nodes of newer models get sgraph's checks only.
#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "onnx/import.h"
#include "sgraph/graph.h"

namespace sgraph::onnx_import {

namespace {

// The newest IR version and default-domain opset whose files sgraph reads. Older files are
// read through the importer's version adapters; newer ones may mean something else.
constexpr int64_t kNewestIrVersion = 11;
constexpr int64_t kNewestOpset = 23;

std::string domain_label(const std::string& d) { return d.empty() ? "ai.onnx (default)" : d; }

void check_opsets(const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& opsets,
                  const std::string& where) {
  std::map<std::string, int64_t> seen;
  for (const auto& o : opsets) {
    const std::string d = o.domain() == "ai.onnx" ? "" : o.domain();
    SG_CHECK(seen.emplace(d, o.version()).second)
        << where << " imports domain " << domain_label(d) << " twice (versions " << seen[d]
        << " and " << o.version() << ")";
    SG_CHECK(o.version() >= 1) << where << " imports domain " << domain_label(d) << " at version "
                               << o.version() << " (versions start at 1)";
    if (d.empty())
      SG_CHECK(o.version() <= kNewestOpset)
          << where << " imports ONNX opset " << o.version() << ", newer than the newest sgraph "
          << "knows (" << kNewestOpset << ")";
  }
}

// Constant nodes, in a graph and its subgraphs: exactly one value attribute.
void check_constants(const onnx::GraphProto& g) {
  static const std::set<std::string> kValueAttrs = {"value",         "value_float", "value_floats",
                                                    "value_int",     "value_ints",  "value_string",
                                                    "value_strings", "sparse_value"};
  for (const auto& n : g.node()) {
    if (n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx")) {
      int values = 0;
      for (const auto& a : n.attribute()) values += kValueAttrs.count(a.name()) ? 1 : 0;
      SG_CHECK(values == 1) << "node '" << n.name() << "' (Constant) has " << values
                            << " value attributes; a Constant has exactly one";
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) check_constants(a.g());
      for (const auto& sub : a.graphs()) check_constants(sub);
    }
  }
}

// Model-local functions: none calls itself, directly or through others.
void check_function_calls(const onnx::ModelProto& m) {
  using Key = std::pair<std::string, std::string>;
  auto key = [](const std::string& domain, const std::string& name) {
    return Key{domain == "ai.onnx" ? "" : domain, name};
  };
  auto label = [](const Key& k) { return k.first.empty() ? k.second : k.first + "." + k.second; };
  std::map<Key, const onnx::FunctionProto*> fs;
  for (const auto& f : m.functions()) fs.emplace(key(f.domain(), f.name()), &f);
  std::map<Key, int> state;  // 1: on the current path, 2: done
  std::vector<Key> path;
  std::function<void(const Key&)> visit = [&](const Key& k) {
    if (state[k] == 2) return;
    if (state[k] == 1) {
      std::string chain;
      for (const Key& p : path) chain += label(p) + " -> ";
      SG_FAIL() << "model-local function '" << label(k) << "' calls itself (" << chain << label(k)
                << "): recursive functions cannot be inlined";
    }
    SG_CHECK(path.size() < 256) << "model-local functions nest more than 256 calls deep";
    state[k] = 1;
    path.push_back(k);
    for (const auto& n : fs.at(k)->node())
      if (const auto it = fs.find(key(n.domain(), n.op_type())); it != fs.end()) visit(it->first);
    path.pop_back();
    state[k] = 2;
  };
  for (const auto& [k, f] : fs) visit(k);
}

// The newest default-domain opset libonnx's schemas cover (1.12: 17).
int64_t checker_newest_opset() {
  const auto& m = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto it = m.find("");
  return it == m.end() ? 0 : it->second.second;
}

}  // namespace

void validate_model(const onnx::ModelProto& model) {
  SG_CHECK(model.has_ir_version() && model.ir_version() >= 1)
      << "the model has no ir_version (every ONNX model states one, from 1)";
  SG_CHECK(model.ir_version() <= kNewestIrVersion)
      << "the model's ir_version " << model.ir_version() << " is newer than the newest sgraph "
      << "reads (" << kNewestIrVersion << ")";
  check_opsets(model.opset_import(), "the model");
  for (const auto& f : model.functions())
    check_opsets(f.opset_import(), "model-local function '" + f.name() + "'");
  check_function_calls(model);
  if (model.has_graph()) check_constants(model.graph());
  for (const auto& f : model.functions())
    for (const auto& n : f.node())
      if (n.op_type() == "Constant") {
        onnx::GraphProto body;
        *body.add_node() = n;
        check_constants(body);
      }
}

namespace {

// The model's default-domain opset.
int64_t default_opset(const onnx::ModelProto& model) {
  int64_t opset = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  return opset;
}

// The checker's context for the model, nullopt where the checker does not apply. The schemas end
// at the checker's own opset (libonnx 1.12: 17); a newer model's nodes would be checked against
// older schemas, which reject valid nodes (Split's num_outputs, the Reduce ops' axes input). Such
// a model gets sgraph's own checks only.
std::optional<onnx::checker::CheckerContext> checker_context(const onnx::ModelProto& model) {
  const int64_t opset = default_opset(model);
  if (opset > checker_newest_opset() || !model.has_graph()) return std::nullopt;
  onnx::checker::CheckerContext ctx;
  // IR versions newer than the checker's (1.12: 8) keep these rules.
  ctx.set_ir_version(static_cast<int>(std::min<int64_t>(model.ir_version(), onnx::IR_VERSION)));
  ctx.set_opset_imports({{"", static_cast<int>(opset)}});
  return ctx;
}

void check_tensor_with(const onnx::checker::CheckerContext& ctx, const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return;
  try {
    onnx::checker::check_tensor(t, ctx);
  } catch (const std::exception& e) {
    SG_FAIL() << "initializer '" << t.name() << "' breaks the ONNX spec: " << e.what();
  }
}

}  // namespace

void check_initializer(const onnx::ModelProto& model, const onnx::TensorProto& t) {
  if (const auto ctx = checker_context(model)) check_tensor_with(*ctx, t);
}

void check_with_onnx_checker(const onnx::ModelProto& model, bool initializers) {
  const auto context = checker_context(model);
  if (!context) return;
  const onnx::checker::CheckerContext& ctx = *context;
  const int64_t opset = default_opset(model);
  const onnx::checker::LexicalScopeContext scope;
  const onnx::GraphProto& g = model.graph();
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    // Default-domain nodes only (model-local functions are inlined and checked as their body's
    // ops are converted), and none holding subgraphs (the checker would want the outer scope).
    if (!(n.domain().empty() || n.domain() == "ai.onnx")) continue;
    bool subgraphs = false;
    for (const auto& a : n.attribute()) subgraphs |= a.has_g() || a.graphs_size() > 0;
    if (subgraphs) continue;
    try {
      if (n.domain().empty()) {
        onnx::checker::check_node(n, ctx, scope);
      } else {  // the checker's registry knows the default domain as "" only
        onnx::NodeProto copy = n;
        copy.clear_domain();
        onnx::checker::check_node(copy, ctx, scope);
      }
    } catch (const std::exception& e) {
      std::string what = e.what();
      what = what.substr(0, what.find("\n\n==> Context"));
      Error err("the node breaks its ONNX schema (opset " + std::to_string(opset) + "): " + what);
      err.at_node(n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name(), n.op_type());
      throw err;
    }
  }
  if (initializers)
    for (const auto& t : g.initializer()) check_tensor_with(ctx, t);
}

namespace {

// A declared type (a graph output's, a value_info's) against the value the graph computes: the
// element type, the rank, and every size both know.
void check_one(const onnx::ValueInfoProto& vi, const ValueInfo& v, const char* what) {
  const auto& tt = vi.type().tensor_type();
  // A half-precision (f16/bf16) value inside the graph is computed in f32 (sgraph/tensor.h).
  const bool half_in_f32 = (tt.elem_type() == onnx_dtype_code(DType::f16) ||
                            tt.elem_type() == onnx_dtype_code(DType::bf16)) &&
                           v.dtype == DType::f32;
  if (tt.elem_type() != 0 && !half_in_f32) {
    SG_CHECK(tt.elem_type() == onnx_dtype_code(v.dtype))
        << what << " '" << vi.name() << "' is declared with element type " << tt.elem_type()
        << " (ONNX data type code), but the graph computes it as " << dtype_name(v.dtype)
        << " (code " << onnx_dtype_code(v.dtype) << ")";
  }
  if (!tt.has_shape() || !v.shape) return;
  const DimList& got = *v.shape;
  SG_CHECK(static_cast<size_t>(tt.shape().dim_size()) == got.size())
      << what << " '" << vi.name() << "' is declared of rank " << tt.shape().dim_size()
      << ", but the graph computes rank " << got.size();
  for (int d = 0; d < tt.shape().dim_size(); ++d) {
    const auto& dd = tt.shape().dim(d);
    if (!dd.has_dim_value() || !got[d].is_static()) continue;
    SG_CHECK(dd.dim_value() == got[d].size)
        << what << " '" << vi.name() << "' is declared with size " << dd.dim_value()
        << " along dim " << d << ", but the graph computes " << got[d].size;
  }
}

}  // namespace

void check_declared_types(const onnx::GraphProto& gp, const Graph& g) {
  std::unordered_map<std::string, ValueId> by_name;
  for (size_t i = 0; i < g.values.size(); ++i)
    if (!g.values[i].name.empty()) by_name.emplace(g.values[i].name, static_cast<ValueId>(i));
  std::unordered_map<ValueId, const Node*> producer;
  for (const Node& n : g.nodes)
    for (ValueId o : n.outputs) producer.emplace(o, &n);
  auto check = [&](const onnx::ValueInfoProto& vi, const char* what) {
    const auto it = by_name.find(vi.name());
    if (it == by_name.end() || !vi.type().has_tensor_type()) return;
    try {
      check_one(vi, g.values[it->second], what);
    } catch (Error& e) {
      const auto p = producer.find(it->second);
      if (p != producer.end()) e.at_node(p->second->name, std::string(op_name(p->second->op)));
      throw;
    }
  };
  for (const auto& o : gp.output()) check(o, "graph output");
  for (const auto& vi : gp.value_info()) check(vi, "value");
}

}  // namespace sgraph::onnx_import
