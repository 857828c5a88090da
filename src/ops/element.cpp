// ElementCtx's helpers for the ops' element emitters (see element.h).
#include "ops/element.h"

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

llvm::Constant* ElementCtx::constant(double v, DType t) const {
  llvm::Type* ty = type(t);
  if (ty->isFloatingPointTy()) return llvm::ConstantFP::get(ty, v);
  const bool is_signed = t != DType::u8 && t != DType::boolean;
  return llvm::ConstantInt::get(ty, static_cast<uint64_t>(static_cast<int64_t>(v)), is_signed);
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
