// ElementCtx's helpers for the ops' element emitters (see element.h).
#include "ops/element.h"

#include "ops/int_math.h"

#include <llvm/IR/Module.h>

#include <string>
#include <vector>

namespace sgraph::ops {

llvm::Type* element_type(llvm::LLVMContext& ctx, DType t) {
  switch (t) {
    case DType::f32:
      return llvm::Type::getFloatTy(ctx);
    case DType::f64:
      return llvm::Type::getDoubleTy(ctx);
    case DType::i32:
      return llvm::Type::getInt32Ty(ctx);
    case DType::i64:
      return llvm::Type::getInt64Ty(ctx);
    case DType::i8:
    case DType::u8:
      return llvm::Type::getInt8Ty(ctx);
    case DType::boolean:
      return llvm::Type::getInt1Ty(ctx);
    case DType::f16:  // storage types: no kernel computes on them
    case DType::bf16:
    case DType::undefined:
      break;
  }
  return nullptr;
}

llvm::Type* ElementCtx::type(DType t) const { return element_type(b.getContext(), t); }

llvm::Constant* constant_of(llvm::LLVMContext& ctx, DType t, double v) {
  llvm::Type* type = element_type(ctx, t);
  SG_ASSERT(type != nullptr) << "a constant of dtype " << dtype_name(t) << " in a kernel";
  if (is_float(t)) return llvm::ConstantFP::get(type, v);
  if (t == DType::boolean) return llvm::ConstantInt::getBool(ctx, v != 0);
  const int64_t i =
      visit_dtype(t, [&]<class T>() { return static_cast<int64_t>(from_double<T>(v)); });
  return llvm::ConstantInt::get(type, static_cast<uint64_t>(i), true);
}

llvm::Constant* ElementCtx::constant(double v, DType t) const {
  return constant_of(b.getContext(), t, v);
}

// exp for f32, inline: the loop vectoriser then keeps a loop's other work and the exp in one
// vector body, with no call clobbering every vector register. The usual method (Cody and Waite's
// reduction, a minimax polynomial of degree 7, Cephes' coefficients):
//   n = rint(x log2 e), r = x - n ln2 (ln2 in two parts, so r is exact to a few ulp),
//   exp(r) = 1 + r + r^2 P(r) for |r| <= ln2 / 2, exp(x) = exp(r) 2^n.
// x is first clamped to [-104, 88.8]: below, exp is under half the least subnormal (0); above,
// it overflows (inf); NaN passes both compares and stays NaN through the arithmetic. n is
// rounded by adding 1.5 * 2^23 (the sum's last bit is then the units; |n| <= 150), which also
// gives n as an integer from the sum's bits, with no conversion instruction (a saturating
// float-to-int conversion, which would keep NaN defined, is scalarised on x86). 2^n is applied as
// 2^(n/2) 2^(n - n/2), each a normal number for n in [-150, 128], so results near the ends round
// to a subnormal, or to inf, in the multiplication itself.
namespace {

// exp(x) for x in [-104, 88.8] or NaN (see exp_f32); `one_scale`: x is in [-87, 0], where 2^n
// (n >= -126) is a normal number, so one product applies it.
llvm::Value* exp_f32_clamped(llvm::IRBuilderBase& b, llvm::Value* xc, bool one_scale) {
  llvm::Type* t = xc->getType();
  llvm::Type* it = t->getWithNewType(b.getInt32Ty());
  const auto k = [&](double v) { return llvm::ConstantFP::get(t, v); };
  const auto ki = [&](int32_t v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v)); };
  const auto fma = [&](llvm::Value* a, llvm::Value* m, llvm::Value* c) {
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {a, m, c});
  };
  constexpr double kRound = 12582912.0;                           // 1.5 * 2^23
  llvm::Value* sum = fma(xc, k(1.44269504088896341), k(kRound));  // rint(x log2 e) + 1.5 * 2^23
  llvm::Value* nf = b.CreateFSub(sum, k(kRound));
  llvm::Value* n =
      b.CreateSub(b.CreateBitCast(sum, it), ki(static_cast<int32_t>(0x4b400000)));  // its bits
  llvm::Value* r = fma(nf, k(-0.693359375), xc);  // ln 2 = 0.693359375 - 2.12194440e-4
  r = fma(nf, k(2.12194440e-4), r);
  // P(r) = 0.50000001201 + 0.16666665459 r + ... + 1.98756915e-4 r^5, by Estrin's scheme (three
  // products deep, not five: exp's latency bounds loops of several of them).
  llvm::Value* r2 = b.CreateFMul(r, r);
  llvm::Value* q01 = fma(k(1.6666665459e-1), r, k(5.0000001201e-1));
  llvm::Value* q23 = fma(k(8.3334519073e-3), r, k(4.1665795894e-2));
  llvm::Value* q45 = fma(k(1.9875691500e-4), r, k(1.3981999507e-3));
  llvm::Value* p = fma(q45, b.CreateFMul(r2, r2), fma(q23, r2, q01));
  llvm::Value* y = fma(p, r2, b.CreateFAdd(r, k(1.0)));
  const auto pow2 = [&](llvm::Value* e) {  // 2^e for e in [-126, 127]
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, ki(127)), ki(23)), t);
  };
  if (one_scale) return b.CreateFMul(y, pow2(n));
  llvm::Value* n1 = b.CreateAShr(n, ki(1));
  llvm::Value* n2 = b.CreateSub(n, n1);
  return b.CreateFMul(b.CreateFMul(y, pow2(n1)), pow2(n2));
}

}  // namespace

llvm::Value* ElementCtx::exp_f32(llvm::Value* x) const {
  llvm::Type* t = x->getType();
  const auto k = [&](double v) { return llvm::ConstantFP::get(t, v); };
  llvm::Value* xc = b.CreateSelect(b.CreateFCmpOLT(x, k(-104.0)), k(-104.0), x);
  xc = b.CreateSelect(b.CreateFCmpOGT(xc, k(88.8)), k(88.8), xc);
  return exp_f32_clamped(b, xc, /*one_scale=*/false);
}

// For x in [-87, 0]: n = rint(x log2 e) is in [-126, 0], 2^n a normal number, and y 2^n (y in
// [0.7, 1.42]) the normal number exp(x), as exact as the two products of exp_f32 (a product by a
// power of two that stays normal is exact).
llvm::Value* ElementCtx::exp_f32_nonpositive(llvm::Value* x) const {
  return exp_f32_clamped(b, x, /*one_scale=*/true);
}

llvm::Value* ElementCtx::math(std::string_view fn, Operands args) const {
  llvm::Type* t = args[0]->getType();
  SG_ASSERT(t->isFloatTy() || t->isDoubleTy()) << "math function " << fn << " on a non-float";
  if (fn == "exp" && t->isFloatTy()) return exp_f32(args[0]);
  const std::string name = std::string(fn) + (t->isFloatTy() ? "f" : "");
  llvm::Module* m = b.GetInsertBlock()->getModule();
  auto* fty = llvm::FunctionType::get(t, std::vector<llvm::Type*>(args.size(), t), false);
  llvm::FunctionCallee callee = m->getOrInsertFunction(name, fty);
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotAccessMemory();  // no errno: what lets the loop vectoriser use libmvec
    f->setDoesNotThrow();
    f->setWillReturn();
  }
  llvm::CallInst* call =
      b.CreateCall(callee, llvm::ArrayRef<llvm::Value*>(args.data(), args.size()));
  call->setDoesNotAccessMemory();
  return call;
}

llvm::Value* ElementCtx::intrinsic(llvm::Intrinsic::ID id, Operands args) const {
  return b.CreateIntrinsic(id, {args[0]->getType()},
                           llvm::ArrayRef<llvm::Value*>(args.data(), args.size()));
}

}  // namespace sgraph::ops
