// The code-keyed kernel cache (see jit.h): modules are keyed by the SHA-256 of their IR as emitted,
// of the target and of the build that compiles them, and shared by every handle to them.
#include <dlfcn.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <filesystem>
#include <unordered_set>

#include "jit/jit_impl.h"

namespace sgraph::jit {

std::string KernelCache::key_of(const llvm::Module& m, const llvm::TargetMachine& tm,
                                const std::string& build) {
  std::string text = build + "|" + tm.getTargetTriple().str() + "|" + tm.getTargetCPU().str() +
                     "|" + tm.getTargetFeatureString().str() + "\n";
  // The module's bitcode: all of its code, 3-4x faster to write than its text.
  llvm::SmallVector<char, 0> bitcode;
  llvm::raw_svector_ostream os(bitcode);
  llvm::WriteBitcodeToFile(m, os);
  llvm::SHA256 sha;
  sha.update(llvm::arrayRefFromStringRef(text));
  sha.update(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(bitcode.data()), bitcode.size()));
  return llvm::toHex(sha.final(), true);
}

std::string KernelCache::build_identity() {
  std::string id = std::string("sgraph " SGRAPH_VERSION ", LLVM ") + LLVM_VERSION_STRING;
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&KernelCache::build_identity), &info) != 0 &&
      info.dli_fname != nullptr) {
    std::error_code e1, e2;
    const auto size = std::filesystem::file_size(info.dli_fname, e1);
    const auto time = std::filesystem::last_write_time(info.dli_fname, e2);
    if (!e1 && !e2)
      id += ", " + std::to_string(size) + " bytes, " +
            std::to_string(time.time_since_epoch().count());
  }
  return id;
}

bool KernelCache::find(const std::string& key, Jit::Kernel& kernel) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return false;
  kernel = handle_to(it->second, true);
  return true;
}

Jit::Kernel KernelCache::insert(llvm::orc::ResourceTrackerSP tracker, KernelFn fn, std::string key,
                                int parts) {
  auto code = std::make_shared<Code>();
  code->tracker = std::move(tracker);
  code->fn = fn;
  code->parts = parts;
  code->key = std::move(key);
  if (!code->key.empty()) by_key_.emplace(code->key, code);
  return handle_to(std::move(code), false);
}

Jit::Kernel KernelCache::handle_to(std::shared_ptr<Code> code, bool reused) {
  ++code->handles;
  const uint64_t h = next_handle_++;
  Jit::Kernel k{code->fn, h, reused};
  k.parts = code->parts;
  handles_.emplace(h, std::move(code));
  return k;
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
