// onnx.TensorProto <-> Tensor, and .pb tensor files.
#include "onnx/tensor_proto.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "ops/int_math.h"
#include "sgraph/onnx.h"

namespace sgraph::onnx_import {

namespace {
// Checks the field holds `count` values before allocating, so corrupt dims cannot ask for
// terabytes.
template <class Field>
Tensor from_field(DType t, Shape shape, int64_t count, const Field& field, const std::string& what,
                  const char* field_name) {
  SG_CHECK(static_cast<int64_t>(field.size()) == count)
      << what << " has " << field.size() << " values in " << field_name << " but its dims "
      << shape_str(shape) << " need " << count;
  Tensor out(t, std::move(shape));
  visit_dtype(t, [&]<class T>() {
    T* d = out.data<T>();
    for (int64_t i = 0; i < count; ++i) d[i] = static_cast<T>(field[static_cast<int>(i)]);
  });
  return out;
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
  int64_t count = 1;
  for (int64_t d : shape) {
    SG_CHECK(d >= 0) << what << " has a negative dimension " << d;
    SG_CHECK(!__builtin_mul_overflow(count, d, &count))
        << what << " has dims " << shape_str(shape) << ": too many elements";
  }
  if (p.has_raw_data()) {
    const size_t bytes = p.raw_data().size(), size = dtype_size(t);
    SG_CHECK(bytes % size == 0 && static_cast<int64_t>(bytes / size) == count)
        << what << " has " << bytes << " bytes of data but its dims " << shape_str(shape)
        << " need " << count << " values of " << size << " bytes";
    Tensor out(t, std::move(shape));
    std::memcpy(out.raw_data(), p.raw_data().data(), bytes);  // little-endian host
    return out;
  }
  if (is_storage(t)) {  // f16/bf16 data: the bits of each value in int32_data
    const auto& field = p.int32_data();
    SG_CHECK(static_cast<int64_t>(field.size()) == count)
        << what << " has " << field.size() << " values in int32_data but its dims "
        << shape_str(shape) << " need " << count;
    Tensor out(t, std::move(shape));
    auto* d = static_cast<uint16_t*>(out.raw_data());
    for (int64_t i = 0; i < count; ++i) d[i] = static_cast<uint16_t>(field[static_cast<int>(i)]);
    return out;
  }
  switch (t) {
    case DType::f32:
      return from_field(t, std::move(shape), count, p.float_data(), what, "float_data");
    case DType::f64:
      return from_field(t, std::move(shape), count, p.double_data(), what, "double_data");
    case DType::i64:
      return from_field(t, std::move(shape), count, p.int64_data(), what, "int64_data");
    default:
      return from_field(t, std::move(shape), count, p.int32_data(), what, "int32_data");
  }
}

onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(onnx_dtype_code(t.dtype())));
  for (int64_t d : t.shape()) p.add_dims(d);
  p.set_raw_data(t.raw_data(), t.nbytes());
  return p;
}

Tensor scalar_from_double(DType t, double v) {
  return visit_dtype(t, [&]<class T>() { return Tensor::scalar(ops::from_double<T>(v)); });
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
