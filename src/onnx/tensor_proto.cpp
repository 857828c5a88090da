// onnx.TensorProto <-> Tensor, and .pb tensor files.
#include "onnx/tensor_proto.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "sgraph/onnx.h"

namespace sgraph::onnx_import {

namespace {
template <class Field>
void fill_from(Tensor& out, const Field& field, const std::string& what, const char* field_name) {
  SG_CHECK(static_cast<int64_t>(field.size()) == out.numel())
      << what << " has " << field.size() << " values in " << field_name << " but its dims "
      << shape_str(out.shape()) << " need " << out.numel();
  visit_dtype(out.dtype(), [&]<class T>() {
    T* d = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) d[i] = static_cast<T>(field[static_cast<int>(i)]);
  });
}
}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p) {
  const std::string what = "tensor '" + p.name() + "'";
  SG_CHECK(p.data_location() != onnx::TensorProto::EXTERNAL)
      << what << " keeps its data in an external file, which is not supported";
  DType t;
  try {
    t = dtype_from_onnx_code(p.data_type());
  } catch (const Error& e) {
    throw Error(what + ": " + e.message());
  }
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape) SG_CHECK(d >= 0) << what << " has a negative dimension " << d;
  Tensor out(t, shape);
  if (p.has_raw_data()) {
    SG_CHECK(p.raw_data().size() == out.nbytes())
        << what << " has " << p.raw_data().size() << " bytes of data but its dims "
        << shape_str(shape) << " need " << out.nbytes();
    std::memcpy(out.raw_data(), p.raw_data().data(), out.nbytes());  // little-endian host
    return out;
  }
  switch (t) {
    case DType::f32:
      fill_from(out, p.float_data(), what, "float_data");
      break;
    case DType::f64:
      fill_from(out, p.double_data(), what, "double_data");
      break;
    case DType::i64:
      fill_from(out, p.int64_data(), what, "int64_data");
      break;
    default:
      fill_from(out, p.int32_data(), what, "int32_data");
      break;
  }
  return out;
}

onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(onnx_dtype_code(t.dtype())));
  for (int64_t d : t.shape()) p.add_dims(d);
  p.set_raw_data(t.raw_data(), t.nbytes());
  return p;
}

}  // namespace sgraph::onnx_import

namespace sgraph {

Tensor load_tensor_pb(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SG_CHECK(in) << path << ": cannot open file";
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string bytes = buf.str();
  onnx::TensorProto p;
  SG_CHECK(p.ParseFromString(bytes)) << path << ": not a serialized onnx.TensorProto";
  try {
    return onnx_import::tensor_from_proto(p);
  } catch (Error& e) {
    throw e.in_file(path);
  }
}

void save_tensor_pb(const Tensor& t, const std::string& path, const std::string& name) {
  std::ofstream out(path, std::ios::binary);
  SG_CHECK(out) << path << ": cannot write file";
  SG_CHECK(onnx_import::tensor_to_proto(t, name).SerializeToOstream(&out))
      << path << ": write failed";
}

}  // namespace sgraph
