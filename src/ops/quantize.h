// Linear quantization shared by QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the
// quantized contractions (MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv): the dtypes a
// quantized tensor may have, the rounding to them, and the quantization parameters (scales, zero
// points), one per tensor or one per row, column or channel.
#pragma once

#include <cmath>
#include <string_view>

#include "ops/int_math.h"
#include "ops/op.h"

namespace sgraph::ops {

// An 8-bit quantized dtype (u8 or i8), or a type error naming input `i`.
void expect_quantized(const TypeCtx& c, size_t i);

// The type rule of MatMulInteger and ConvInteger (a, b, a_zero_point?, b_zero_point?): 8-bit
// operands, each zero point of its operand's dtype, an i32 result.
void types_integer_contraction(TypeCtx& c);

// visit_dtype for the 8-bit quantized dtypes.
template <class F>
decltype(auto) visit_quantized(DType t, F&& f) {
  if (t == DType::u8) return f.template operator()<uint8_t>();
  SG_ASSERT(t == DType::i8) << "quantized kernel called on " << dtype_name(t);
  return f.template operator()<int8_t>();
}

// round(v) (half to even) + zero_point, saturated to Q's range (NaN gives 0).
template <class Q, class F>
Q quantize_value(F v, F zero_point) {
  return saturate_cast<Q>(std::nearbyint(v) + zero_point);
}

// A quantization parameter applying to one tensor (one value) or to each row or column of a matrix
// (`count` values): checks its shape is a scalar, a 1-element vector or a vector of `count` and
// that a zero point, when given, has the shape of the scale. `what` names it in errors
// ("a_scale").
void check_row_param(const Shape& param, int64_t count, std::string_view what,
                     std::string_view along);

// The values of a scale or zero-point tensor (any dtype), as doubles; empty for an absent one.
std::vector<double> param_values(const Tensor* t);

// Checks every scale a result is divided by is positive and finite.
void check_divisor_scales(const std::vector<double>& scales, std::string_view what);

}  // namespace sgraph::ops
