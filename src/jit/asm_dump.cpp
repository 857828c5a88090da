// The assembly of a kernel (Jit::last_asm, SGRAPH_DEBUG=3).
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include "jit/jit_impl.h"

namespace sgraph::jit {

std::string assembly(const llvm::Module& m, llvm::TargetMachine& tm) {
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(m);
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return "(this target cannot print assembly)";
  pm.run(*copy);
  return std::string(text.str());
}

}  // namespace sgraph::jit
