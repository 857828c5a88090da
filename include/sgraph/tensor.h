// sgraph/tensor.h — dtypes, shapes and the Tensor value type.
//
// A Tensor is a dtype, a shape and a contiguous row-major buffer (64-byte aligned). Copies share
// the buffer (a Tensor is a cheap handle); `reshape` returns a view on the same buffer, which is
// how Reshape/Flatten/Squeeze/Unsqueeze run without copying. `clone` makes a deep copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sgraph/error.h"

namespace sgraph {

// Every dtype in one list: SG_DTYPE(enumerator, C++ type, name, ONNX TensorProto data type code).
// clang-format off
#define SG_FOR_EACH_DTYPE(SG_DTYPE)        \
  SG_DTYPE(f32, float, "f32", 1)           \
  SG_DTYPE(f64, double, "f64", 11)         \
  SG_DTYPE(i32, int32_t, "i32", 6)         \
  SG_DTYPE(i64, int64_t, "i64", 7)         \
  SG_DTYPE(boolean, bool, "bool", 9)       \
  SG_DTYPE(u8, uint8_t, "u8", 2)           \
  SG_DTYPE(i8, int8_t, "i8", 3)
// clang-format on

enum class DType : uint8_t {
  undefined,
#define SG_DTYPE_ENUM(e, T, name, onnx) e,
  SG_FOR_EACH_DTYPE(SG_DTYPE_ENUM)
#undef SG_DTYPE_ENUM
  // Storage types (ONNX FLOAT16 = 10, BFLOAT16 = 16): tensors of them hold half-precision data at
  // a model's edges (its inputs, outputs and loaded tensors), but no kernel computes on them and
  // visit_dtype rejects them. The ONNX importer computes a half-precision model in f32: it casts
  // each f16/bf16 input and constant to f32 where it enters the graph and each output back, and a
  // Cast to f16/bf16 inside the graph rounds to it and widens again. storage_cast converts.
  f16,
  bf16,
};

size_t dtype_size(DType t);            // 0 for undefined
std::string_view dtype_name(DType t);  // "f32", "i64", "bool", ...
bool is_float(DType t);                // f32, f64 (the float types kernels compute on)
bool is_integer(DType t);
bool is_storage(DType t);  // f16, bf16
// ONNX TensorProto.DataType codes (1 = float, 7 = int64, ...), used by Cast's `to` attribute.
int64_t onnx_dtype_code(DType t);
DType dtype_from_onnx_code(int64_t code);  // throws for codes sgraph does not support

template <class T>
struct dtype_of;
#define SG_DTYPE_OF(e, T, name, onnx)        \
  template <>                                \
  struct dtype_of<T> {                       \
    static constexpr DType value = DType::e; \
  };
SG_FOR_EACH_DTYPE(SG_DTYPE_OF)
#undef SG_DTYPE_OF
template <class T>
inline constexpr DType dtype_v = dtype_of<T>::value;

// Calls f.template operator()<T>() with the C++ type of `t`: visit_dtype(t, [&]<class T>() {...}).
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
#define SG_DTYPE_CASE(e, T, name, onnx) \
  case DType::e:                        \
    return f.template operator()<T>();
    SG_FOR_EACH_DTYPE(SG_DTYPE_CASE)
#undef SG_DTYPE_CASE
    case DType::f16:
    case DType::bf16:
      SG_FAIL() << dtype_name(t) << " is a storage type: no kernel computes on it";
    case DType::undefined:
      break;
  }
  SG_FAIL() << "tensor has no dtype";
}

using Shape = std::vector<int64_t>;
int64_t numel(std::span<const int64_t> shape);

// The process's limit on one tensor's size, in bytes: allocating a larger Tensor (an op's output,
// a loaded initializer, a compiled region's arena or scratch block) is an sgraph::Error naming the
// size and the limit (and the node, when an op asked for it) instead of an allocation, so a model
// whose shapes ask for more memory than a service allows fails that call cleanly, with nothing
// changed. 0: no limit. Default: $SGRAPH_MAX_TENSOR_BYTES when set (a byte count), else 0.
void set_max_tensor_bytes(int64_t bytes);
int64_t max_tensor_bytes();
// Throws the limit's error when `bytes` is above it (`what` names the allocation).
void check_tensor_bytes(int64_t bytes, const char* what);
std::string shape_str(std::span<const int64_t> shape);  // "[2,3]"

class Tensor {
 public:
  Tensor() = default;  // undefined: stands for an absent optional input
  // Allocates uninitialised storage.
  Tensor(DType dtype, Shape shape);
  static Tensor zeros(DType dtype, Shape shape);
  // Wraps memory owned elsewhere (no copy); `owner` keeps it alive. `data` must be suitably aligned
  // for the dtype.
  static Tensor wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner);
  template <class T>
  static Tensor from(Shape shape, std::span<const T> values);
  template <class T>
  static Tensor from(Shape shape, std::initializer_list<T> values) {
    return from<T>(std::move(shape), std::span<const T>(values.begin(), values.size()));
  }
  template <class T>
  static Tensor from(Shape shape, const std::vector<T>& values) {
    return from<T>(std::move(shape), std::span<const T>(values.data(), values.size()));
  }
  template <class T>
  static Tensor scalar(T v) {
    return from<T>({}, {v});
  }

  bool defined() const { return dtype_ != DType::undefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const;  // negative i counts from the end
  int64_t numel() const { return sgraph::numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  template <class T>
  T* data() {
    check_type(dtype_v<T>);
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    check_type(dtype_v<T>);
    return static_cast<const T*>(data_);
  }
  template <class T>
  std::vector<T> to_vector() const {
    const T* p = data<T>();
    return std::vector<T>(p, p + numel());
  }
  // Integer tensor (i32 or i64) as int64 values: shape, axes and index inputs.
  std::vector<int64_t> to_int64() const;
  // Element i converted to double, any dtype (for printing and comparisons in tests).
  double at_double(int64_t i) const;

  Tensor reshape(Shape shape) const;  // a view sharing this tensor's buffer
  Tensor clone() const;               // a deep copy
  bool shares_buffer_with(const Tensor& other) const { return storage_ == other.storage_; }
  // True when no other Tensor (copy or view) refers to this buffer: it may be overwritten.
  bool sole_owner() const { return storage_ != nullptr && storage_.use_count() == 1; }

 private:
  void check_type(DType want) const;
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  DType dtype_ = DType::undefined;
  Shape shape_;
};

// "f32[2,3] {1, 2, 3, 4, 5, 6}", eliding after max_elems values.
std::string to_string(const Tensor& t, int64_t max_elems = 16);

}  // namespace sgraph

namespace sgraph {
template <class T>
Tensor Tensor::from(Shape shape, std::span<const T> values) {
  SG_CHECK(sgraph::numel(shape) == static_cast<int64_t>(values.size()))
      << "Tensor::from: shape " << shape_str(shape) << " needs " << sgraph::numel(shape)
      << " values, got " << values.size();
  Tensor t(dtype_v<T>, std::move(shape));
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

// `t` converted to `to` where one of the two is a storage type (f16/bf16 from or to f32/f64, or
// between f16 and bf16), rounding to nearest even (f64 goes through f32); a NaN stays a NaN.
Tensor storage_cast(const Tensor& t, DType to);

}  // namespace sgraph
