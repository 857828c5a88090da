// The code-keyed kernel cache (see jit.h): modules are keyed by the SHA-256 of their IR as emitted
// and of the target, and shared by every handle to them.
#include <llvm/ADT/StringExtras.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <unordered_set>

#include "jit/jit_impl.h"

namespace sgraph::jit {

std::string KernelCache::key_of(const llvm::Module& m, const llvm::TargetMachine& tm) {
  std::string text = tm.getTargetTriple().str() + "|" + tm.getTargetCPU().str() + "|" +
                     tm.getTargetFeatureString().str() + "\n";
  llvm::raw_string_ostream os(text);
  for (const llvm::GlobalVariable& gv : m.globals()) gv.print(os);
  for (const llvm::Function& f : m) f.print(os);
  os.flush();
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)), true);
}

bool KernelCache::find(const std::string& key, Jit::Kernel& kernel) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return false;
  kernel = handle_to(it->second, true);
  return true;
}

Jit::Kernel KernelCache::insert(llvm::orc::ResourceTrackerSP tracker, KernelFn fn,
                                std::string key) {
  auto code = std::make_shared<Code>();
  code->tracker = std::move(tracker);
  code->fn = fn;
  code->key = std::move(key);
  if (!code->key.empty()) by_key_.emplace(code->key, code);
  return handle_to(std::move(code), false);
}

Jit::Kernel KernelCache::handle_to(std::shared_ptr<Code> code, bool reused) {
  ++code->handles;
  const uint64_t h = next_handle_++;
  const KernelFn fn = code->fn;
  handles_.emplace(h, std::move(code));
  return {fn, h, reused};
}

llvm::orc::ResourceTrackerSP KernelCache::release(uint64_t handle) {
  auto it = handles_.find(handle);
  if (it == handles_.end()) return nullptr;
  std::shared_ptr<Code> code = std::move(it->second);
  handles_.erase(it);
  if (--code->handles > 0) return nullptr;
  if (!code->key.empty()) by_key_.erase(code->key);
  return std::move(code->tracker);
}

size_t KernelCache::live() const {
  std::unordered_set<const void*> codes;
  for (const auto& [h, code] : handles_) codes.insert(code.get());
  return codes.size();
}

}  // namespace sgraph::jit
