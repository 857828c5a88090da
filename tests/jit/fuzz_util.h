// Helpers of the differential JIT fuzzers (test_jit_fuzz.cpp, test_jit_fuzz_serving.cpp): how
// many graphs from which seed (overridable from the environment), numpy broadcasting of shapes,
// comparing a JIT output with the interpreter's within a tolerance, and shapes tracked at several
// sizes of a graph's symbolic dims.
//
// SGRAPH_FUZZ_GRAPHS=N runs N graphs per fuzzer, SGRAPH_FUZZ_SEED=S makes graph i from seed S + i
// (scripts/fuzz_jit.sh runs many over fresh seeds). A failure message starts "FAILED seed S" and
// prints the graph; SGRAPH_FUZZ_SEED=S SGRAPH_FUZZ_GRAPHS=1 repeats just that graph.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>

#include "jit/host.h"
#include "jit/kernel_runtime.h"
#include "jit/parallel.h"
#include "ops/winograd.h"
#include "test_util.h"

namespace sgraph::fuzz {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

// The environment variable `name` as a number, `dflt` when unset or empty.
inline int64_t env_int(const char* name, int64_t dflt) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return dflt;
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, 10);
  REQUIRE_MESSAGE((*end == '\0' && v >= 0), name << "='" << s << "' is not a non-negative number");
  return v;
}
inline int fuzz_graphs(int dflt) { return static_cast<int>(env_int("SGRAPH_FUZZ_GRAPHS", dflt)); }
inline uint32_t fuzz_seed(uint32_t dflt) {
  return static_cast<uint32_t>(env_int("SGRAPH_FUZZ_SEED", dflt));
}

// Three graphs in ten run every region as a parallel kernel on 2 or 3 threads (their nests split
// into ranges: the tests' main sets SGRAPH_PARALLEL_WORK=0), which the profile would never give
// graphs this small. Drawn from a generator of its own, so a seed's graph does not depend on it.
// While it lives, region_threads gives that many threads; threads() says how many (0: profiled).
class ForcedThreads {
 public:
  explicit ForcedThreads(uint32_t seed) {
    std::mt19937 side(seed ^ 0x5bd1e995u);
    if (side() % 10 < 3) n_ = 2 + static_cast<int>(side() % 2);
    force_region_threads_for_testing(n_);
  }
  ~ForcedThreads() { force_region_threads_for_testing(0); }
  ForcedThreads(const ForcedThreads&) = delete;
  ForcedThreads& operator=(const ForcedThreads&) = delete;
  int threads() const { return n_; }
  std::string str() const {
    return n_ ? "; regions forced to " + std::to_string(n_) + " threads" : "";
  }

 private:
  int n_ = 0;
};

// One graph in two has every conv whose weights are a constant multiply by its packed weights
// (force_const_a_packing_for_testing): the runtime packs them only for products over few
// positions, which the fuzzers' small convs seldom are. Independently, one graph in two has every
// conv that fits Winograd's F(2,3) computed so (ops::force_winograd_for_testing), which only
// larger convs than the fuzzers' take otherwise; and one in two has short rows' last vector masked
// (jit::set_masked_tails_for_testing), which the host decides otherwise: both ways are then run on
// every host. A generator of its own, as ForcedThreads.
class ForcedPaths {
 public:
  explicit ForcedPaths(uint32_t seed) {
    std::mt19937 side(seed ^ 0x27d4eb2fu);
    on_ = side() % 2 == 0;
    winograd_ = side() % 2 == 0;
    masked_ = side() % 2 == 1;
    force_const_a_packing_for_testing(on_);
    ops::force_winograd_for_testing(winograd_);
    jit::set_masked_tails_for_testing(masked_ ? 1 : 0);
  }
  ~ForcedPaths() {
    force_const_a_packing_for_testing(false);
    ops::force_winograd_for_testing(false);
    jit::set_masked_tails_for_testing(-1);
  }
  ForcedPaths(const ForcedPaths&) = delete;
  ForcedPaths& operator=(const ForcedPaths&) = delete;
  std::string str() const {
    return std::string(on_ ? "; conv weights always packed" : "") +
           (winograd_ ? "; Winograd wherever it fits" : "") +
           (masked_ ? "; short rows masked" : "; short rows unmasked");
  }

 private:
  bool on_ = false, winograd_ = false, masked_ = false;
};

// Numpy broadcasting of a and b into *out; false when they do not broadcast.
inline bool broadcast(const Shape& a, const Shape& b, Shape* out) {
  const size_t r = std::max(a.size(), b.size());
  Shape s(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    s[i] = std::max(da, db);
  }
  if (out) *out = s;
  return true;
}

struct Mismatch {
  double max_err = 0;  // |got - want| / (kAtol + kRtol * |want|), the largest
  std::string first;   // the first output out of tolerance, described
  bool shape = false;  // some output has another shape than the interpreter's
};

// Compares output `output` of the JIT (`got`) with the interpreter's (`want`) into `m`.
inline void compare(const Tensor& got, const Tensor& want, size_t output, Mismatch& m) {
  std::ostringstream why;
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    if (m.first.empty())
      m.first = "output " + std::to_string(output) + ": " + std::string(dtype_name(got.dtype())) +
                shape_str(got.shape()) + " != " + std::string(dtype_name(want.dtype())) +
                shape_str(want.shape());
    m.max_err = std::max(m.max_err, 1e30);
    m.shape = true;
    return;
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.at_double(i), w = want.at_double(i);
    double err;
    if (std::isnan(w) || std::isnan(g))
      err = std::isnan(w) && std::isnan(g) ? 0 : 1e30;
    else if (std::isinf(w) || std::isinf(g))
      err = g == w ? 0 : 1e30;
    else
      err = std::abs(g - w) / (kAtol + kRtol * std::abs(w));
    if (err > 1 && m.first.empty()) {
      why << "output " << output << " element " << i << ": got " << g << ", want " << w;
      m.first = why.str();
    }
    m.max_err = std::max(m.max_err, err);
  }
}

// ---- shapes at several sizes of the symbols (scenarios; test_jit_fuzz_serving.cpp) ----

// Sizes of the symbols; 0 is the warm-up's. A warm-up over 0, 1 and 2 leaves 3 unseen: a form
// the tracker read off the warm-up (a computed shape's element that followed a symbol there) may
// not hold at it.
constexpr int kScenarios = 4;
using Shapes = std::array<Shape, kScenarios>;  // a value's shape in each scenario
using Rng = std::mt19937;

inline int draw(Rng& g, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); }
inline bool coin(Rng& g, double p) { return std::bernoulli_distribution(p)(g); }

inline int64_t max_numel(const Shapes& s) {
  int64_t n = 0;
  for (const Shape& x : s) n = std::max(n, numel(x));
  return n;
}
// Dim d's size when it is the same in every scenario, else -1.
inline int64_t fixed(const Shapes& s, size_t d) {
  for (const Shape& x : s)
    if (x[d] != s[0][d]) return -1;
  return s[0][d];
}
inline bool all_broadcast(const Shapes& a, const Shapes& b, Shapes* out) {
  Shapes r;
  for (int k = 0; k < kScenarios; ++k)
    if (!broadcast(a[k], b[k], &r[k])) return false;
  if (out) *out = r;
  return true;
}
template <class F>
Shapes each(const Shapes& s, F f) {  // f applied to each scenario's shape
  Shapes r;
  for (int k = 0; k < kScenarios; ++k) r[k] = f(s[k]);
  return r;
}

// The length of x[start:end:step] on an axis of n elements, clamped as ONNX clamps.
inline int64_t slice_len(int64_t n, int64_t start, int64_t end, int64_t step) {
  int64_t f = start < 0 ? start + n : start;
  f = std::min(std::max<int64_t>(f, 0), step > 0 ? n : n - 1);
  int64_t e = end == INT64_MAX ? n : (end < 0 ? end + n : end);
  e = std::min(std::max<int64_t>(e, step > 0 ? 0 : -1), step > 0 ? n : n - 1);
  const int64_t len = step > 0 ? (e - f + step - 1) / step : (f - e - step - 1) / -step;
  return std::max<int64_t>(len, 0);
}

}  // namespace sgraph::fuzz
