// Vector math and the optimisation pipeline. glibc's libmvec exports
// _ZGV<isa>N<lanes><'v' per argument>_<libm name> (isa 'e' = AVX-512, 'd' = AVX2); each variant the
// host can run is registered as a TargetLibraryInfo VecDesc, so the loop vectoriser replaces a
// call to a libm function that does not access memory by the vector variant.
#include <llvm/IR/Module.h>
#include <llvm/IR/PassTimingInfo.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/StandardInstrumentations.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>

#include <optional>
#include <utility>
#include <vector>

#include "jit/jit_impl.h"

namespace sgraph::jit {
namespace {

// libm functions with libmvec variants (glibc 2.35+), and their argument counts.
constexpr std::pair<const char*, int> kVectorMath[] = {
    {"exp", 1},   {"log", 1},  {"tanh", 1}, {"erf", 1},   {"pow", 2},   {"expm1", 1},
    {"log1p", 1}, {"sin", 1},  {"cos", 1},  {"tan", 1},   {"asin", 1},  {"acos", 1},
    {"atan", 1},  {"sinh", 1}, {"cosh", 1}, {"asinh", 1}, {"acosh", 1}, {"atanh", 1}};

}  // namespace

// Registers libmvec's variants for the ISAs the host has, for `name`f (f32) and `name` (f64)
// and their llvm.* intrinsic spellings.
void init_vector_math(VectorMath& vm, const llvm::TargetMachine& tm, bool libmvec) {
  vm.tlii = llvm::TargetLibraryInfoImpl(tm.getTargetTriple());
  if (!libmvec) return;
  const std::string features = tm.getTargetFeatureString().str();
  std::vector<std::pair<char, int>> isas;  // (libmvec ISA letter, vector bits)
  if (features.find("+avx512f") != std::string::npos) isas.push_back({'e', 512});
  if (features.find("+avx2") != std::string::npos) isas.push_back({'d', 256});
  std::vector<llvm::VecDesc> descs;
  auto keep = [&](std::string s) -> llvm::StringRef { return vm.names.emplace_back(s); };
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
  vm.tlii.addVectorizableFunctions(descs);
}

void optimise(llvm::Module& m, llvm::TargetMachine& tm, const llvm::TargetLibraryInfoImpl& tlii) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions options;
  options.LoopVectorization = true;
  options.SLPVectorization = true;
  // No loop unrolling (neither full unrolling of constant trip counts nor partial unrolling after
  // vectorising; the vectoriser still interleaves): measured on every model in ../shared/testdata,
  // kernels ran as fast or faster without it (cnn_bn_gap 0.015 -> 0.011 ms, silero_vad_legacy
  // 0.122 -> 0.111 ms) and compiled 2-5x faster (cnn_bn_gap's regions 744 -> 141 ms), since
  // unrolled nests are mostly more code for the later passes and for instruction selection.
  options.LoopUnrolling = false;
  // With SGRAPH_LLVM_ARGS=-time-passes, the passes' timers (printed when the process ends).
  std::optional<llvm::PassInstrumentationCallbacks> pic;
  std::optional<llvm::StandardInstrumentations> si;
  if (llvm::TimePassesIsEnabled) {
    pic.emplace();
    si.emplace(m.getContext(), /*DebugLogging=*/false);
    si->registerCallbacks(*pic, &mam);
  }
  llvm::PassBuilder pb(&tm, options, std::nullopt, pic ? &*pic : nullptr);
  // Registered before the defaults, so the pipeline sees the libmvec mappings.
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  // O1 with both vectorisers on and no unrolling (the options above): the kernels ran as fast as
  // at O3 in every benchmark (bench/README.md), and compiled 1.2-1.4x faster (tiny_encoder_block's
  // 54-op region 320-400 -> 225-260 ms, ppocr_mobile_v2_cls's 211-op one 1.07-1.17 -> 0.91-0.99 s).
  // Not O1's whole module pipeline: a kernel module is one external function and the nests it
  // calls, inlined by the always-inliner or never (KernelBuilder::call_serial; a nest called
  // through sgraph_parallel_for cannot be inlined), so its interprocedural passes (IPSCCP,
  // called-value propagation, GlobalOpt, function attributes, the CGSCC inliner) have nothing to
  // do; run on ppocr's 221-op region they took a quarter of the optimisation time. Without them:
  // compile 0.90-0.99x on every model of ../shared/testdata, kernels as fast (bench/README.md).
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::AlwaysInlinerPass());
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(pb.buildFunctionSimplificationPipeline(
      llvm::OptimizationLevel::O1, llvm::ThinOrFullLTOPhase::None)));
  mpm.addPass(pb.buildModuleOptimizationPipeline(llvm::OptimizationLevel::O1,
                                                 llvm::ThinOrFullLTOPhase::None));
  mpm.run(m, mam);
}

}  // namespace sgraph::jit
