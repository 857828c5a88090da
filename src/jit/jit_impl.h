// The parts of the JIT (jit.cpp) that are not ORC itself, one file each: the perf map, the
// streaming-store pass, the libmvec registration, the assembly dump and the code-keyed kernel
// cache. Internal to src/jit; these headers are LLVM's, so nothing here may reach include/.
#pragma once

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/ObjectCache.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "jit/disk_cache.h"
#include "jit/jit.h"

namespace llvm {
class TargetMachine;
}  // namespace llvm

namespace sgraph::jit {

// Compile timings: milliseconds on the steady clock since `t`.
using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// perf_map.cpp. With SGRAPH_PERF_MAP=1, makes the JIT write a line "<address> <size> <name>" to
// /tmp/perf-<pid>.map for every function it links, the file `perf report` reads to name JIT code;
// returns whether it does (it cannot when the JIT does not link with JITLink).
bool add_perf_map(llvm::orc::LLJIT& jit);
// Local functions' names do not reach the linker (nor the perf map): makes them external. Called
// after optimising, so that the profiled code is the same.
void export_local_functions(llvm::Module& m);

// stream_stores.cpp. Makes the vector stores through pointers marked kStreamMetadata non-temporal
// and fences the returns of the functions that have any (x86; see kStreamBytes in jit.h).
void stream_stores(llvm::Module& m);

// vector_math.cpp. glibc's libmvec variants of libm functions, for the loop vectoriser.
struct VectorMath {
  llvm::TargetLibraryInfoImpl tlii;  // what the optimiser knows of the target's libraries
  std::deque<std::string> names;     // the strings tlii's VecDescs point to
};
// tlii for `tm`'s triple, with the libmvec variants of the ISAs `tm` has when `libmvec` (it was
// loaded into the JIT).
void init_vector_math(VectorMath& vm, const llvm::TargetMachine& tm, bool libmvec);
// The new pass manager's O1 with both vectorisers on and loop unrolling off, for `tm`, with
// `tlii`'s library mappings.
void optimise(llvm::Module& m, llvm::TargetMachine& tm, const llvm::TargetLibraryInfoImpl& tlii);

// split_compile.cpp. A large module compiled as several, on threads of their own.
// Into how many parts add() splits `m` (`instructions` IR instructions, verified, not optimised)
// given `threads` compile threads and the smallest module worth splitting; 1: not split.
int split_parts(const llvm::Module& m, size_t instructions, int threads, size_t min_instructions);
struct SplitHooks {
  bool stream_stores = false;  // run stream_stores() on each optimised part
  bool export_locals = false;  // run export_local_functions() on each optimised part
};
struct PartTimes {
  double optimise_ms = 0, codegen_ms = 0;
  size_t optimised = 0;  // IR instructions after optimising
};
// Target machines for compiles outside the JIT's own compile layer, made from the builder LLJIT
// compiles with (its code model and relocation model set for the JIT's linker) and kept for
// later compiles (making one, and its subtarget on its first function, is a cost otherwise). A
// compile takes machines out and gives them back; one machine serves one compile at a time. Not
// thread-safe (the JIT's mutex guards it).
struct MachinePool {
  llvm::orc::JITTargetMachineBuilder jtmb;
  std::vector<std::unique_ptr<llvm::TargetMachine>> idle;
  std::vector<std::unique_ptr<llvm::TargetMachine>> take(int n);  // throws sgraph::Error
  void give_back(std::vector<std::unique_ptr<llvm::TargetMachine>> machines);
};
// Splits `m` by function into `parts` modules (part 0 defines `entry`; 1: the module whole),
// optimises each (optimise()) and compiles it to an object with machines[part], each part on a
// thread of its own; returns the objects, to link together. Changes `m` (functions called across
// parts become external). Throws sgraph::Error.
std::vector<std::unique_ptr<llvm::MemoryBuffer>> compile_split(
    llvm::Module& m, const std::string& entry, int parts,
    const std::vector<std::unique_ptr<llvm::TargetMachine>>& machines,
    const llvm::TargetLibraryInfoImpl& tlii, const SplitHooks& hooks,
    std::vector<PartTimes>& times);

// asm_dump.cpp. The module's machine code as assembly text, generated from a copy (the JIT
// generates its own when the module is added); for debugging only.
std::string assembly(const llvm::Module& m, llvm::TargetMachine& tm);

// kernel_cache.cpp. The compiled modules and the handles to them, each module under the hash of
// its code when it may be reused. Not thread-safe (Jit's mutex guards it).
class KernelCache {
 public:
  // What a kernel's behaviour depends on: its IR as emitted, the target it is compiled for, and
  // `build`: what else shapes the code (the compiler's identity, see build_identity()).
  static std::string key_of(const llvm::Module& m, const llvm::TargetMachine& tm,
                            const std::string& build);
  // The library and LLVM that compile kernels: sgraph's and LLVM's versions and the size and time
  // of the binary holding this code, so a rebuilt sgraph never loads another build's objects.
  static std::string build_identity();
  // A new handle to the kernel compiled for `key`, if there is one.
  bool find(const std::string& key, Jit::Kernel& kernel);
  // Keeps a compiled module (under `key` unless it is empty), linked from `parts` objects, and
  // returns a handle to it.
  Jit::Kernel insert(llvm::orc::ResourceTrackerSP tracker, KernelFn fn, std::string key,
                     int parts = 1);
  // Drops a handle; returns the module's tracker, to remove, when it was the last one.
  llvm::orc::ResourceTrackerSP release(uint64_t handle);
  size_t live() const;  // distinct modules with handles

 private:
  struct Code {
    llvm::orc::ResourceTrackerSP tracker;
    KernelFn fn = nullptr;
    std::string key;  // "" when it is never reused
    int handles = 0;  // live handles to it
    int parts = 1;    // objects linked (Jit::Kernel::parts)
  };
  Jit::Kernel handle_to(std::shared_ptr<Code> code, bool reused);
  std::unordered_map<uint64_t, std::shared_ptr<Code>> handles_;
  std::unordered_map<std::string, std::shared_ptr<Code>> by_key_;
  uint64_t next_handle_ = 1;
};

// disk_cache.cpp. Keeps the object code of the module compiled last, for the disk cache (the JIT
// compiles one module at a time, under its mutex).
class ObjectSink final : public llvm::ObjectCache {
 public:
  void notifyObjectCompiled(const llvm::Module*, llvm::MemoryBufferRef obj) override;
  std::unique_ptr<llvm::MemoryBuffer> getObject(const llvm::Module*) override { return nullptr; }
  // The LLJIT compile function: the host's default compiler, reporting its objects here.
  llvm::orc::LLJITBuilder::CompileFunctionCreator compiler();
  std::string last;
  // The target machine builder LLJIT compiles with (its code model and relocation model set for
  // the JIT's linker), kept when LLJIT creates its compiler, for code compiled beside it.
  std::optional<llvm::orc::JITTargetMachineBuilder> jtmb;
};

}  // namespace sgraph::jit
