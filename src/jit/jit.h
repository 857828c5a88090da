// Jit: a thin wrapper over LLVM's ORC LLJIT that turns one LLVM module per region into a kernel.
//
//   std::unique_ptr<Jit> jit = Jit::create();
//   auto ctx = std::make_unique<llvm::LLVMContext>();
//   auto m = std::make_unique<llvm::Module>("r0", *ctx);
//   m->setTargetTriple(jit->target_triple()); m->setDataLayout(jit->data_layout());
//   ... emit `void r0(void* const* buffers, const int64_t* dims, void* ctx)` ...
//   Jit::Kernel k = jit->add(std::move(ctx), std::move(m), "r0");
//   k.fn(buffers, nullptr, nullptr);
//   jit->remove(k.handle);        // frees its code once its last user removed it
//
// The kernel cache is the code itself: add() keys each module by a hash of its IR before
// optimisation (every constant, shape, dtype and helper call the emitter baked in is in that text)
// and of the target CPU, so two modules share one kernel exactly when their code is the same —
// nothing outside the emitted code can make two different kernels look alike. Names are the
// JIT's: every function and global whose name starts with `name` gets a per-kernel suffix, so
// callers need not make names unique.
//
// With a disk cache (DiskCacheOptions), a module whose code was compiled by an earlier process
// is not compiled again: its object is loaded and linked (~0.1 ms against tens of ms).
//
// add() verifies the module, optimises it (new pass manager, O1 with the loop and SLP vectorisers
// on, the host's TargetMachine) with glibc's libmvec vector math registered, so loops calling
// expf/logf/tanhf/erff/powf/... become 16-wide (AVX-512) or 8-wide (AVX2) calls, compiles it with
// its own ResourceTracker, and looks the kernel up once. A large module is compiled in parts, each
// on a thread of its own (split_compiles). add and remove may be called from several threads:
// modules are optimised and compiled outside the JIT's lock, so a kernel found in a cache is not
// held up by another thread's compile (with keep_ir or SGRAPH_DEBUG=3, one module compiles at a
// time); two threads adding the same code at once get one kernel. Failures throw sgraph::Error;
// SGRAPH_DEBUG=3 logs each kernel's optimised IR and assembly. No LLVM header is included here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace sgraph::jit {

// Streaming stores. A loop nest writing an output of at least kStreamBytes (far beyond the
// caches: the data is evicted before anyone reads it) marks the pointer it loads for it with
// kStreamMetadata; after optimising, add() makes each vector store through such a pointer whose
// known alignment covers its size non-temporal, and fences the function's returns (x86 only),
// unless the function calls out (vector math: there streaming made loops slower). A non-temporal
// store skips the read-for-ownership of the line it writes: a streamed y = 2x + 1 moved 32 GB/s
// against 23 GB/s with plain stores (a 64 MiB array, this machine).
inline constexpr int64_t kStreamBytes = int64_t{16} << 20;
inline constexpr const char* kStreamMetadata = "sgraph.stream";

// A region kernel: buffers are the region's input data pointers, then its output data pointers
// (Region::inputs, Region::outputs order), then its scratch block when it has one; dims is
// reserved (nullptr); ctx is the plan's KernelContext, which the kernel passes on to
// sgraph_parallel_for (jit/parallel.h).
using KernelFn = void (*)(void* const* buffers, const int64_t* dims, void* ctx);

// The on-disk kernel cache: compiled object code in `dir`, shared by every process using it (see
// disk_cache.cpp), so a second process loads its kernels instead of compiling them. Entries are
// keyed like the in-memory cache (the code, the target CPU and features, sgraph's build and LLVM's
// version); a truncated, corrupt or foreign entry is ignored and rewritten. At most `max_bytes`
// of entries are kept, the least recently used removed first. dir "": no disk cache.
struct DiskCacheOptions {
  std::string dir;
  int64_t max_bytes = int64_t{256} << 20;
};

class Jit {
 public:
  static std::unique_ptr<Jit> create(DiskCacheOptions disk = {});  // throws sgraph::Error
  ~Jit();
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;

  struct Kernel {
    KernelFn fn = nullptr;
    uint64_t handle = 0;
    bool reused = false;     // the same code was compiled before: this is that kernel
    bool from_disk = false;  // loaded from the disk cache, not compiled
    int parts = 1;           // objects its code was compiled into (split_compiles)
  };
  enum class Reuse { same_code, never, cached_only };
  // Optimises `module`, compiles it and returns the function `name` it defines — or, with
  // Reuse::same_code, the kernel of an earlier module with the same code and target (the module
  // is then dropped unoptimised; when another thread is compiling that code, this waits for it
  // and takes its kernel), or that of the disk cache's entry for it (Reuse::never and
  // keep_ir bypass the disk cache). Reuse::cached_only: one of those two, else no kernel (fn
  // nullptr) and nothing compiled. Each returned kernel has a handle of its own. Throws
  // sgraph::Error when the module is invalid or fails to compile (the JIT stays usable).
  Kernel add(std::unique_ptr<llvm::LLVMContext> ctx, std::unique_ptr<llvm::Module> module,
             const std::string& name, Reuse reuse = Reuse::same_code);
  // Drops one handle; the code is freed with the last handle of it, and must not be running
  // then. Unknown handles are ignored.
  void remove(uint64_t handle);
  // Distinct kernels compiled and alive (a reused kernel counts once).
  size_t live_kernels() const;
  // Over the JIT's life: modules compiled (kernels reused or loaded from the disk cache are
  // not), and the most compiled at once by concurrent adds.
  struct CompileStats {
    size_t compiles = 0;
    int most_at_once = 0;
  };
  CompileStats compile_stats() const;

  // For modules being built.
  std::string target_triple() const;
  std::string data_layout() const;

  // Compiling a large module on several threads: a module of at least `min_instructions` IR
  // instructions is split by function into up to `threads` modules of about equal size, compiled
  // concurrently and linked together (jit/split_compile.cpp). Default: kSplitMin, and
  // SGRAPH_COMPILE_THREADS or the machine's hardware threads, at most kMaxCompileThreads.
  static constexpr size_t kSplitMin = 1000;
  static constexpr unsigned kMaxCompileThreads = 8;
  void split_compiles(int threads, size_t min_instructions = kSplitMin);
  // The threads a compile may use (split_compiles): also how many kernels a Session compiles at
  // once.
  int compile_threads() const;

  // Tests: every compile outside the lock (see add) first sleeps this long; 0 turns it off.
  static void delay_compiles_for_testing(int ms);

  // The optimised IR and the assembly of the last kernel added, kept only after keep_ir(true)
  // (tests, tools) or with SGRAPH_DEBUG=3 (which also logs both).
  void keep_ir(bool on);
  std::string last_ir() const;
  std::string last_asm() const;

 private:
  struct Impl;
  explicit Jit(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sgraph::jit
