// Builds ONNX protobuf messages in memory for importer tests:
//
//   onnx::ModelProto m = make_model(13, {make_node("Add", {"x", "w"}, {"y"})},
//                                   {value_info("x", kF32, {Dim("batch"), 3})}, {"y"},
//                                   {make_tensor("w", f32({3}, {1, 2, 3}))});
//   Graph g = load(m);   // sgraph::load_onnx_bytes(m.SerializeAsString(), "test.onnx")
//
// Element types use ONNX's own TensorProto enum, not sgraph's table, so the tests check that
// table too.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace sgraph::test {

inline constexpr int32_t kF32 = onnx::TensorProto::FLOAT;
inline constexpr int32_t kF64 = onnx::TensorProto::DOUBLE;
inline constexpr int32_t kI32 = onnx::TensorProto::INT32;
inline constexpr int32_t kI64 = onnx::TensorProto::INT64;
inline constexpr int32_t kBool = onnx::TensorProto::BOOL;
inline constexpr int32_t kU8 = onnx::TensorProto::UINT8;
inline constexpr int32_t kI8 = onnx::TensorProto::INT8;

// ONNX's element type code for an sgraph dtype, written out independently of sgraph's table.
inline int32_t onnx_code(DType t) {
  switch (t) {
    case DType::f32:
      return kF32;
    case DType::f64:
      return kF64;
    case DType::i32:
      return kI32;
    case DType::i64:
      return kI64;
    case DType::boolean:
      return kBool;
    case DType::u8:
      return kU8;
    case DType::i8:
      return kI8;
    case DType::f16:
      return 10;
    case DType::bf16:
      return 16;
    case DType::undefined:
      break;
  }
  FAIL("no ONNX code for an undefined dtype");
  return 0;
}

// ---- attributes ----------------------------------------------------------------------------

inline onnx::AttributeProto attr_named(const std::string& name,
                                       onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(type);
  return a;
}
inline onnx::AttributeProto int_attr(const std::string& name, int64_t v) {
  auto a = attr_named(name, onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}
inline onnx::AttributeProto float_attr(const std::string& name, float v) {
  auto a = attr_named(name, onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}
inline onnx::AttributeProto string_attr(const std::string& name, const std::string& v) {
  auto a = attr_named(name, onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}
inline onnx::AttributeProto ints_attr(const std::string& name, const std::vector<int64_t>& v) {
  auto a = attr_named(name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}
inline onnx::AttributeProto floats_attr(const std::string& name, const std::vector<float>& v) {
  auto a = attr_named(name, onnx::AttributeProto::FLOATS);
  for (float x : v) a.add_floats(x);
  return a;
}
inline onnx::AttributeProto tensor_attr(const std::string& name, const onnx::TensorProto& t) {
  auto a = attr_named(name, onnx::AttributeProto::TENSOR);
  *a.mutable_t() = t;
  return a;
}
inline onnx::AttributeProto graph_attr(const std::string& name, const onnx::GraphProto& g) {
  auto a = attr_named(name, onnx::AttributeProto::GRAPH);
  *a.mutable_g() = g;
  return a;
}

// ---- tensors, values, nodes, graphs, models -------------------------------------------------

// A TensorProto holding `t` as raw_data.
inline onnx::TensorProto make_tensor(const std::string& name, const Tensor& t) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(onnx_code(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  p.set_raw_data(t.raw_data(), t.nbytes());
  return p;
}

// A TensorProto with a type and dims and no data yet (tests fill in a typed data field).
inline onnx::TensorProto tensor_header(const std::string& name, int32_t elem_type,
                                       const Shape& dims) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(elem_type);
  for (int64_t d : dims) p.add_dims(d);
  return p;
}

// A tensor-typed ValueInfoProto: Dim(3) -> dim_value, Dim("batch") -> dim_param, Dim() -> neither.
inline onnx::ValueInfoProto value_info(const std::string& name, int32_t elem_type,
                                       const DimList& dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (const Dim& d : dims) {
    auto* pd = shape->add_dim();
    if (d.is_static())
      pd->set_dim_value(d.size);
    else if (!d.symbol.empty())
      pd->set_dim_param(d.symbol);
  }
  return v;
}

// A graph input for a tensor like `t`, with its static shape.
inline onnx::ValueInfoProto value_info(const std::string& name, const Tensor& t) {
  return value_info(name, onnx_code(t.dtype()), to_dims(t.shape()));
}

inline onnx::NodeProto make_node(const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs,
                                 const std::vector<onnx::AttributeProto>& attrs = {},
                                 const std::string& name = "", const std::string& domain = "") {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  n.set_domain(domain);
  for (const auto& i : inputs) n.add_input(i);
  for (const auto& o : outputs) n.add_output(o);
  for (const auto& a : attrs) *n.add_attribute() = a;
  return n;
}

// Outputs are listed by name only (the importer infers their types).
inline onnx::GraphProto make_graph(const std::string& name,
                                   const std::vector<onnx::NodeProto>& nodes,
                                   const std::vector<onnx::ValueInfoProto>& inputs,
                                   const std::vector<std::string>& outputs,
                                   const std::vector<onnx::TensorProto>& initializers = {}) {
  onnx::GraphProto g;
  g.set_name(name);
  for (const auto& n : nodes) *g.add_node() = n;
  for (const auto& i : inputs) *g.add_input() = i;
  for (const auto& o : outputs) g.add_output()->set_name(o);
  for (const auto& t : initializers) *g.add_initializer() = t;
  return g;
}

// A model importing the default domain at `opset`.
inline onnx::ModelProto make_model(int64_t opset, const std::vector<onnx::NodeProto>& nodes,
                                   const std::vector<onnx::ValueInfoProto>& inputs,
                                   const std::vector<std::string>& outputs,
                                   const std::vector<onnx::TensorProto>& initializers = {}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  *m.mutable_graph() = make_graph("test", nodes, inputs, outputs, initializers);
  return m;
}

inline Graph load(const onnx::ModelProto& m) {
  return load_onnx_bytes(m.SerializeAsString(), "test.onnx");
}

// The error importing `m` raises, or "" if it imports.
inline std::string import_error(const onnx::ModelProto& m) {
  return error_of([&] { load(m); });
}

// Imports `m` and runs it once.
inline std::vector<Tensor> run_model(const onnx::ModelProto& m, const std::vector<Tensor>& feeds) {
  Session s(load(m));
  return s.run(feeds);
}

// A model of one node whose inputs are `feeds` (named in1, in2, ... unless the node names
// them) plus `initializers`; returns the node's outputs on `feeds`.
inline std::vector<Tensor> run_node(int64_t opset, const onnx::NodeProto& node,
                                    const std::vector<Tensor>& feeds,
                                    const std::vector<onnx::TensorProto>& initializers = {}) {
  std::vector<onnx::ValueInfoProto> inputs;
  for (size_t i = 0; i < feeds.size(); ++i) inputs.push_back(value_info(node.input(i), feeds[i]));
  std::vector<std::string> outputs;
  for (const std::string& o : node.output())
    if (!o.empty()) outputs.push_back(o);
  return run_model(make_model(opset, {node}, inputs, outputs, initializers), feeds);
}

// A file path in the temp directory, removed when this object goes away. Names are random so
// tests running in parallel processes do not collide.
class TempPath {
 public:
  explicit TempPath(const std::string& suffix) {
    std::random_device rd;
    path_ = (std::filesystem::temp_directory_path() /
             ("sgraph_test_" + std::to_string(rd()) + "_" + std::to_string(rd()) + suffix))
                .string();
  }
  ~TempPath() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

}  // namespace sgraph::test
