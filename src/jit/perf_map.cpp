// SGRAPH_PERF_MAP=1: an ObjectLinkingLayer plugin that appends every executable symbol the JIT
// links (kernels and their outlined nests) to /tmp/perf-<pid>.map. Append-only: removed kernels
// keep their lines.
#include <llvm/ExecutionEngine/JITLink/JITLink.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/IR/Module.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "ir/debug.h"
#include "jit/jit_impl.h"

namespace sgraph::jit {
namespace {

class PerfMap final : public llvm::orc::ObjectLinkingLayer::Plugin {
 public:
  void modifyPassConfig(llvm::orc::MaterializationResponsibility&, llvm::jitlink::LinkGraph&,
                        llvm::jitlink::PassConfiguration& config) override {
    config.PostFixupPasses.push_back([this](llvm::jitlink::LinkGraph& g) {
      std::lock_guard lock(mu_);
      const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
      if (FILE* f = std::fopen(path.c_str(), "a")) {
        for (llvm::jitlink::Symbol* sym : g.defined_symbols())
          if (sym->hasName() && sym->getSize() > 0 &&
              (static_cast<unsigned>(sym->getBlock().getSection().getMemProt()) &
               static_cast<unsigned>(llvm::orc::MemProt::Exec)) != 0)
            std::fprintf(
                f, "%llx %llx %s\n", static_cast<unsigned long long>(sym->getAddress().getValue()),
                static_cast<unsigned long long>(sym->getSize()), sym->getName().str().c_str());
        std::fclose(f);
      }
      return llvm::Error::success();
    });
  }
  llvm::Error notifyFailed(llvm::orc::MaterializationResponsibility&) override {
    return llvm::Error::success();
  }
  llvm::Error notifyRemovingResources(llvm::orc::JITDylib&, llvm::orc::ResourceKey) override {
    return llvm::Error::success();
  }
  void notifyTransferringResources(llvm::orc::JITDylib&, llvm::orc::ResourceKey,
                                   llvm::orc::ResourceKey) override {}

 private:
  std::mutex mu_;
};

}  // namespace

bool add_perf_map(llvm::orc::LLJIT& jit) {
  const char* env = std::getenv("SGRAPH_PERF_MAP");
  if (!env || std::string_view(env) != "1") return false;
  auto* linker = llvm::dyn_cast<llvm::orc::ObjectLinkingLayer>(&jit.getObjLinkingLayer());
  if (!linker) {
    SG_LOG(1) << "JIT: SGRAPH_PERF_MAP ignored: the JIT does not link with JITLink here";
    return false;
  }
  linker->addPlugin(std::make_unique<PerfMap>());
  return true;
}

void export_local_functions(llvm::Module& m) {
  for (llvm::Function& f : m)
    if (!f.isDeclaration() && f.hasLocalLinkage()) f.setLinkage(llvm::Function::ExternalLinkage);
}

}  // namespace sgraph::jit
