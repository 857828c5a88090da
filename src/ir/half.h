// Conversions between f32 and the half-precision storage types (DType::f16, DType::bf16), one
// value at a time: round to nearest even, NaN stays NaN, overflow gives infinity.
#pragma once

#include <cstdint>

#include "sgraph/tensor.h"

namespace sgraph {

float half_to_float(uint16_t bits, DType t);  // t: f16 or bf16
uint16_t float_to_half(float v, DType t);

}  // namespace sgraph
