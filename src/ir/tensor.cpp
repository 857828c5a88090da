#include "sgraph/tensor.h"

#include <cstring>
#include <new>

namespace sgraph {

size_t dtype_size(DType t) {
  switch (t) {
#define SG_DTYPE_SIZE(e, T, name, onnx) \
  case DType::e:                        \
    return sizeof(T);
    SG_FOR_EACH_DTYPE(SG_DTYPE_SIZE)
#undef SG_DTYPE_SIZE
    case DType::undefined:
      break;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
#define SG_DTYPE_NAME(e, T, name, onnx) \
  case DType::e:                        \
    return name;
    SG_FOR_EACH_DTYPE(SG_DTYPE_NAME)
#undef SG_DTYPE_NAME
    case DType::undefined:
      break;
  }
  return "undefined";
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }
bool is_integer(DType t) {
  return t == DType::i32 || t == DType::i64 || t == DType::u8 || t == DType::i8;
}

int64_t onnx_dtype_code(DType t) {
  switch (t) {
#define SG_DTYPE_ONNX(e, T, name, onnx) \
  case DType::e:                        \
    return onnx;
    SG_FOR_EACH_DTYPE(SG_DTYPE_ONNX)
#undef SG_DTYPE_ONNX
    case DType::undefined:
      break;
  }
  return 0;
}

DType dtype_from_onnx_code(int64_t code) {
#define SG_DTYPE_FROM_ONNX(e, T, name, onnx) \
  if (code == onnx) return DType::e;
  SG_FOR_EACH_DTYPE(SG_DTYPE_FROM_ONNX)
#undef SG_DTYPE_FROM_ONNX
  SG_FAIL() << "unsupported element type (ONNX data type code " << code << ")";
}

int64_t numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {
constexpr size_t kAlign = 64;
std::shared_ptr<void> allocate(size_t bytes) {
  const size_t n = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = ::operator new(n == 0 ? kAlign : n, std::align_val_t(kAlign));
  return std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t(kAlign)); });
}
}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  SG_CHECK(dtype != DType::undefined) << "cannot allocate a tensor without a dtype";
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : shape_) {
    SG_CHECK(d >= 0) << "negative dimension in shape " << sgraph::shape_str(shape_);
    SG_CHECK(!__builtin_mul_overflow(bytes, d, &bytes))
        << "shape " << sgraph::shape_str(shape_) << " has too many elements";
  }
  storage_ = allocate(static_cast<size_t>(bytes));
  data_ = storage_.get();
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner) {
  SG_CHECK(dtype != DType::undefined) << "Tensor::wrap needs a dtype";
  SG_CHECK(data != nullptr || sgraph::numel(shape) == 0) << "Tensor::wrap of a null pointer";
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.storage_ = std::move(owner);
  t.data_ = data;
  return t;
}

int64_t Tensor::dim(int64_t i) const {
  const int64_t r = rank();
  SG_CHECK(i >= -r && i < r) << "dimension " << i << " out of range for rank " << r;
  return shape_[i < 0 ? i + r : i];
}

void Tensor::check_type(DType want) const {
  SG_CHECK(dtype_ == want) << "tensor has dtype " << dtype_name(dtype_) << ", accessed as "
                           << dtype_name(want);
}

std::vector<int64_t> Tensor::to_int64() const {
  if (dtype_ == DType::i64) return to_vector<int64_t>();
  SG_CHECK(dtype_ == DType::i32) << "expected an integer tensor, got " << dtype_name(dtype_);
  const int32_t* p = data<int32_t>();
  return std::vector<int64_t>(p, p + numel());
}

double Tensor::at_double(int64_t i) const {
  SG_CHECK(i >= 0 && i < numel()) << "element " << i << " out of range";
  return visit_dtype(
      dtype_, [&]<class T>() { return static_cast<double>(static_cast<const T*>(data_)[i]); });
}

Tensor Tensor::reshape(Shape shape) const {
  SG_CHECK(defined()) << "reshape of an undefined tensor";
  SG_CHECK(sgraph::numel(shape) == numel())
      << "cannot reshape " << shape_str(shape_) << " to " << shape_str(shape);
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_);
  std::memcpy(t.data_, data_, nbytes());
  return t;
}

std::string to_string(const Tensor& t, int64_t max_elems) {
  if (!t.defined()) return "<undefined>";
  std::ostringstream os;
  os << dtype_name(t.dtype()) << shape_str(t.shape()) << " {";
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n && i < max_elems; ++i) os << (i ? ", " : "") << t.at_double(i);
  if (n > max_elems) os << ", ...";
  os << "}";
  return os.str();
}

}  // namespace sgraph
