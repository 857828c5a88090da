// libFuzzer target: an ONNX model loaded and run once, interpreted, on small inputs: each graph
// input gets its declared shape (symbolic or unknown dims 2, inputs of more than 4096 elements
// skip the run) and values cycling through edge cases of its dtype (0, -1, 1, the extremes, NaN
// and infinities for floats). Any outcome but outputs or an sgraph::Error is a bug.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "sgraph/onnx.h"
#include "sgraph/session.h"

namespace {

template <class T>
std::vector<T> edge_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0), T(1), L::max(), L::lowest(), T(2), T(3)};
  if constexpr (std::is_signed_v<T>) v.push_back(T(-1));
  if constexpr (std::is_floating_point_v<T>)
    v.insert(v.end(), {L::quiet_NaN(), L::infinity(), -L::infinity(), T(0.5), T(-2.5)});
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // A model may rightly ask for more memory than the fuzzer allows (libFuzzer's -rss_limit_mb):
  // such a call is an sgraph::Error here, as in a service that sets a limit.
  sgraph::set_max_tensor_bytes(int64_t{64} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sgraph;
  Graph g;
  try {
    g = load_onnx_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
  } catch (const Error&) {
    return 0;
  }
  std::vector<Tensor> feeds;
  for (ValueId v : g.inputs) {
    const ValueInfo& info = g.values[v];
    Shape shape;
    if (info.shape)
      for (const Dim& d : *info.shape) shape.push_back(d.is_static() ? d.size : 2);
    int64_t n = 1;
    for (int64_t d : shape)
      if (d > 4096 || (n *= d) > 4096) return 0;
    const DType compute = is_storage(info.dtype) ? DType::f32 : info.dtype;  // f16/bf16: from f32
    Tensor t(compute, shape);
    visit_dtype(compute, [&]<class T>() {
      if constexpr (std::is_same_v<T, bool>) {
        for (int64_t i = 0; i < n; ++i) t.data<T>()[i] = (i % 3) == 1;
      } else {
        const std::vector<T> e = edge_values<T>();
        for (int64_t i = 0; i < n; ++i) t.data<T>()[i] = e[static_cast<size_t>(i) % e.size()];
      }
    });
    feeds.push_back(compute == info.dtype ? std::move(t) : storage_cast(t, info.dtype));
  }
  try {
    SessionOptions o;
    o.interpret_only = true;
    Session s(std::move(g), o);
    s.run(feeds);
  } catch (const Error&) {
  }
  return 0;
}
