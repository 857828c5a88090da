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

llvm::Value* ElementCtx::math(std::string_view fn, Operands args) const {
  llvm::Type* t = args[0]->getType();
  SG_ASSERT(t->isFloatTy() || t->isDoubleTy()) << "math function " << fn << " on a non-float";
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
