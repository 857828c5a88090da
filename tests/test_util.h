// Test helpers: building tensors and comparing them (the ones that need xtensor are in xt_util.h).
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sgraph/sgraph.h"

namespace sgraph::test {

// True if `sub` occurs in `s` (for checking error messages).
inline bool contains(const std::string& s, std::string_view sub) {
  return s.find(sub) != std::string::npos;
}

// The report row of the op named `node` (fails the test when there is none).
inline const OpReport& op_named(const Report& r, const std::string& node) {
  for (const OpReport& o : r.ops)
    if (o.node == node) return o;
  FAIL("no op " << node);
  return r.ops.front();
}

// Runs `f` and returns the what() of the sgraph::Error it throws, or "" if it does not throw.
template <class F>
std::string error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The elements of `t` (any dtype) as doubles, in row-major order.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.at_double(i);
  return v;
}

// Checks `got` has `shape` and elementwise |got - want| <= atol + rtol * |want| (NaN matches NaN,
// an infinity matches only itself).
inline void check_close(const Tensor& got, const Shape& shape, const std::vector<double>& want,
                        double rtol = 1e-5, double atol = 1e-6) {
  REQUIRE(got.defined());
  CHECK_MESSAGE(got.shape() == shape,
                "shape " << shape_str(got.shape()) << " != " << shape_str(shape));
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.at_double(i), w = want[i];
    if (std::isnan(w) || std::isinf(w)) {
      CHECK_MESSAGE((std::isnan(w) ? std::isnan(g) : g == w),
                    "element " << i << ": got " << g << ", want " << w);
      continue;
    }
    CHECK_MESSAGE(std::abs(g - w) <= atol + rtol * std::abs(w),
                  "element " << i << ": got " << g << ", want " << w);
  }
}

inline void check_tensors_close(const Tensor& got, const Tensor& want, double rtol = 1e-5,
                                double atol = 1e-6) {
  CHECK(got.dtype() == want.dtype());
  check_close(got, want.shape(), values(want), rtol, atol);
}

// Two-argument form (no tolerances, so it cannot be confused with the shape/value form).
inline void check_close(const Tensor& got, const Tensor& want) { check_tensors_close(got, want); }

inline Tensor random_f32(Shape shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  Tensor t(DType::f32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// random_f32(shape, seed) widened to f64: the same values, as doubles.
inline Tensor random_f64(Shape shape, uint32_t seed) {
  const Tensor f = random_f32(shape, seed);
  Tensor t(DType::f64, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = f.at_double(i);
  return t;
}

// An f32 tensor with the given shape and values.
inline Tensor f32(Shape s, std::initializer_list<float> v) {
  return Tensor::from<float>(std::move(s), v);
}

// start, start + 1, start + 2, ... in row-major order, as dtype T.
template <class T>
Tensor iota(Shape s, int start = 0) {
  Tensor t(dtype_v<T>, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(start + i);
  return t;
}

// A 1-D i64 tensor holding `v` (shape, axes, pads, sizes and index inputs).
// A half-precision storage tensor (DType::f16 or bf16) [bits.size()] from its bit patterns, and
// the bit patterns of one.
inline Tensor half_bits(DType t, const std::vector<uint16_t>& bits) {
  Tensor h(t, {static_cast<int64_t>(bits.size())});
  for (size_t i = 0; i < bits.size(); ++i) static_cast<uint16_t*>(h.raw_data())[i] = bits[i];
  return h;
}
inline std::vector<uint16_t> bits_of(const Tensor& h) {
  const auto* p = static_cast<const uint16_t*>(h.raw_data());
  return std::vector<uint16_t>(p, p + h.numel());
}

inline Tensor ints(const std::vector<int64_t>& v) {
  return Tensor::from<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// The attribute set {axis: a}.
inline Attributes axis(int64_t a) { return {{"axis", a}}; }

// The multi-index of row-major offset `flat` in `shape`.
inline Ints unravel(int64_t flat, const Ints& shape) {
  Ints idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

// The row-major offset of multi-index `idx` in `shape` (the inverse of unravel).
inline int64_t ravel(const Ints& idx, const Ints& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

// A reference result computed by a test: its shape and row-major values.
struct Expected {
  Shape shape;
  std::vector<double> values;
};

// Runs a single-node graph: inputs become graph inputs unless given as constants.
// Returns the node's outputs.
inline std::vector<Tensor> run_op(OpKind op, const std::vector<Tensor>& inputs,
                                  Attributes attrs = {}, int num_outputs = 1,
                                  const std::vector<bool>& constant = {}) {
  GraphBuilder b("op_test");
  std::vector<ValueId> ins;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      ins.push_back(kNoValue);
    } else if (i < constant.size() && constant[i]) {
      ins.push_back(b.constant("in" + std::to_string(i), inputs[i]));
    } else {
      ins.push_back(
          b.input("in" + std::to_string(i), inputs[i].dtype(), to_dims(inputs[i].shape())));
      feeds.push_back(inputs[i]);
    }
  }
  for (ValueId v : b.node(op, ins, std::move(attrs), num_outputs)) b.output(v);
  Session s(b.build());
  return s.run(feeds);
}

// The error message run_op throws, or "" if it does not throw.
inline std::string op_error(OpKind op, const std::vector<Tensor>& inputs, Attributes attrs = {},
                            int num_outputs = 1, const std::vector<bool>& constant = {}) {
  return error_of([&] { run_op(op, inputs, std::move(attrs), num_outputs, constant); });
}

// Reduction attributes: {axes, keepdims}.
inline Attributes axes_attr(Ints axes, int64_t keepdims = 1) {
  return {{"axes", std::move(axes)}, {"keepdims", keepdims}};
}
inline const double kInf = std::numeric_limits<double>::infinity();
inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A fresh directory under the system's temporary one, removed at the end of the test.
struct TempDir {
  TempDir() {
    static std::atomic<int> n{0};
    path = std::filesystem::temp_directory_path() /
           ("sgraph_test_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    std::filesystem::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path path;
};

// A file's bytes ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The kernel cache entries (.sgk files) in a disk cache directory.
inline std::vector<std::filesystem::path> cache_entries(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".sgk") out.push_back(e.path());
  return out;
}

// g's node names by index and value names by id (the names a warm-up record uses).
inline std::vector<std::string> node_names(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes) out.push_back(n.name);
  return out;
}
inline std::vector<std::string> value_names(const Graph& g) {
  std::vector<std::string> out;
  for (const ValueInfo& v : g.values) out.push_back(v.name);
  return out;
}

}  // namespace sgraph::test
