// The ORC LLJIT wrapper (see jit.h). Vector math: glibc's libmvec exports
// _ZGV<isa>N<lanes><'v' per argument>_<libm name> (isa 'e' = AVX-512, 'd' = AVX2); each variant the
// host can run is registered as a TargetLibraryInfo VecDesc, so the loop vectoriser replaces a
// call to a libm function that does not access memory by the vector variant.
#include "jit/jit.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/ExecutionEngine/JITLink/JITLink.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "ir/debug.h"
#include "jit/runtime_symbols.h"
#include "sgraph/error.h"

namespace sgraph::jit {
namespace {

// The one place an llvm::Error becomes an sgraph::Error.
void check(llvm::Error err, std::string_view what) {
  if (err) SG_FAIL() << "JIT: " << what << ": " << llvm::toString(std::move(err));
}
template <class T>
T take(llvm::Expected<T> value, std::string_view what) {
  check(value.takeError(), what);
  return std::move(*value);
}

// libm functions with libmvec variants (glibc 2.35+), and their argument counts.
constexpr std::pair<const char*, int> kVectorMath[] = {
    {"exp", 1},   {"log", 1},  {"tanh", 1}, {"erf", 1},   {"pow", 2},   {"expm1", 1},
    {"log1p", 1}, {"sin", 1},  {"cos", 1},  {"tan", 1},   {"asin", 1},  {"acos", 1},
    {"atan", 1},  {"sinh", 1}, {"cosh", 1}, {"asinh", 1}, {"acosh", 1}, {"atanh", 1}};

// With SGRAPH_PERF_MAP=1: every function the JIT links (kernels and their outlined nests) gets a
// line "<address> <size> <name>" in /tmp/perf-<pid>.map, the file `perf report` reads to name
// JIT code. Append-only: removed kernels keep their lines.
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

// See kStreamBytes in jit.h.
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

}  // namespace

struct Jit::Impl {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::unique_ptr<llvm::TargetMachine> tm;  // the optimiser's view of the host
  llvm::TargetLibraryInfoImpl tlii;
  std::deque<std::string> vec_names;  // the strings tlii's VecDescs point to
  bool vector_math = false;
  std::mutex mu;  // guards everything below and compilation
  struct Code {   // one compiled module
    llvm::orc::ResourceTrackerSP tracker;
    KernelFn fn = nullptr;
    std::string key;  // "" when it is never reused
    int handles = 0;  // live handles to it
  };
  std::unordered_map<uint64_t, std::shared_ptr<Code>> handles;
  std::unordered_map<std::string, std::shared_ptr<Code>> by_key;
  uint64_t next_handle = 1, next_code = 1;
  bool keep_ir = false;
  bool perf_map = false;          // SGRAPH_PERF_MAP=1
  bool streaming_stores = false;  // an x86 target (sfence)
  std::string last_ir, last_asm;

  // The module's machine code as assembly text, generated from a copy (the JIT generates its own
  // when the module is added); for debugging only.
  std::string assembly(const llvm::Module& m) {
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(m);
    llvm::SmallString<0> text;
    llvm::raw_svector_ostream os(text);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
      return "(this target cannot print assembly)";
    pm.run(*copy);
    return std::string(text.str());
  }

  // Registers libmvec's variants for the ISAs the host has, for `name`f (f32) and `name` (f64)
  // and their llvm.* intrinsic spellings.
  void add_vector_math() {
    const std::string features = tm->getTargetFeatureString().str();
    std::vector<std::pair<char, int>> isas;  // (libmvec ISA letter, vector bits)
    if (features.find("+avx512f") != std::string::npos) isas.push_back({'e', 512});
    if (features.find("+avx2") != std::string::npos) isas.push_back({'d', 256});
    std::vector<llvm::VecDesc> descs;
    auto keep = [&](std::string s) -> llvm::StringRef { return vec_names.emplace_back(s); };
    for (auto [name, args] : kVectorMath) {
      for (int bits : {32, 64}) {
        const std::string scalar = std::string(name) + (bits == 32 ? "f" : "");
        const std::string intrinsic = "llvm." + std::string(name) + (bits == 32 ? ".f32" : ".f64");
        for (auto [isa, width] : isas) {
          const unsigned lanes = static_cast<unsigned>(width / bits);
          const std::string params = std::to_string(lanes) + std::string(args, 'v');
          const llvm::StringRef vec =
              keep("_ZGV" + std::string(1, isa) + "N" + params + "_" + scalar);
          const llvm::StringRef abi = keep("_ZGV_LLVM_N" + params);
          const auto vf = llvm::ElementCount::getFixed(lanes);
          descs.emplace_back(keep(scalar), vec, vf, false, abi);
          descs.emplace_back(keep(intrinsic), vec, vf, false, abi);
        }
      }
    }
    tlii.addVectorizableFunctions(descs);
    vector_math = !isas.empty();
  }

  // What a kernel's behaviour depends on: its IR as emitted and the target it is compiled for.
  std::string key_of(llvm::Module& m) const {
    std::string text = tm->getTargetTriple().str() + "|" + tm->getTargetCPU().str() + "|" +
                       tm->getTargetFeatureString().str() + "\n";
    llvm::raw_string_ostream os(text);
    for (const llvm::GlobalVariable& gv : m.globals()) gv.print(os);
    for (const llvm::Function& f : m) f.print(os);
    os.flush();
    return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)), true);
  }

  Kernel handle_to(std::shared_ptr<Code> code, bool reused) {
    ++code->handles;
    const uint64_t h = next_handle++;
    const KernelFn fn = code->fn;
    handles.emplace(h, std::move(code));
    return {fn, h, reused};
  }

  void optimise(llvm::Module& m) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions options;
    options.LoopVectorization = true;
    options.SLPVectorization = true;
    llvm::PassBuilder pb(tm.get(), options);
    // Registered before the defaults, so the pipeline sees the libmvec mappings.
    fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    // O1 with both vectorisers on (the options above): the kernels ran as fast as at O3 in every
    // benchmark (bench/README.md), and compiled 1.2-1.4x faster (tiny_encoder_block's 54-op
    // region 320-400 -> 225-260 ms, ppocr_mobile_v2_cls's 211-op one 1.07-1.17 -> 0.91-0.99 s).
    pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O1).run(m, mam);
  }
};

std::unique_ptr<Jit> Jit::create() {
  static std::once_flag init;
  std::call_once(init, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto impl = std::make_unique<Impl>();
  auto jtmb = take(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);  // (see optimise())
  impl->tm = take(jtmb.createTargetMachine(), "creating the target machine");
  impl->lljit =
      take(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(), "creating the JIT");
  if (const char* env = std::getenv("SGRAPH_PERF_MAP"); env && std::string_view(env) == "1") {
    if (auto* linker =
            llvm::dyn_cast<llvm::orc::ObjectLinkingLayer>(&impl->lljit->getObjLinkingLayer())) {
      linker->addPlugin(std::make_unique<PerfMap>());
      impl->perf_map = true;
    } else {
      SG_LOG(1) << "JIT: SGRAPH_PERF_MAP ignored: the JIT does not link with JITLink here";
    }
  }
  impl->streaming_stores = impl->tm->getTargetTriple().isX86();
  impl->tlii = llvm::TargetLibraryInfoImpl(impl->tm->getTargetTriple());
  llvm::orc::JITDylib& main = impl->lljit->getMainJITDylib();
  const char prefix = impl->lljit->getDataLayout().getGlobalPrefix();
  // libmvec (loaded permanently: plain -lmvec links are dropped as unneeded), then the process
  // (libm's scalar functions for loop remainders, memcpy, ...).
  auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix);
  if (mvec) {
    main.addGenerator(std::move(*mvec));
    impl->add_vector_math();
  } else {
    SG_LOG(1) << "JIT: libmvec not available, math calls stay scalar: "
              << llvm::toString(mvec.takeError());
  }
  llvm::orc::SymbolMap helpers;
  for (const auto& [name, address] : runtime_symbols())
    helpers[impl->lljit->mangleAndIntern(name)] = {
        llvm::orc::ExecutorAddr::fromPtr(address),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  check(main.define(llvm::orc::absoluteSymbols(std::move(helpers))), "defining runtime helpers");
  main.addGenerator(take(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix),
                         "searching the process for symbols"));
  return std::unique_ptr<Jit>(new Jit(std::move(impl)));
}

Jit::Jit(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Jit::~Jit() = default;

Jit::Kernel Jit::add(std::unique_ptr<llvm::LLVMContext> ctx, std::unique_ptr<llvm::Module> module,
                     const std::string& name, Reuse reuse) {
  // Owned together at once, so the module is always destroyed before its context.
  llvm::orc::ThreadSafeModule tsm(std::move(module), std::move(ctx));
  std::lock_guard lock(impl_->mu);
  Impl& j = *impl_;
  llvm::Module& m = *tsm.getModuleUnlocked();
  m.setTargetTriple(j.lljit->getTargetTriple().str());
  m.setDataLayout(j.lljit->getDataLayout());
  std::string problems;
  llvm::raw_string_ostream os(problems);
  SG_CHECK(!llvm::verifyModule(m, &os)) << "JIT: kernel '" << name << "' is invalid: " << problems;
  std::string key;
  if (reuse == Reuse::same_code) {
    key = j.key_of(m);
    if (auto it = j.by_key.find(key); it != j.by_key.end()) return j.handle_to(it->second, true);
  }
  // The JIT's names: `name` and everything named after it get this code's number.
  const std::string unique = name + "_" + std::to_string(j.next_code++);
  const auto rename = [&](llvm::GlobalValue& gv) {
    if (!gv.isDeclaration() && gv.getName().starts_with(name))
      gv.setName(unique + gv.getName().substr(name.size()).str());
  };
  for (llvm::Function& f : m) rename(f);
  for (llvm::GlobalVariable& gv : m.globals()) rename(gv);
  j.optimise(m);
  if (j.streaming_stores) stream_stores(m);
  if (j.perf_map)  // local functions' names do not reach the linker: make them global, after
    for (llvm::Function& f : m)  // optimising, so that the profiled code is the same
      if (!f.isDeclaration() && f.hasLocalLinkage()) f.setLinkage(llvm::Function::ExternalLinkage);
  if (j.keep_ir || debug_level() >= 3) {
    j.last_ir.clear();
    llvm::raw_string_ostream ir(j.last_ir);
    m.print(ir, nullptr);
    j.last_asm = j.assembly(m);
    SG_LOG(3) << "kernel " << unique << ", optimised IR:\n"
              << j.last_ir << "kernel " << unique << ", assembly:\n"
              << j.last_asm;
  }
  llvm::orc::ResourceTrackerSP rt = j.lljit->getMainJITDylib().createResourceTracker();
  llvm::Error added = j.lljit->addIRModule(rt, std::move(tsm));
  llvm::Expected<llvm::orc::ExecutorAddr> addr =
      added ? llvm::Expected<llvm::orc::ExecutorAddr>(std::move(added)) : j.lljit->lookup(unique);
  if (!addr) {
    llvm::Error err = addr.takeError();
    llvm::consumeError(rt->remove());  // a failed kernel's symbols stay broken until removed
    check(std::move(err), "compiling kernel '" + unique + "'");
  }
  auto code = std::make_shared<Impl::Code>();
  code->tracker = std::move(rt);
  code->fn = addr->toPtr<KernelFn>();
  code->key = key;
  if (!key.empty()) j.by_key.emplace(key, code);
  return j.handle_to(std::move(code), false);
}

void Jit::remove(uint64_t handle) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->handles.find(handle);
  if (it == impl_->handles.end()) return;
  std::shared_ptr<Impl::Code> code = std::move(it->second);
  impl_->handles.erase(it);
  if (--code->handles > 0) return;
  if (!code->key.empty()) impl_->by_key.erase(code->key);
  check(code->tracker->remove(), "removing a kernel");
}

size_t Jit::live_kernels() const {
  std::lock_guard lock(impl_->mu);
  std::unordered_set<const void*> codes;
  for (const auto& [h, code] : impl_->handles) codes.insert(code.get());
  return codes.size();
}

std::string Jit::target_triple() const { return impl_->lljit->getTargetTriple().str(); }
std::string Jit::data_layout() const {
  return impl_->lljit->getDataLayout().getStringRepresentation();
}
bool Jit::has_vector_math() const { return impl_->vector_math; }

void Jit::keep_ir(bool on) {
  std::lock_guard lock(impl_->mu);
  impl_->keep_ir = on;
}
std::string Jit::last_ir() const {
  std::lock_guard lock(impl_->mu);
  return impl_->last_ir;
}
std::string Jit::last_asm() const {
  std::lock_guard lock(impl_->mu);
  return impl_->last_asm;
}

}  // namespace sgraph::jit
