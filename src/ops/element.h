// ElementCtx: what an op's JIT element emitter (OpDef::element) works with.
//
// The region compiler fuses a region's elementwise ops by composing their element emitters inside
// one loop nest: to make an element of an op's output it first makes the operands' elements at
// the matching (numpy-broadcast) index — loaded from a buffer, or made by another op's emitter —
// and then calls the op's emitter on them:
//
//   llvm::Value* emit_add(ElementCtx& c, Operands x) {
//     return c.is_float() ? c.b.CreateFAdd(x[0], x[1]) : c.b.CreateAdd(x[0], x[1]);
//   }
//
// Elements are scalars in registers: f32 `float`, f64 `double`, integers `iN`, bool `i1`; an
// absent optional operand is nullptr. Emitters write straight-line code (no new basic blocks) and
// return nullptr for dtypes they do not handle, which makes the node not compilable (the region
// compiler probes each emitter before compiling). Included only by op files that define emitters
// and by the region compiler, so LLVM stays out of every other header.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <span>
#include <string_view>

#include "sgraph/graph.h"

namespace sgraph::ops {

using Operands = std::span<llvm::Value* const>;

// The register type of dtype `t` (bool: i1; a byte in memory), nullptr for dtypes the JIT lacks.
llvm::Type* element_type(llvm::LLVMContext& ctx, DType t);

// `v` (an attribute's value) as a constant of dtype `t`, converted as the reference kernels convert
// it (ops::from_double: saturated for an integer `t`, nonzero is true for bool).
llvm::Constant* constant_of(llvm::LLVMContext& ctx, DType t, double v);

struct ElementCtx {
  llvm::IRBuilderBase& b;
  const Node& node;
  std::span<const DType> in;  // the operands' dtypes (undefined for an absent one)
  DType out;                  // the result's dtype

  const Attributes& attrs() const { return node.attrs; }
  bool is_float(size_t i = 0) const { return sgraph::is_float(in[i]); }
  bool is_unsigned(size_t i = 0) const { return in[i] == DType::u8 || in[i] == DType::boolean; }
  // The register type of dtype `t`.
  llvm::Type* type(DType t) const;
  // `v` as a constant of dtype `t` (the result's by default).
  llvm::Constant* constant(double v, DType t) const;
  llvm::Constant* constant(double v) const { return constant(v, out); }
  // fn(args...) for the libm function `fn` ("exp", "log", "tanh", "erf", "pow", ...), its f32
  // ("expf") or f64 ("exp") form by the arguments' type. The call is marked as not touching
  // memory, so the JIT vectorises it with libmvec (see src/jit/jit.cpp for the list). Except
  // f32 exp, which is emitted inline (exp_f32).
  llvm::Value* math(std::string_view fn, Operands args) const;
  // exp(x) for an f32 (or vector of f32) x as inline code: within 2 ulp of the correctly rounded
  // value for results of at least FLT_MIN, NaN kept, inf and 0 at the ends; subnormal results
  // are rounded twice (within one subnormal step).
  llvm::Value* exp_f32(llvm::Value* x) const;
  // exp_f32(x) for x known to be in [-87, 0] or NaN (Softmax's x - max, clamped): the same
  // value with less code, no clamps and 2^n applied in one product (for such x, exp(x) and
  // 2^n are normal numbers).
  llvm::Value* exp_f32_nonpositive(llvm::Value* x) const;
  llvm::Value* math(std::string_view fn, llvm::Value* x) const { return math(fn, Operands(&x, 1)); }
  // An LLVM intrinsic overloaded on its first argument's type (llvm.sqrt, llvm.maximum, ...).
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, Operands args) const;
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) const {
    return intrinsic(id, Operands(&x, 1));
  }
};

}  // namespace sgraph::ops
