// TensorProto files (.pb): save/load round trips for every dtype, files written by other tools
// with typed data fields, and files that are missing or are not a TensorProto.
#include <cstring>
#include <fstream>

#include "onnx/proto_builder.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  REQUIRE(out);
  out << bytes;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("ONNX import: save_tensor_pb / load_tensor_pb round trip every dtype") {
  const std::vector<double> source = {0, 1, -2, 3.5, 100, -128, 127, 255, 1e6, -0.25, 7, 0};
  struct Case {
    DType dtype;
    int32_t code;  // ONNX's TensorProto.DataType
  };
  for (const Case& c : {Case{DType::f32, kF32}, Case{DType::f64, kF64}, Case{DType::i32, kI32},
                        Case{DType::i64, kI64}, Case{DType::boolean, kBool}, Case{DType::u8, kU8},
                        Case{DType::i8, kI8}}) {
    for (const Shape& shape : {Shape{3, 4}, Shape{}, Shape{0, 3}, Shape{2, 1, 6}}) {
      CAPTURE(dtype_name(c.dtype));
      CAPTURE(shape_str(shape));
      Tensor t(c.dtype, shape);
      visit_dtype(c.dtype, [&]<class T>() {
        for (int64_t i = 0; i < t.numel(); ++i)
          t.data<T>()[i] = static_cast<T>(source[static_cast<size_t>(i) % source.size()]);
      });
      TempPath path(".pb");
      save_tensor_pb(t, path.str(), "tensor_" + std::string(dtype_name(c.dtype)));

      // What was written is an onnx.TensorProto with ONNX's code for the dtype.
      onnx::TensorProto p;
      REQUIRE(p.ParseFromString(read_file(path.str())));
      CHECK(p.name() == "tensor_" + std::string(dtype_name(c.dtype)));
      CHECK(p.data_type() == c.code);
      CHECK(Shape(p.dims().begin(), p.dims().end()) == shape);

      const Tensor back = load_tensor_pb(path.str());
      CHECK(back.dtype() == c.dtype);
      CHECK(back.shape() == shape);
      REQUIRE(back.nbytes() == t.nbytes());
      CHECK(std::memcmp(back.raw_data(), t.raw_data(), t.nbytes()) == 0);
    }
  }
}

TEST_CASE("ONNX import: load_tensor_pb reads typed data fields") {
  TempPath path(".pb");
  SUBCASE("float_data") {
    onnx::TensorProto p = tensor_header("x", kF32, {2, 2});
    for (float v : {1.5f, -2.0f, 0.0f, 8.25f}) p.add_float_data(v);
    write_file(path.str(), p.SerializeAsString());
    const Tensor t = load_tensor_pb(path.str());
    CHECK(t.dtype() == DType::f32);
    check_close(t, {2, 2}, {1.5, -2, 0, 8.25}, 0, 0);
  }
  SUBCASE("int32_data for i8 and bool") {
    onnx::TensorProto p = tensor_header("x", kI8, {3});
    for (int32_t v : {-128, 0, 127}) p.add_int32_data(v);
    write_file(path.str(), p.SerializeAsString());
    Tensor t = load_tensor_pb(path.str());
    CHECK(t.dtype() == DType::i8);
    check_close(t, {3}, {-128, 0, 127}, 0, 0);

    p = tensor_header("b", kBool, {3});
    for (int32_t v : {0, 1, 1}) p.add_int32_data(v);
    write_file(path.str(), p.SerializeAsString());
    t = load_tensor_pb(path.str());
    CHECK(t.dtype() == DType::boolean);
    check_close(t, {3}, {0, 1, 1}, 0, 0);
  }
  SUBCASE("a data size mismatch names the file and the tensor") {
    onnx::TensorProto p = tensor_header("x", kI64, {4});
    p.add_int64_data(1);
    write_file(path.str(), p.SerializeAsString());
    const std::string err = error_of([&] { load_tensor_pb(path.str()); });
    CHECK(contains(err, path.str() + ": "));
    CHECK(contains(err, "'x'"));
    CHECK(contains(err, "int64_data"));
  }
}

TEST_CASE("ONNX import: .pb files that are missing or not a TensorProto") {
  TempPath path(".pb");
  SUBCASE("missing") {
    const std::string err = error_of([&] { load_tensor_pb(path.str()); });
    CHECK(contains(err, path.str()));
    CHECK(contains(err, "cannot open file"));
  }
  SUBCASE("bytes that do not parse") {
    write_file(path.str(), std::string("\xff\xff\xff\xff garbage", 12));
    const std::string err = error_of([&] { load_tensor_pb(path.str()); });
    CHECK(contains(err, path.str() + ": "));
    CHECK(contains(err, "not a serialized onnx.TensorProto"));
  }
  SUBCASE("a serialized model") {
    // A ModelProto may parse as a TensorProto (the wire formats overlap); it must still be
    // rejected with an error naming the file.
    write_file(path.str(), make_model(13, {make_node("Relu", {"x"}, {"y"})},
                                      {value_info("x", kF32, {2})}, {"y"})
                               .SerializeAsString());
    CHECK(contains(error_of([&] { load_tensor_pb(path.str()); }), path.str() + ": "));
  }
  SUBCASE("an unsupported element type") {
    onnx::TensorProto p = tensor_header("h", onnx::TensorProto::INT16, {2});
    p.set_raw_data(std::string(4, '\0'));
    write_file(path.str(), p.SerializeAsString());
    const std::string err = error_of([&] { load_tensor_pb(path.str()); });
    CHECK(contains(err, path.str() + ": "));
    CHECK(contains(err, "'h'"));
  }
  SUBCASE("saving to a directory that does not exist") {
    const std::string err =
        error_of([] { save_tensor_pb(Tensor::scalar(1.0f), "/nonexistent/dir/t.pb"); });
    CHECK(contains(err, "/nonexistent/dir/t.pb"));
  }
}
