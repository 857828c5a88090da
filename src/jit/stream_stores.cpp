// The streaming-store pass (see kStreamBytes in jit.h), run by Jit::add after optimising.
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>

#include "jit/jit_impl.h"

namespace sgraph::jit {

void stream_stores(llvm::Module& m) {
  llvm::MDNode* nontemporal =
      llvm::MDNode::get(m.getContext(), llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(
                                            llvm::Type::getInt32Ty(m.getContext()), 1)));
  for (llvm::Function& f : m) {
    // Not in loops calling functions (libmvec's exp): there the stores are not the bottleneck and
    // streaming them made the loop slower (a chain with exp 7.8 -> 9.4 ms, softmax similar).
    bool calls = false;
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& i : bb)
        if (auto* call = llvm::dyn_cast<llvm::CallBase>(&i))
          calls = calls || !call->getCalledFunction() || !call->getCalledFunction()->isIntrinsic();
    if (calls) continue;
    bool any = false;
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& i : bb) {
        auto* st = llvm::dyn_cast<llvm::StoreInst>(&i);
        if (!st || !st->getValueOperand()->getType()->isVectorTy()) continue;
        const auto* base =
            llvm::dyn_cast<llvm::LoadInst>(llvm::getUnderlyingObject(st->getPointerOperand()));
        if (!base || !base->getMetadata(kStreamMetadata)) continue;
        const llvm::TypeSize size =
            m.getDataLayout().getTypeStoreSize(st->getValueOperand()->getType());
        if (size.isScalable() || st->getAlign().value() < size.getFixedValue()) continue;
        st->setMetadata(llvm::LLVMContext::MD_nontemporal, nontemporal);
        any = true;
      }
    if (!any) continue;
    llvm::Function* sfence = llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::x86_sse_sfence);
    for (llvm::BasicBlock& bb : f)
      if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(bb.getTerminator()))
        llvm::CallInst::Create(sfence, "", ret);
  }
}

}  // namespace sgraph::jit
