#include "sgraph/tensor.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "ir/half.h"

namespace sgraph {

size_t dtype_size(DType t) {
  switch (t) {
#define SG_DTYPE_SIZE(e, T, name, onnx) \
  case DType::e:                        \
    return sizeof(T);
    SG_FOR_EACH_DTYPE(SG_DTYPE_SIZE)
#undef SG_DTYPE_SIZE
    case DType::f16:
    case DType::bf16:
      return 2;
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
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::undefined:
      break;
  }
  return "undefined";
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }
bool is_storage(DType t) { return t == DType::f16 || t == DType::bf16; }
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
    case DType::f16:
      return 10;
    case DType::bf16:
      return 16;
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
  if (code == 10) return DType::f16;
  if (code == 16) return DType::bf16;
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

// Large blocks (at least kMin bytes) are kept when freed and handed out again for the same size
// class (four per power of two, so at most 25% more than asked), up to kMaxCached bytes in all.
// malloc serves such sizes by mmap and returns them by munmap: every fresh block page-faults
// again, and in a process with another busy thread (a background compile) each munmap also stops
// that thread's core to flush its TLB. Measured: interpreted ppocr calls beside a background
// compile took up to 45 ms instead of 3. Not under AddressSanitizer, which must see every free.
class BlockCache {
 public:
  static constexpr size_t kMin = size_t{256} << 10;
  static constexpr size_t kMaxCached = size_t{256} << 20;
  static size_t size_class(size_t n) {
    if (n < kMin) return n;
    const size_t quarter = size_t{1} << (63 - __builtin_clzll(n) - 2);
    return (n + quarter - 1) / quarter * quarter;
  }
  void* take(size_t n) {
    std::lock_guard lock(mu_);
    auto it = free_.find(n);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= n;
    return p;
  }
  bool keep(void* p, size_t n) {
    std::lock_guard lock(mu_);
    if (cached_ + n > kMaxCached) return false;
    free_[n].push_back(p);
    cached_ += n;
    return true;
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};

#if defined(__SANITIZE_ADDRESS__)  // GCC's spelling; clang's is __has_feature
#define SGRAPH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SGRAPH_ASAN 1
#endif
#endif
#if defined(SGRAPH_ASAN)  // ASan checks each block: none is kept for reuse
constexpr bool kCacheBlocks = false;
#else
constexpr bool kCacheBlocks = true;
#endif

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;  // never destroyed: blocks may be freed at exit
  return *cache;
}

std::shared_ptr<void> allocate(size_t bytes) {
  size_t n = (bytes + kAlign - 1) / kAlign * kAlign;
  if (n == 0) n = kAlign;
  const auto free_block = [](void* q) { ::operator delete(q, std::align_val_t(kAlign)); };
  if (!kCacheBlocks || n < BlockCache::kMin)
    return std::shared_ptr<void>(::operator new(n, std::align_val_t(kAlign)), free_block);
  n = BlockCache::size_class(n);
  void* p = block_cache().take(n);
  if (p == nullptr) p = ::operator new(n, std::align_val_t(kAlign));
  return std::shared_ptr<void>(p, [n, free_block](void* q) {
    if (!block_cache().keep(q, n)) free_block(q);
  });
}
}  // namespace

namespace {
int64_t env_max_tensor_bytes() {
  const char* v = std::getenv("SGRAPH_MAX_TENSOR_BYTES");
  if (v == nullptr || *v == 0) return 0;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return (end != nullptr && *end == 0 && n > 0) ? static_cast<int64_t>(n) : 0;
}
std::atomic<int64_t>& max_bytes() {
  static std::atomic<int64_t> limit{env_max_tensor_bytes()};
  return limit;
}
}  // namespace

void set_max_tensor_bytes(int64_t bytes) {
  SG_CHECK(bytes >= 0) << "set_max_tensor_bytes(" << bytes << "): the limit cannot be negative";
  max_bytes().store(bytes, std::memory_order_relaxed);
}

int64_t max_tensor_bytes() { return max_bytes().load(std::memory_order_relaxed); }

void check_tensor_bytes(int64_t bytes, const char* what) {
  const int64_t limit = max_tensor_bytes();
  SG_CHECK(limit == 0 || bytes <= limit)
      << what << " of " << bytes << " bytes is above the tensor size limit (" << limit
      << " bytes, set_max_tensor_bytes / SGRAPH_MAX_TENSOR_BYTES)";
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  SG_CHECK(dtype != DType::undefined) << "cannot allocate a tensor without a dtype";
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : shape_) {
    SG_CHECK(d >= 0) << "negative dimension in shape " << sgraph::shape_str(shape_);
    SG_CHECK(!__builtin_mul_overflow(bytes, d, &bytes))
        << "shape " << sgraph::shape_str(shape_) << " has too many elements";
  }
  if (max_tensor_bytes() != 0) {
    const std::string what =
        "a tensor " + std::string(dtype_name(dtype_)) + sgraph::shape_str(shape_);
    check_tensor_bytes(bytes, what.c_str());
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
  if (is_storage(dtype_)) return half_to_float(static_cast<const uint16_t*>(data_)[i], dtype_);
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
