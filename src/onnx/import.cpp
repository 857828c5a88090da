// ONNX import: ModelProto -> Graph.
//
// Each ONNX node becomes one sgraph node, except where an older op version is lowered onto
// today's semantics (the adapters below). Nodes are type-checked as they are added, so an error
// names the node that caused it; the finished graph is verified as a whole.
//
// Subgraphs (If branches) read outer values by name in ONNX. Here every outer value a branch
// reads becomes one of its graph inputs and an input of the If node, in the same order, so the
// outer graph states every dependence explicitly.
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "onnx/import.h"
#include "onnx/tensor_proto.h"
#include "ops/infer.h"
#include "sgraph/onnx.h"

namespace sgraph {

bool onnx_import::knows_op(std::string_view domain, std::string_view type) {
  if (!domain.empty() && domain != "ai.onnx") return false;
  // Converted by the importer itself (below) rather than mapped onto one op of the same name.
  if (type == "Constant" || type == "Dropout" || type == "Upsample") return true;
  return op_from_name(type).has_value();
}

namespace {

using onnx_import::tensor_from_proto;

// Names visible while converting one graph; falls back to the enclosing graph's names.
struct Scope {
  Graph& g;
  Scope* parent = nullptr;
  std::unordered_map<std::string, ValueId> names;
  std::vector<std::string> captured;  // outer names this graph reads, in first-use order

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

class Importer {
 public:
  explicit Importer(int64_t opset) : opset_(opset) {}
  void convert_graph(const onnx::GraphProto& gp, Scope& s);

 private:
  void convert_node(const onnx::NodeProto& np, Scope& s, size_t index);
  Attributes convert_attrs(const onnx::NodeProto& np, Scope& s);
  std::shared_ptr<const Graph> convert_subgraph(const onnx::GraphProto& gp, Scope& outer);
  // Adds a node; empty output names get generated ones. Returns the output ids.
  std::vector<ValueId> emit(Scope& s, OpKind op, std::vector<ValueId> inputs, Attributes attrs,
                            const std::vector<std::string>& outputs, const std::string& name);
  ValueId constant(Scope& s, const std::string& name, Tensor t);
  void convert_if(const onnx::NodeProto& np, Scope& s, const std::string& name,
                  const std::vector<ValueId>& inputs, const std::vector<std::string>& outputs);

  int64_t opset_;
};

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

Tensor scalar_like(DType t, double v) {
  return visit_dtype(t, [&]<class T>() { return Tensor::scalar(static_cast<T>(v)); });
}

void Importer::convert_graph(const onnx::GraphProto& gp, Scope& s) {
  Graph& g = s.g;
  if (!gp.name().empty()) g.name = gp.name();
  for (const auto& init : gp.initializer()) {
    SG_CHECK(!init.name().empty()) << "an initializer has no name";
    constant(s, init.name(), tensor_from_proto(init));
  }
  for (const auto& in : gp.input()) {
    if (s.names.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
    auto [dtype, dims] = declared_type(in);
    const ValueId v = g.add_value(in.name(), dtype, std::move(dims));
    g.inputs.push_back(v);
    s.names[in.name()] = v;
  }
  for (int i = 0; i < gp.node_size(); ++i) convert_node(gp.node(i), s, static_cast<size_t>(i));
  for (const auto& out : gp.output()) {
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
  const ValueId v = s.g.add_constant(name, std::move(t));
  s.names[name] = v;
  return v;
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
        attrs.set(a.name(), static_cast<int64_t>(a.i()));
        break;
      case A::STRING:
        attrs.set(a.name(), a.s());
        break;
      case A::TENSOR:
        attrs.set(a.name(), tensor_from_proto(a.t()));
        break;
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
  Scope inner{*g, &outer, {}, {}};
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
    Scope inner{*g, &s, {}, {}};
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
  try {
    SG_CHECK(np.domain().empty() || np.domain() == "ai.onnx")
        << "unsupported op '" << type << "' from domain '" << np.domain() << "'";
    SG_CHECK(onnx_import::knows_op(np.domain(), type))
        << "unsupported op '" << type << "' (domain ai.onnx, opset " << opset_ << ")";
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
        emit(s, OpKind::ConstantOfShape, {shape}, {{"value", Tensor::scalar(true)}}, {outputs[1]},
             name + "/mask");
      }
      return;
    }
    if ((type == "Softmax" || type == "LogSoftmax") && opset_ < 13) {
      // Before opset 13 the input is coerced to 2-D at `axis` (default 1).
      const ValueId x = input0();
      const ValueId shape = emit(s, OpKind::Shape, {x}, {}, {name + "/shape"}, name + "/shape")[0];
      const ValueId flat = emit(s, OpKind::Flatten, {x}, {{"axis", attrs.get_int("axis", 1)}},
                                {name + "/flat"}, name + "/flat")[0];
      const OpKind op = type == "Softmax" ? OpKind::Softmax : OpKind::LogSoftmax;
      const ValueId y = emit(s, op, {flat}, {{"axis", int64_t{1}}}, {name + "/2d"}, name)[0];
      emit(s, OpKind::Reshape, {y, shape}, {}, outputs, name + "/reshape");
      return;
    }
    if (type == "Clip" && opset_ < 11) {  // Clip-6: bounds are attributes
      const DType t = s.g.values[input0()].dtype;
      const double inf = std::numeric_limits<double>::infinity();
      const ValueId lo = constant(s, name + "/min", scalar_like(t, attrs.get_float("min", -inf)));
      const ValueId hi = constant(s, name + "/max", scalar_like(t, attrs.get_float("max", inf)));
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
Graph import_model(const onnx::ModelProto& model) {
  SG_CHECK(model.has_graph()) << "the model has no graph";
  int64_t opset = -1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  SG_CHECK(opset >= 0) << "the model does not import the default ONNX opset";
  Graph g;
  Scope scope{g, nullptr, {}, {}};
  Importer(opset).convert_graph(model.graph(), scope);
  g.metadata["onnx.opset"] = std::to_string(opset);
  if (!model.producer_name().empty())
    g.metadata["onnx.producer"] = model.producer_name() + " " + model.producer_version();
  g.infer_and_verify();
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
