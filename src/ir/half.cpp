// Half-precision storage types: the conversions are Eigen's (Eigen::half is IEEE binary16,
// Eigen::bfloat16 the upper half of a binary32, both rounding to nearest even).
#include "ir/half.h"

#include <Eigen/Core>

namespace sgraph {

float half_to_float(uint16_t bits, DType t) {
  if (t == DType::f16) return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
  SG_CHECK(t == DType::bf16) << "half_to_float of " << dtype_name(t);
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(bits));
}

uint16_t float_to_half(float v, DType t) {
  if (t == DType::f16) return Eigen::numext::bit_cast<uint16_t>(Eigen::half(v));
  SG_CHECK(t == DType::bf16) << "float_to_half to " << dtype_name(t);
  return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(v));
}

Tensor storage_cast(const Tensor& t, DType to) {
  const DType from = t.dtype();
  const auto wide = [](DType d) { return d == DType::f32 || d == DType::f64; };
  SG_CHECK((is_storage(from) && (wide(to) || is_storage(to))) || (wide(from) && is_storage(to)))
      << "storage_cast converts f16/bf16 from or to f32/f64, not " << dtype_name(from) << " to "
      << dtype_name(to);
  Tensor out(to, t.shape());
  const int64_t n = t.numel();
  const auto load = [&](int64_t i) -> float {
    if (from == DType::f32) return t.data<float>()[i];
    if (from == DType::f64) return static_cast<float>(t.data<double>()[i]);
    return half_to_float(static_cast<const uint16_t*>(t.raw_data())[i], from);
  };
  auto* dst = static_cast<uint16_t*>(out.raw_data());
  for (int64_t i = 0; i < n; ++i) {
    const float v = load(i);
    if (to == DType::f32)
      out.data<float>()[i] = v;
    else if (to == DType::f64)
      out.data<double>()[i] = v;
    else
      dst[i] = float_to_half(v, to);
  }
  return out;
}

}  // namespace sgraph
