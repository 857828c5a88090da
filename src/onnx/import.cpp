// ONNX import: ModelProto -> Graph.
//
// Each ONNX node becomes one sgraph node, except where an older op version is lowered onto
// today's semantics (the adapters below). Nodes are type-checked as they are added, so an error
// names the node that caused it; the finished graph is verified as a whole.
//
// Subgraphs (If branches) read outer values by name in ONNX. Here every outer value a branch
// reads becomes one of its graph inputs and an input of the If node, in the same order, so the
// outer graph states every dependence explicitly.
//
// Model-local functions (ModelProto.functions) are inlined: a node calling one (matched by domain
// and name) is replaced by the function's body, its formal inputs and outputs bound to the call's
// names. Body value and node names are kept where they collide with no name of the calling graph
// (the names its GraphProto uses, and those given so far), else prefixed "<call node name>/".
// The function's own opset_import decides its body's op versions; calls nested in a body are
// inlined too, and a function that calls itself, directly or not, is an error.
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "onnx/import.h"
#include "onnx/tensor_proto.h"
#include "ops/infer.h"
#include "ops/op.h"
#include "sgraph/onnx.h"

namespace sgraph {

bool onnx_import::knows_op(std::string_view domain, std::string_view type) {
  if (domain == "ai.onnx") domain = "";
  // Converted by the importer itself (below) rather than mapped onto one op of the same name.
  if (domain.empty() &&
      (type == "Constant" || type == "Dropout" || type == "Upsample" || type == "Scatter"))
    return true;
  const std::optional<OpKind> op = op_from_name(type);
  return op.has_value() && ops::op_def(*op).domain == domain;  // each op in its own domain only
}

namespace {

using onnx_import::scalar_from_double;
using onnx_import::tensor_from_proto;

// Frees a tensor's data (not its name, type or dims): swapped with empty fields, since clearing
// one keeps its memory.
void release_data(onnx::TensorProto& t) {
  std::string().swap(*t.mutable_raw_data());
  google::protobuf::RepeatedField<float>().Swap(t.mutable_float_data());
  google::protobuf::RepeatedField<double>().Swap(t.mutable_double_data());
  google::protobuf::RepeatedField<int32_t>().Swap(t.mutable_int32_data());
  google::protobuf::RepeatedField<int64_t>().Swap(t.mutable_int64_data());
  google::protobuf::RepeatedField<uint64_t>().Swap(t.mutable_uint64_data());
}

// Names visible while converting one graph; falls back to the enclosing graph's names.
struct Scope {
  Graph& g;
  Scope* parent = nullptr;
  std::unordered_map<std::string, ValueId> names;
  std::vector<std::string> captured;  // outer names this graph reads, in first-use order
  // The value names the GraphProto being converted uses, and the node names it uses (with the
  // names unnamed nodes get) plus those given so far: an inlined body's names avoid them all.
  std::unordered_set<std::string> reserved_values, node_names;

  // Half precision (sgraph/tensor.h): the names whose ONNX type is f16/bf16, which this graph
  // computes in f32 (`names` holds the f32 value), with that type and the value of it, if any
  // (a graph input, a Cast's output; kNoValue when only the f32 value exists).
  std::unordered_map<std::string, std::pair<DType, ValueId>> half;

  // Whether a value called `name` exists here or in an enclosing graph, or will be made here.
  bool taken(const std::string& name) const {
    return names.count(name) || reserved_values.count(name) ||
           (parent != nullptr && parent->taken(name));
  }

  // The value called `name`, capturing it from an enclosing graph if needed; kNoValue if none.
  ValueId lookup(const std::string& name) {
    if (auto it = names.find(name); it != names.end()) return it->second;
    if (parent == nullptr) return kNoValue;
    const ValueId outer = parent->lookup(name);
    if (outer == kNoValue) return kNoValue;
    return capture(name, parent->g.values[outer].dtype);
  }
  ValueId capture(const std::string& name, DType dtype) {
    const ValueId v = g.add_value(name, dtype);
    g.inputs.push_back(v);
    names[name] = v;
    captured.push_back(name);
    return v;
  }
};

using FunctionKey = std::pair<std::string, std::string>;  // (domain, name); "" for ai.onnx

std::string function_domain(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

class Importer {
 public:
  // release_data_of: model's main graph, when the caller lets the import free its data (or null).
  Importer(int64_t opset, const onnx::ModelProto& model, onnx::GraphProto* release_data_of);
  void convert_graph(const onnx::GraphProto& gp, Scope& s);

 private:
  void convert_node(const onnx::NodeProto& np, Scope& s, size_t index);
  void inline_call(const onnx::NodeProto& call, const onnx::FunctionProto& f, Scope& s,
                   const std::string& call_name);
  // Renames a subgraph of an inlined body node: names it reads from the body through `rename`,
  // and the names it defines where they collide with the calling graph's.
  void rename_subgraph(onnx::GraphProto& g, std::unordered_map<std::string, std::string> rename,
                       const Scope& s, const std::string& prefix, const std::string& fname);
  Attributes convert_attrs(const onnx::NodeProto& np, Scope& s);
  std::shared_ptr<const Graph> convert_subgraph(const onnx::GraphProto& gp, Scope& outer);
  // Adds a node; empty output names get generated ones. Returns the output ids.
  std::vector<ValueId> emit(Scope& s, OpKind op, std::vector<ValueId> inputs, Attributes attrs,
                            const std::vector<std::string>& outputs, const std::string& name);
  ValueId constant(Scope& s, const std::string& name, Tensor t);
  // Half precision: `name`'s f16/bf16 value `v` gets an f32 twin, which `name` then stands for.
  void widen_half(Scope& s, const std::string& name, ValueId v);
  // After node `np`: its f16/bf16 outputs are widened, and its f32 outputs computed from a
  // half-precision input are marked half (CastLike to a half `like` also rounds to it).
  void track_half(const onnx::NodeProto& np, Scope& s);
  // A graph output of half precision (declared so, or marked) is cast back to it.
  void narrow_half(Scope& s, const onnx::ValueInfoProto& out);
  void convert_if(const onnx::NodeProto& np, Scope& s, const std::string& name,
                  const std::vector<ValueId>& inputs, const std::vector<std::string>& outputs);

  int64_t opset_;  // of the default domain; -1 when the model does not import it
  // The model's other imported domains and their versions (ai.onnx.preview.training: 1).
  std::map<std::string, int64_t> domains_;
  DType made_half_ = DType::undefined;  // the node converted last makes f16/bf16 data in f32
  std::map<FunctionKey, const onnx::FunctionProto*> functions_;
  std::vector<const onnx::FunctionProto*>
      inlining_;  // the functions being inlined, outermost first
  const onnx::ModelProto* model_;
  // The model's own graph, when the caller owns the model: each of its initializers' data is
  // freed as soon as it is a constant of the graph, so the import holds the weights once, not
  // twice (the parsed model's copy beside the graph's) at its peak.
  onnx::GraphProto* release_data_of_;
};

Importer::Importer(int64_t opset, const onnx::ModelProto& model, onnx::GraphProto* release_data_of)
    : opset_(opset), model_(&model), release_data_of_(release_data_of) {
  for (const auto& o : model.opset_import())
    if (!o.domain().empty() && o.domain() != "ai.onnx") domains_[o.domain()] = o.version();
  for (const onnx::FunctionProto& f : model.functions()) {
    const FunctionKey key{function_domain(f.domain()), f.name()};
    SG_CHECK(functions_.emplace(key, &f).second)
        << "model-local function '" << f.name() << "' (domain '" << f.domain()
        << "') is defined twice";
  }
}

// `body` if no value of the calling scope has that name, else "<prefix><body>" (made unique).
std::string inlined_name(const Scope& s, const std::string& body, const std::string& prefix,
                         const std::unordered_set<std::string>& also_taken = {}) {
  auto taken = [&](const std::string& n) { return s.taken(n) || also_taken.count(n); };
  if (!taken(body)) return body;
  std::string n = prefix + body;
  for (int k = 1; taken(n); ++k) n = prefix + body + "_" + std::to_string(k);
  return n;
}

std::string function_label(const onnx::FunctionProto& f) {
  return f.domain().empty() ? f.name() : f.domain() + "." + f.name();
}

void check_no_attribute_refs(const onnx::NodeProto& n, const std::string& fname) {
  for (const auto& a : n.attribute())
    SG_CHECK(a.ref_attr_name().empty())
        << "model-local function '" << fname << "': attribute '" << a.name() << "' of node '"
        << n.name() << "' refers to the function's attribute '" << a.ref_attr_name()
        << "' (attributes of model-local functions are not supported)";
}

void Importer::rename_subgraph(onnx::GraphProto& g,
                               std::unordered_map<std::string, std::string> rename, const Scope& s,
                               const std::string& prefix, const std::string& fname) {
  std::unordered_set<std::string> chosen;
  auto define = [&](std::string& name) {
    if (name.empty()) return;
    std::string n = inlined_name(s, name, prefix, chosen);
    chosen.insert(n);
    rename[name] = n;
    name = std::move(n);
  };
  auto read = [&](std::string& name) {
    if (name.empty()) return;
    const auto it = rename.find(name);
    SG_CHECK(it != rename.end()) << "model-local function '" << fname << "': a subgraph reads '"
                                 << name << "', which its body does not define";
    name = it->second;
  };
  for (auto& t : *g.mutable_initializer()) define(*t.mutable_name());
  for (auto& in : *g.mutable_input()) define(*in.mutable_name());
  for (auto& n : *g.mutable_node())
    for (auto& o : *n.mutable_output()) define(o);
  for (auto& n : *g.mutable_node()) {
    check_no_attribute_refs(n, fname);
    for (auto& in : *n.mutable_input()) read(in);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) rename_subgraph(*a.mutable_g(), rename, s, prefix, fname);
      for (auto& sub : *a.mutable_graphs()) rename_subgraph(sub, rename, s, prefix, fname);
    }
  }
  for (auto& o : *g.mutable_output()) read(*o.mutable_name());
}

void Importer::inline_call(const onnx::NodeProto& call, const onnx::FunctionProto& f, Scope& s,
                           const std::string& call_name) {
  const std::string fname = function_label(f);
  if (std::find(inlining_.begin(), inlining_.end(), &f) != inlining_.end()) {
    std::string chain;
    for (const onnx::FunctionProto* g : inlining_) chain += function_label(*g) + " -> ";
    SG_FAIL() << "model-local function '" << fname << "' calls itself (" << chain << fname
              << "): recursive functions cannot be inlined";
  }
  SG_CHECK(inlining_.size() < 256) << "model-local functions nest more than 256 calls deep";
  SG_CHECK(call.input_size() <= f.input_size())
      << "calls model-local function '" << fname << "' with " << call.input_size()
      << " inputs, but it takes " << f.input_size();
  SG_CHECK(call.output_size() <= f.output_size())
      << "calls model-local function '" << fname << "' with " << call.output_size()
      << " outputs, but it has " << f.output_size();

  // Body names -> names in the calling scope ("" for an input the call leaves out).
  std::unordered_map<std::string, std::string> rename;
  for (int i = 0; i < f.input_size(); ++i)
    rename[f.input(i)] = i < call.input_size() ? call.input(i) : "";
  std::unordered_map<std::string, std::string> actual_output;
  for (int i = 0; i < call.output_size(); ++i)
    if (!call.output(i).empty()) actual_output[f.output(i)] = call.output(i);
  const std::string prefix = call_name + "/";

  const int64_t caller_opset = opset_;
  for (const auto& o : f.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
  inlining_.push_back(&f);
  struct Restore {  // the caller's opset and call stack, however this returns
    Importer& im;
    int64_t opset;
    ~Restore() {
      im.opset_ = opset;
      im.inlining_.pop_back();
    }
  } restore{*this, caller_opset};

  for (int i = 0; i < f.node_size(); ++i) {
    onnx::NodeProto n = f.node(i);
    const std::string body_name =
        n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
    check_no_attribute_refs(n, fname);
    for (std::string& in : *n.mutable_input()) {
      if (in.empty()) continue;
      const auto it = rename.find(in);
      SG_CHECK(it != rename.end())
          << "model-local function '" << fname << "': node '" << body_name << "' reads '" << in
          << "', which is neither an input of the function nor an output of an earlier node";
      in = it->second;
    }
    for (std::string& out : *n.mutable_output()) {
      if (out.empty()) continue;
      SG_CHECK(!rename.count(out))
          << "model-local function '" << fname << "': value '" << out << "' is defined twice";
      const auto it = actual_output.find(out);
      const std::string name =
          it != actual_output.end() ? it->second : inlined_name(s, out, prefix);
      rename[out] = name;
      out = name;
    }
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) rename_subgraph(*a.mutable_g(), rename, s, prefix, fname);
      for (auto& sub : *a.mutable_graphs()) rename_subgraph(sub, rename, s, prefix, fname);
    }
    std::string node_name = body_name;
    for (int k = 1; s.node_names.count(node_name); ++k)
      node_name = prefix + body_name + (k > 1 ? "_" + std::to_string(k - 1) : "");
    n.set_name(node_name);
    convert_node(n, s, static_cast<size_t>(i));
  }
  // A formal output no body node wrote under the call's name (an input passed through, or one
  // value returned twice) is copied.
  for (int i = 0; i < call.output_size(); ++i) {
    if (call.output(i).empty()) continue;
    const auto it = rename.find(f.output(i));
    SG_CHECK(it != rename.end() && !it->second.empty())
        << "model-local function '" << fname << "': output '" << f.output(i)
        << "' is never produced";
    if (it->second == call.output(i)) continue;
    const ValueId v = s.lookup(it->second);
    SG_ASSERT(v != kNoValue) << "inlined value '" << it->second << "' is missing";
    std::string node_name = prefix + "output_" + std::to_string(i);
    for (int k = 1; s.node_names.count(node_name); ++k)
      node_name = prefix + "output_" + std::to_string(i) + "_" + std::to_string(k);
    s.node_names.insert(node_name);
    emit(s, OpKind::Identity, {v}, {}, {call.output(i)}, node_name);
  }
}

DimList dims_of(const onnx::TensorShapeProto& shape) {
  DimList dims;
  for (const auto& d : shape.dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0)
      dims.emplace_back(d.dim_value());
    else if (d.has_dim_param() && !d.dim_param().empty())
      dims.emplace_back(d.dim_param());
    else
      dims.emplace_back();
  }
  return dims;
}

// The declared element type and shape of a graph input or output.
std::pair<DType, std::optional<DimList>> declared_type(const onnx::ValueInfoProto& v) {
  SG_CHECK(v.type().has_tensor_type())
      << "value '" << v.name() << "' is not a tensor (sequence, map and optional types are not "
      << "supported)";
  const auto& tt = v.type().tensor_type();
  DType t;
  try {
    t = dtype_from_onnx_code(tt.elem_type());
  } catch (const Error& e) {
    throw Error("value '" + v.name() + "': " + e.message());
  }
  std::optional<DimList> dims;
  if (tt.has_shape()) dims = dims_of(tt.shape());
  return {t, dims};
}

void Importer::convert_graph(const onnx::GraphProto& gp, Scope& s) {
  Graph& g = s.g;
  if (!gp.name().empty()) g.name = gp.name();
  for (const auto& init : gp.initializer()) s.reserved_values.insert(init.name());
  for (const auto& v : gp.input()) s.reserved_values.insert(v.name());
  for (const auto& v : gp.output()) s.reserved_values.insert(v.name());
  for (int i = 0; i < gp.node_size(); ++i) {
    const onnx::NodeProto& n = gp.node(i);
    s.reserved_values.insert(n.input().begin(), n.input().end());
    s.reserved_values.insert(n.output().begin(), n.output().end());
    s.node_names.insert(n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name());
  }
  for (int i = 0; i < gp.initializer_size(); ++i) {
    const onnx::TensorProto& init = gp.initializer(i);
    SG_CHECK(!init.name().empty()) << "an initializer has no name";
    constant(s, init.name(), tensor_from_proto(init));
    if (&gp == release_data_of_) {  // (checked now: check_with_onnx_checker sees no data)
      onnx_import::check_initializer(*model_, init);
      release_data(*release_data_of_->mutable_initializer(i));
    }
  }
  std::unordered_set<std::string> listed;
  for (const auto& in : gp.input()) {
    SG_CHECK(listed.insert(in.name()).second)
        << "graph input '" << in.name() << "' is listed twice";
    if (s.names.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
    auto [dtype, dims] = declared_type(in);
    const ValueId v = g.add_value(in.name(), dtype, std::move(dims));
    g.inputs.push_back(v);
    s.names[in.name()] = v;
    if (is_storage(dtype)) widen_half(s, in.name(), v);
  }
  for (int i = 0; i < gp.node_size(); ++i) {
    convert_node(gp.node(i), s, static_cast<size_t>(i));
    track_half(gp.node(i), s);
  }
  for (const auto& out : gp.output()) {
    if (s.parent == nullptr) narrow_half(s, out);
    const ValueId v = s.lookup(out.name());
    SG_CHECK(v != kNoValue) << "graph output '" << out.name() << "' is never produced";
    ValueInfo& info = g.values[v];
    if (!info.shape && out.type().has_tensor_type() && out.type().tensor_type().has_shape())
      info.shape = dims_of(out.type().tensor_type().shape());
    g.outputs.push_back(v);
  }
}

ValueId Importer::constant(Scope& s, const std::string& name, Tensor t) {
  SG_CHECK(!s.names.count(name)) << "value '" << name << "' is defined twice";
  if (is_storage(t.dtype())) {  // computed in f32
    s.half[name] = {t.dtype(), kNoValue};
    t = storage_cast(t, DType::f32);
  }
  const ValueId v = s.g.add_constant(name, std::move(t));
  s.names[name] = v;
  return v;
}

void Importer::widen_half(Scope& s, const std::string& name, ValueId v) {
  const DType t = s.g.values[v].dtype;
  const std::string wide = inlined_name(s, name + ":f32", "");
  const ValueId w = emit(s, OpKind::Cast, {v}, {{"to", onnx_dtype_code(DType::f32)}}, {wide},
                         inlined_name(s, name + ":to_f32", ""))[0];
  s.names[name] = w;
  s.half[name] = {t, v};
}

void Importer::track_half(const onnx::NodeProto& np, Scope& s) {
  DType half_in = std::exchange(made_half_, DType::undefined);
  for (const std::string& in : np.input())
    if (auto it = s.half.find(in); half_in == DType::undefined && it != s.half.end()) {
      half_in = it->second.first;
      break;
    }
  const bool cast_like = np.op_type() == "CastLike" && np.input_size() == 2;
  for (const std::string& out : np.output()) {
    auto it = s.names.find(out);
    if (out.empty() || it == s.names.end()) continue;
    const ValueId v = it->second;
    const DType t = s.g.values[v].dtype;
    if (is_storage(t)) {
      widen_half(s, out, v);
    } else if (cast_like && t == DType::f32 && s.half.count(np.input(1))) {
      // The node cast to f32 (like's f32 twin): round to like's type, then widen again.
      const DType h = s.half.at(np.input(1)).first;
      s.names.erase(out);
      s.g.values[v].name = inlined_name(s, out + ":f32", "");
      s.reserved_values.insert(s.g.values[v].name);
      const ValueId r = emit(s, OpKind::Cast, {v}, {{"to", onnx_dtype_code(h)}}, {out},
                             inlined_name(s, out + ":round", ""))[0];
      widen_half(s, out, r);
    } else if (half_in != DType::undefined && t == DType::f32 && np.op_type() != "Cast" &&
               !cast_like) {
      s.half[out] = {half_in, kNoValue};
    }
  }
}

void Importer::narrow_half(Scope& s, const onnx::ValueInfoProto& out) {
  const std::string& name = out.name();
  DType h = DType::undefined;
  if (auto it = s.half.find(name); it != s.half.end()) {
    if (it->second.second != kNoValue) {  // its half value exists: that is the output
      s.names[name] = it->second.second;
      return;
    }
    h = it->second.first;
  }
  const int32_t declared = out.type().has_tensor_type() ? out.type().tensor_type().elem_type() : 0;
  if (declared == onnx_dtype_code(DType::f16)) h = DType::f16;
  if (declared == onnx_dtype_code(DType::bf16)) h = DType::bf16;
  auto it = s.names.find(name);
  if (h == DType::undefined || it == s.names.end()) return;
  const ValueId v = it->second;
  if (s.g.values[v].dtype != DType::f32) return;  // (the declared type check reports it)
  s.names.erase(it);
  s.g.values[v].name = inlined_name(s, name + ":f32", "");
  s.reserved_values.insert(s.g.values[v].name);
  emit(s, OpKind::Cast, {v}, {{"to", onnx_dtype_code(h)}}, {name},
       inlined_name(s, name + ":to_" + std::string(dtype_name(h)), ""));
}

std::vector<ValueId> Importer::emit(Scope& s, OpKind op, std::vector<ValueId> inputs,
                                    Attributes attrs, const std::vector<std::string>& outputs,
                                    const std::string& name) {
  Node n{op, name, std::move(inputs), {}, std::move(attrs)};
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::string vname = outputs[k].empty() ? name + ":unused" + std::to_string(k) : outputs[k];
    SG_CHECK(!s.names.count(vname)) << "value '" << vname << "' is defined twice";
    n.outputs.push_back(s.g.add_value(vname));
    s.names[vname] = n.outputs.back();
  }
  std::vector<ValueId> outs = n.outputs;
  const int32_t index = s.g.add_node(std::move(n));
  try {
    check_arity(s.g.nodes[index]);
  } catch (Error& e) {
    e.at_node(name, std::string(op_name(op)));
    throw;
  }
  infer_node(s.g, index);  // errors name the node
  return outs;
}

Attributes Importer::convert_attrs(const onnx::NodeProto& np, Scope& s) {
  Attributes attrs;
  for (const auto& a : np.attribute()) {
    using A = onnx::AttributeProto;
    switch (a.type()) {
      case A::FLOAT:
        attrs.set(a.name(), static_cast<double>(a.f()));
        break;
      case A::INT:
        if ((a.name() == "dtype" || a.name() == "output_datatype") &&
            (a.i() == onnx_dtype_code(DType::f16) || a.i() == onnx_dtype_code(DType::bf16))) {
          made_half_ = dtype_from_onnx_code(a.i());  // made in f32 (track_half marks it)
          attrs.set(a.name(), onnx_dtype_code(DType::f32));
          break;
        }
        attrs.set(a.name(), static_cast<int64_t>(a.i()));
        break;
      case A::STRING:
        attrs.set(a.name(), a.s());
        break;
      case A::TENSOR: {
        Tensor t = tensor_from_proto(a.t());
        if (is_storage(t.dtype())) {  // e.g. ConstantOfShape's value: made in f32
          made_half_ = t.dtype();
          t = storage_cast(t, DType::f32);
        }
        attrs.set(a.name(), std::move(t));
        break;
      }
      case A::GRAPH:
        attrs.set(a.name(), convert_subgraph(a.g(), s));
        break;
      case A::FLOATS:
        attrs.set(a.name(), Floats(a.floats().begin(), a.floats().end()));
        break;
      case A::INTS:
        attrs.set(a.name(), Ints(a.ints().begin(), a.ints().end()));
        break;
      case A::STRINGS:
        attrs.set(a.name(), Strings(a.strings().begin(), a.strings().end()));
        break;
      default:
        SG_FAIL() << "attribute '" << a.name() << "' has a type sgraph does not support ("
                  << A::AttributeType_Name(a.type()) << ")";
    }
  }
  return attrs;
}

std::shared_ptr<const Graph> Importer::convert_subgraph(const onnx::GraphProto& gp, Scope& outer) {
  auto g = std::make_shared<Graph>();
  Scope inner{*g, &outer, {}, {}, {}, {}, {}};
  convert_graph(gp, inner);
  return g;  // inputs are completed and the graph verified by the node that owns it
}

// If: the node's inputs become [cond, every outer value either branch reads], and each branch's
// inputs that same list (a branch may ignore some).
void Importer::convert_if(const onnx::NodeProto& np, Scope& s, const std::string& name,
                          const std::vector<ValueId>& inputs,
                          const std::vector<std::string>& outputs) {
  std::vector<std::shared_ptr<Graph>> branches;
  std::vector<std::string> reads;
  for (const char* key : {"then_branch", "else_branch"}) {
    const onnx::AttributeProto* attr = nullptr;
    for (const auto& a : np.attribute())
      if (a.name() == key && a.type() == onnx::AttributeProto::GRAPH) attr = &a;
    SG_CHECK(attr != nullptr) << "missing required graph attribute '" << key << "'";
    auto g = std::make_shared<Graph>();
    Scope inner{*g, &s, {}, {}, {}, {}, {}};
    convert_graph(attr->g(), inner);
    for (const std::string& r : inner.captured)
      if (std::find(reads.begin(), reads.end(), r) == reads.end()) reads.push_back(r);
    branches.push_back(g);
  }
  std::vector<ValueId> node_inputs = inputs;
  for (const std::string& r : reads) node_inputs.push_back(s.lookup(r));
  Attributes attrs;
  const char* keys[] = {"then_branch", "else_branch"};
  for (size_t b = 0; b < 2; ++b) {
    Graph& g = *branches[b];
    std::vector<ValueId> ins;
    for (const std::string& r : reads) {
      ValueId v = g.find_value(r);
      if (v == kNoValue || std::find(g.inputs.begin(), g.inputs.end(), v) == g.inputs.end())
        v = g.add_value(r, s.g.values[s.lookup(r)].dtype);  // read only by the other branch
      ins.push_back(v);
    }
    g.inputs = ins;
    try {
      g.infer_and_verify();
    } catch (const Error& e) {
      throw Error(std::string("subgraph '") + keys[b] + "': " + e.what());
    }
    attrs.set(keys[b], std::shared_ptr<const Graph>(branches[b]));
  }
  emit(s, OpKind::If, node_inputs, std::move(attrs), outputs, name);
}

void Importer::convert_node(const onnx::NodeProto& np, Scope& s, size_t index) {
  const std::string& type = np.op_type();
  const std::string name = np.name().empty() ? type + "_" + std::to_string(index) : np.name();
  s.node_names.insert(name);
  try {
    if (const auto f = functions_.find({function_domain(np.domain()), type}); f != functions_.end())
      return inline_call(np, *f->second, s, name);
    const std::string domain = function_domain(np.domain());  // "" for ai.onnx
    if (domain.empty()) {
      SG_CHECK(opset_ >= 1) << "the model does not import the default ONNX opset";
      SG_CHECK(onnx_import::knows_op(domain, type))
          << "unsupported op '" << type << "' (domain ai.onnx, opset " << opset_ << ")";
    } else {  // (only ai.onnx.preview.training, at version 1, has ops sgraph knows)
      SG_CHECK(onnx_import::knows_op(domain, type))
          << "unsupported op '" << type << "' from domain '" << domain << "'";
      const auto v = domains_.find(domain);
      SG_CHECK(v != domains_.end()) << "the model does not import domain '" << domain << "'";
      SG_CHECK(v->second == 1) << "the model imports domain '" << domain << "' at version "
                               << v->second << "; sgraph knows its version 1 only";
    }
    std::vector<ValueId> inputs;
    for (const std::string& in : np.input()) {
      if (in.empty()) {
        inputs.push_back(kNoValue);
        continue;
      }
      const ValueId v = s.lookup(in);
      SG_CHECK(v != kNoValue) << "input '" << in << "' is not defined before this node";
      inputs.push_back(v);
    }
    while (!inputs.empty() && inputs.back() == kNoValue) inputs.pop_back();
    std::vector<std::string> outputs(np.output().begin(), np.output().end());
    while (!outputs.empty() && outputs.back().empty()) outputs.pop_back();

    if (type == "If") return convert_if(np, s, name, inputs, outputs);
    Attributes attrs = convert_attrs(np, s);
    auto emit1 = [&](OpKind op, std::vector<ValueId> ins, Attributes a) {
      return emit(s, op, std::move(ins), std::move(a), outputs, name);
    };
    // The adapters below read input 0 and write one output before any op checks the node.
    auto input0 = [&] {
      SG_CHECK(!inputs.empty() && inputs[0] != kNoValue && outputs.size() == 1)
          << type << " needs input 0 and one output, got " << np.input_size() << " inputs and "
          << outputs.size() << " outputs";
      return inputs[0];
    };

    if (type == "Constant") {
      SG_CHECK(outputs.size() == 1) << "Constant must have one output";
      Tensor t;
      if (attrs.has("value"))
        t = attrs.get_tensor("value");
      else if (attrs.has("value_float"))
        t = Tensor::scalar(static_cast<float>(attrs.get_float("value_float")));
      else if (attrs.has("value_int"))
        t = Tensor::scalar(attrs.get_int("value_int"));
      else if (attrs.has("value_floats")) {
        std::vector<float> v;
        for (double x : attrs.get_floats("value_floats")) v.push_back(static_cast<float>(x));
        t = Tensor::from<float>({static_cast<int64_t>(v.size())}, v);
      } else if (attrs.has("value_ints")) {
        const Ints& v = attrs.get_ints("value_ints");
        t = Tensor::from<int64_t>({static_cast<int64_t>(v.size())}, v);
      } else {
        SG_FAIL() << "Constant without a supported value attribute (value, value_float(s), "
                     "value_int(s))";
      }
      constant(s, outputs[0], std::move(t));
      return;
    }
    if (type == "Dropout") {  // inference: the identity, and a mask that keeps every element
      SG_CHECK(!inputs.empty() && inputs[0] != kNoValue && !outputs.empty() && outputs.size() <= 2)
          << "Dropout needs input 0 and one or two outputs, got " << np.input_size()
          << " inputs and " << outputs.size() << " outputs";
      if (inputs.size() > 2 && inputs[2] != kNoValue) {
        const Tensor& mode = s.g.values[inputs[2]].initializer;
        SG_CHECK(mode.defined() && mode.numel() == 1 && mode.at_double(0) == 0)
            << "Dropout in training mode is not supported (only the inference form)";
      }
      emit(s, OpKind::Identity, {inputs[0]}, {}, {outputs[0]}, name);
      if (outputs.size() == 2) {
        const ValueId shape =
            emit(s, OpKind::Shape, {inputs[0]}, {}, {name + "/shape"}, name + "/shape")[0];
        emit(s, OpKind::ConstantOfShape, {shape}, {{"value", Tensor::from<bool>({1}, {true})}},
             {outputs[1]}, name + "/mask");
      }
      return;
    }
    if ((type == "Softmax" || type == "LogSoftmax" || type == "Hardmax") && opset_ < 13) {
      // Before opset 13 the input is coerced to 2-D at `axis` (default 1).
      const ValueId x = input0();
      const ValueId shape = emit(s, OpKind::Shape, {x}, {}, {name + "/shape"}, name + "/shape")[0];
      const ValueId flat = emit(s, OpKind::Flatten, {x}, {{"axis", attrs.get_int("axis", 1)}},
                                {name + "/flat"}, name + "/flat")[0];
      const OpKind op = type == "Softmax"      ? OpKind::Softmax
                        : type == "LogSoftmax" ? OpKind::LogSoftmax
                                               : OpKind::Hardmax;
      const ValueId y = emit(s, op, {flat}, {{"axis", int64_t{1}}}, {name + "/2d"}, name)[0];
      emit(s, OpKind::Reshape, {y, shape}, {}, outputs, name + "/reshape");
      return;
    }
    if (type == "Clip" && opset_ < 11) {  // Clip-6: bounds are attributes
      const DType t = s.g.values[input0()].dtype;
      const double inf = std::numeric_limits<double>::infinity();
      const ValueId lo =
          constant(s, name + "/min", scalar_from_double(t, attrs.get_float("min", -inf)));
      const ValueId hi =
          constant(s, name + "/max", scalar_from_double(t, attrs.get_float("max", inf)));
      emit1(OpKind::Clip, {input0(), lo, hi}, {});
      return;
    }
    if (type == "Upsample" || (type == "Resize" && opset_ < 11)) {
      // Upsample-7 (scales attribute), Upsample-9 and Resize-10 (scales input): today's Resize
      // with asymmetric coordinates and floor rounding.
      ValueId scales = inputs.size() > 1 ? inputs[1] : kNoValue;
      if (scales == kNoValue) {
        std::vector<float> v;
        for (double x : attrs.get_floats("scales")) v.push_back(static_cast<float>(x));
        scales = constant(s, name + "/scales", Tensor::from<float>({int64_t(v.size())}, v));
      }
      emit1(OpKind::Resize, {input0(), kNoValue, scales},
            {{"mode", attrs.get_string("mode", "nearest")},
             {"coordinate_transformation_mode", std::string("asymmetric")},
             {"nearest_mode", std::string("floor")}});
      return;
    }
    if (type == "Scatter") {  // Scatter-9/11, deprecated: ScatterElements without reduction
      emit1(OpKind::ScatterElements, std::move(inputs), std::move(attrs));
      return;
    }
    // Before opset 7, binary ops broadcast only with broadcast=1, along `axis` if given.
    SG_CHECK(opset_ >= 7 || !attrs.has("axis") || !attrs.has("broadcast"))
        << "legacy broadcasting along an axis (opset " << opset_ << ") is not supported";
    emit1(*op_from_name(type), std::move(inputs), std::move(attrs));
  } catch (Error& e) {
    e.at_node(name, type);
    throw;
  }
}

}  // namespace

namespace {

// The graph of a parsed model; the model's tensors are copied once, into the graph's constants.
Graph import_model(onnx::ModelProto& model) {
  SG_CHECK(model.has_graph()) << "the model has no graph";
  onnx_import::validate_model(model);
  int64_t opset = -1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  // (A model of other domains' ops only, e.g. the training optimizers', need not import it: its
  // default-domain nodes are rejected as they are converted.)
  Graph g;
  Scope scope{g, nullptr, {}, {}, {}, {}, {}};
  Importer(opset, model, model.mutable_graph()).convert_graph(model.graph(), scope);
  for (const auto& p : model.metadata_props()) g.metadata[p.key()] = p.value();
  if (opset >= 0) g.metadata["onnx.opset"] = std::to_string(opset);
  if (!model.producer_name().empty())
    g.metadata["onnx.producer"] = model.producer_name() + " " + model.producer_version();
  g.infer_and_verify();
  onnx_import::check_with_onnx_checker(model, /*initializers=*/false);
  onnx_import::check_declared_types(model.graph(), g);
  return g;
}

const char* const kNotAModel =
    "not a valid ONNX model (the protobuf does not parse: truncated or corrupt?)";

}  // namespace

Graph load_onnx_bytes(std::string_view bytes, const std::string& origin) {
  try {
    onnx::ModelProto model;
    SG_CHECK(bytes.size() < (size_t{1} << 31)) << "models of 2 GiB or more are not supported";
    SG_CHECK(model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) << kNotAModel;
    return import_model(model);
  } catch (Error& e) {
    throw e.in_file(origin);
  }
}

// Parsed straight from the file: no copy of the file's bytes is held beside the parsed model.
Graph load_onnx(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SG_CHECK(in) << path << ": cannot open file";
  try {
    in.seekg(0, std::ios::end);
    const auto size = static_cast<uint64_t>(in.tellg());
    in.seekg(0);
    SG_CHECK(size < (uint64_t{1} << 31)) << "models of 2 GiB or more are not supported";
    onnx::ModelProto model;
    SG_CHECK(model.ParseFromIstream(&in)) << kNotAModel;
    return import_model(model);
  } catch (Error& e) {
    throw e.in_file(path);
  }
}

}  // namespace sgraph
