// The ORC LLJIT wrapper (see jit.h): creating the JIT, adding and removing modules, looking
// kernels up, and turning llvm::Error into sgraph::Error. The rest is in the files jit_impl.h
// names.
#include "jit/jit.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassTimingInfo.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/StringSaver.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>

#include "ir/debug.h"
#include "jit/jit_impl.h"
#include "jit/runtime_symbols.h"
#include "sgraph/error.h"

namespace sgraph::jit {
namespace {

// LLVM options sgraph gives every process's LLVM (see Jit::create), by name.
constexpr const char* kDefaultLlvmOptions[] = {"enable-masked-interleaved-mem-accesses"};

// The one place an llvm::Error becomes an sgraph::Error.
void check(llvm::Error err, std::string_view what) {
  if (err) SG_FAIL() << "JIT: " << what << ": " << llvm::toString(std::move(err));
}
template <class T>
T take(llvm::Expected<T> value, std::string_view what) {
  check(value.takeError(), what);
  return std::move(*value);
}

// An environment variable holding a whole number in [lo, hi], else `fallback` (unset, or logged
// and ignored when it holds anything else).
int64_t env_count(const char* name, int64_t lo, int64_t hi, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (end != v && *end == '\0' && n >= lo && n <= hi) return n;
  SG_LOG(0) << name << "=" << v << " is not a count from " << lo << " to " << hi << "; ignored";
  return fallback;
}

std::atomic<int> compile_delay_ms{0};  // Jit::delay_compiles_for_testing

}  // namespace

struct Jit::Impl {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::unique_ptr<llvm::TargetMachine> tm;  // the optimiser's view of the host
  VectorMath vector_math;
  std::mutex mu;  // guards everything below and compilation
  KernelCache cache;
  std::string build;  // KernelCache::build_identity()
  std::unique_ptr<DiskCache> disk;
  ObjectSink objects;  // the object of the module compiled last
  uint64_t next_code = 1;
  bool keep_ir = false;
  bool perf_map = false;          // SGRAPH_PERF_MAP=1
  std::string dump_ir;            // SGRAPH_DUMP_IR (see dump_emitted)
  bool streaming_stores = false;  // an x86 target (sfence)
  std::string last_ir, last_asm;
  // Modules of at least split_min IR instructions are compiled in parts on up to
  // compile_threads threads (split_compile.cpp).
  int compile_threads = 1;
  size_t split_min = kSplitMin;
  std::optional<MachinePool> machines;  // for compiles outside the mutex, made with the first
  std::set<std::string> compiling;      // keys being compiled outside the mutex
  std::condition_variable compiled;     // one of those compiles ended
  CompileStats stats;                   // Jit::compile_stats
  int at_once = 0;                      // compiles running outside the mutex now
};

std::unique_ptr<Jit> Jit::create(DiskCacheOptions disk) {
  static std::once_flag init;
  // SGRAPH_LLVM_ARGS="-time-passes ...": LLVM's own options, for studying compile time. Read and
  // given to LLVM once per process; every kernel cache key holds them (below).
  static std::string llvm_args;
  std::call_once(init, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    if (const char* args = std::getenv("SGRAPH_LLVM_ARGS")) llvm_args = args;
    {
      llvm::BumpPtrAllocator alloc;
      llvm::StringSaver saver(alloc);
      llvm::SmallVector<const char*, 8> argv{"sgraph"};
      // Options sgraph sets, unless SGRAPH_LLVM_ARGS names them (an option given twice is an
      // error). Masked interleaved groups: a loop whose last iteration is masked (short rows,
      // KernelBuilder::inner_loop) reads the taps of a stride-2 window (MaxPool 2x2/2) as masked
      // wide loads and shuffles, not as gathers, which took ~30% of small_cnn's time at 16
      // images: 0.229 -> 0.176 ms (bench/README.md). LLVM's X86 cost model prices both ways.
      // Only options this LLVM has (a later version may drop one).
      const auto& registered = llvm::cl::getRegisteredOptions();
      for (const char* option : kDefaultLlvmOptions)
        if (registered.count(option) && llvm_args.find(option) == std::string::npos)
          argv.push_back(saver.save(std::string("-") + option).data());
      llvm::cl::TokenizeGNUCommandLine(llvm_args, saver, argv);
      if (!llvm::cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data(), "",
                                             &llvm::errs())) {
        SG_LOG(1) << "SGRAPH_LLVM_ARGS: LLVM did not take all of \"" << llvm_args << "\"";
      }
    }
  });
  auto impl = std::make_unique<Impl>();
  auto jtmb = take(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);  // (see optimise())
  impl->tm = take(jtmb.createTargetMachine(), "creating the target machine");
  impl->lljit = take(llvm::orc::LLJITBuilder()
                         .setJITTargetMachineBuilder(jtmb)
                         .setCompileFunctionCreator(impl->objects.compiler())
                         .create(),
                     "creating the JIT");
  impl->perf_map = add_perf_map(*impl->lljit);
  // (With the perf map, local functions are exported: other code, so another key.)
  impl->build = KernelCache::build_identity() + (impl->perf_map ? ", perf map" : "");
  // LLVM options change the code a module compiles to: part of every key.
  if (!llvm_args.empty()) impl->build += ", LLVM options " + llvm_args;
  if (const char* dir = std::getenv("SGRAPH_DUMP_IR")) impl->dump_ir = dir;
  if (!disk.dir.empty()) impl->disk = std::make_unique<DiskCache>(disk.dir, disk.max_bytes);
  impl->streaming_stores = impl->tm->getTargetTriple().isX86();
  // SGRAPH_COMPILE_THREADS, else the machine's hardware threads, at most kMaxCompileThreads;
  // SGRAPH_COMPILE_SPLIT_MIN (tests and the fuzzers set it low, to split small kernels too).
  impl->compile_threads = static_cast<int>(
      env_count("SGRAPH_COMPILE_THREADS", 1, 64,
                std::clamp(std::thread::hardware_concurrency(), 1u, kMaxCompileThreads)));
  impl->split_min = static_cast<size_t>(
      env_count("SGRAPH_COMPILE_SPLIT_MIN", 0, INT64_MAX, static_cast<int64_t>(kSplitMin)));
  llvm::orc::JITDylib& main = impl->lljit->getMainJITDylib();
  const char prefix = impl->lljit->getDataLayout().getGlobalPrefix();
  // libmvec (loaded permanently: plain -lmvec links are dropped as unneeded), then the process
  // (libm's scalar functions for loop remainders, memcpy, ...).
  auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix);
  if (mvec) {
    main.addGenerator(std::move(*mvec));
  } else {
    SG_LOG(1) << "JIT: libmvec not available, math calls stay scalar: "
              << llvm::toString(mvec.takeError());
  }
  init_vector_math(impl->vector_math, *impl->tm, static_cast<bool>(mvec));
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

namespace {

// Adds code (a module or an object) under a tracker of its own with `add`, then looks `name` up;
// on failure removes the tracker (a failed kernel's symbols stay broken until then).
template <class Add>
llvm::Expected<KernelFn> link(llvm::orc::LLJIT& lljit, const std::string& name,
                              llvm::orc::ResourceTrackerSP& rt, const Add& add) {
  rt = lljit.getMainJITDylib().createResourceTracker();
  llvm::Error added = add(rt);
  llvm::Expected<llvm::orc::ExecutorAddr> addr =
      added ? llvm::Expected<llvm::orc::ExecutorAddr>(std::move(added)) : lljit.lookup(name);
  if (addr) return addr->toPtr<KernelFn>();
  llvm::consumeError(rt->remove());
  return addr.takeError();
}

// SGRAPH_DUMP_IR=DIR: each module as emitted (before optimisation) into DIR/<kernel>.ll, to study
// its compile time offline (`opt -O1 -time-passes`, `llc -time-passes`).
void dump_emitted(const llvm::Module& m, const std::string& dir, const std::string& name) {
  std::error_code ec;
  llvm::raw_fd_ostream out(dir + "/" + name + ".ll", ec);
  if (ec) {
    SG_LOG(1) << "SGRAPH_DUMP_IR: cannot write " << dir << "/" << name << ".ll: " << ec.message();
    return;
  }
  m.print(out, nullptr);
}

}  // namespace

Jit::Kernel Jit::add(std::unique_ptr<llvm::LLVMContext> ctx, std::unique_ptr<llvm::Module> module,
                     const std::string& name, Reuse reuse) {
  // Owned together at once, so the module is always destroyed before its context.
  llvm::orc::ThreadSafeModule tsm(std::move(module), std::move(ctx));
  Impl& j = *impl_;
  const auto start = Clock::now();
  // Verified and keyed before taking the lock (the module is this call's own; what it reads of
  // the JIT does not change after create), so concurrent adds overlap in this too.
  llvm::Module& m = *tsm.getModuleUnlocked();
  m.setTargetTriple(j.lljit->getTargetTriple().str());
  m.setDataLayout(j.lljit->getDataLayout());
  std::string problems;
  llvm::raw_string_ostream os(problems);
  SG_CHECK(!llvm::verifyModule(m, &os)) << "JIT: kernel '" << name << "' is invalid: " << problems;
  std::string key;
  if (reuse != Reuse::never) key = KernelCache::key_of(m, *j.tm, j.build);
  std::unique_lock lock(j.mu);
  // 1. The same code compiled before, in this process, or being compiled by another thread now:
  // then this waits for that compile and takes its kernel (rather than compiling it twice).
  if (!key.empty()) {
    if (Kernel same; j.cache.find(key, same)) return same;
    if (reuse != Reuse::cached_only && j.compiling.count(key)) {
      j.compiled.wait(lock, [&] { return j.compiling.count(key) == 0; });
      if (Kernel same; j.cache.find(key, same)) return same;  // (else that compile failed)
    }
  }
  // The JIT's names: `name` and everything named after it get this code's number, or, for code
  // the disk cache may hold, its key (so an object from the cache defines the name looked up).
  const bool disk = j.disk && reuse != Reuse::never && !j.keep_ir && debug_level() < 3;
  const std::string unique =
      disk ? name + "_k" + key.substr(0, 16) : name + "_" + std::to_string(j.next_code++);
  llvm::orc::ResourceTrackerSP rt;
  // 2. Compiled by an earlier process: its object, from the disk cache.
  if (disk)
    if (std::optional<DiskCache::Entry> e = j.disk->load(key); e && e->symbol == unique) {
      size_t bytes = 0;
      llvm::Expected<KernelFn> fn = link(*j.lljit, unique, rt, [&](auto& tracker) -> llvm::Error {
        for (const std::string& object : e->objects) {
          bytes += object.size();
          if (llvm::Error err = j.lljit->addObjectFile(
                  tracker, llvm::MemoryBuffer::getMemBufferCopy(object, unique)))
            return err;
        }
        return llvm::Error::success();
      });
      if (fn) {
        SG_LOG(2) << "JIT: " << unique << ": loaded from the disk cache in " << ms_since(start)
                  << " ms (" << e->objects.size() << " object(s), " << bytes << " bytes)";
        Kernel k = j.cache.insert(std::move(rt), *fn, key, static_cast<int>(e->objects.size()));
        k.from_disk = true;
        return k;
      }
      SG_LOG(1) << "kernel cache: the entry for " << unique
                << " did not link, compiling it: " << llvm::toString(fn.takeError());
    }
  if (reuse == Reuse::cached_only) return {};
  // 3. Compiled now.
  const auto rename = [&](llvm::GlobalValue& gv) {
    if (!gv.isDeclaration() && gv.getName().starts_with(name))
      gv.setName(unique + gv.getName().substr(name.size()).str());
  };
  for (llvm::Function& f : m) rename(f);
  for (llvm::GlobalVariable& gv : m.globals()) rename(gv);
  const size_t emitted = m.getInstructionCount();
  if (!j.dump_ir.empty()) dump_emitted(m, j.dump_ir, unique);
  if (j.perf_map)  // each loop nest its own symbol in the profile: not inlined into the kernel
    for (llvm::Function& f : m)
      if (!f.isDeclaration() && f.hasLocalLinkage() && !f.getName().ends_with(".body")) {
        f.removeFnAttr(llvm::Attribute::AlwaysInline);
        f.addFnAttr(llvm::Attribute::NoInline);
      }
  // 3a. Optimised and compiled outside the mutex, so that other kernels are looked up, loaded
  // and compiled meanwhile; a large module in parts on several threads. Not when the optimised IR
  // is kept (keep_ir, SGRAPH_DEBUG=3) or LLVM's pass timers run (not thread-safe): 3b.
  if (!j.keep_ir && debug_level() < 3 && !llvm::TimePassesIsEnabled && j.objects.jtmb) {
    const int parts = split_parts(m, emitted, j.compile_threads, j.split_min);
    if (!j.machines) j.machines.emplace(MachinePool{*j.objects.jtmb, {}});
    std::vector<std::unique_ptr<llvm::TargetMachine>> machines = j.machines->take(parts);
    const SplitHooks hooks{j.streaming_stores, j.perf_map};
    if (!key.empty()) j.compiling.insert(key);
    ++j.stats.compiles;
    j.stats.most_at_once = std::max(j.stats.most_at_once, ++j.at_once);
    // Back under the lock: the machines returned, and threads waiting for this code woken.
    const auto done = [&] {
      lock.lock();
      --j.at_once;
      j.machines->give_back(std::move(machines));
      if (!key.empty() && j.compiling.erase(key)) j.compiled.notify_all();
    };
    lock.unlock();
    if (const int ms = compile_delay_ms.load(std::memory_order_relaxed); ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    std::vector<PartTimes> times;
    std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects;
    try {
      objects = compile_split(m, unique, parts, machines, j.vector_math.tlii, hooks, times);
    } catch (...) {
      done();
      throw;
    }
    done();
    // The same code compiled by another thread meanwhile: that kernel (this one is dropped).
    if (!key.empty())
      if (Kernel same; j.cache.find(key, same)) return same;
    const auto linking = Clock::now();
    std::vector<std::string> kept;
    if (disk)
      for (const auto& o : objects) kept.push_back(o->getBuffer().str());
    llvm::Expected<KernelFn> fn = link(*j.lljit, unique, rt, [&](auto& tracker) -> llvm::Error {
      for (auto& o : objects)
        if (llvm::Error err = j.lljit->addObjectFile(tracker, std::move(o))) return err;
      return llvm::Error::success();
    });
    check(fn.takeError(), "compiling kernel '" + unique + "'");
    if (disk) j.disk->store(key, unique, kept);
    if (debug_level() >= 2) {
      std::string each;
      size_t optimised = 0;
      for (const PartTimes& t : times) {
        optimised += t.optimised;
        each += " " + std::to_string(std::lround(t.optimise_ms)) + "+" +
                std::to_string(std::lround(t.codegen_ms));
      }
      if (parts == 1)
        SG_LOG(2) << "JIT: " << unique << ": " << emitted << " IR instructions emitted, "
                  << optimised << " optimised; optimise " << times[0].optimise_ms
                  << " ms, code generation " << times[0].codegen_ms << " ms, linking "
                  << ms_since(linking) << " ms";
      else
        SG_LOG(2) << "JIT: " << unique << ": " << emitted << " IR instructions emitted, "
                  << optimised << " optimised; compiled in " << parts
                  << " parts on as many threads (optimise+code generation ms:" << each
                  << "), linking " << ms_since(linking) << " ms, " << ms_since(start)
                  << " ms in all";
    }
    return j.cache.insert(std::move(rt), *fn, std::move(key), parts);
  }
  // 3b. Whole, under the mutex, through LLJIT's own compile layer, keeping the optimised IR.
  ++j.stats.compiles;
  const auto optimising = Clock::now();
  optimise(m, *j.tm, j.vector_math.tlii);
  const double optimise_ms = ms_since(optimising);
  const size_t optimised = m.getInstructionCount();
  if (j.streaming_stores) stream_stores(m);
  if (j.perf_map) export_local_functions(m);
  if (j.keep_ir || debug_level() >= 3) {
    j.last_ir.clear();
    llvm::raw_string_ostream ir(j.last_ir);
    m.print(ir, nullptr);
    j.last_asm = assembly(m, *j.tm);
    SG_LOG(3) << "kernel " << unique << ", optimised IR:\n"
              << j.last_ir << "kernel " << unique << ", assembly:\n"
              << j.last_asm;
  }
  const auto generating = Clock::now();
  j.objects.last.clear();
  llvm::Expected<KernelFn> fn = link(*j.lljit, unique, rt, [&](auto& tracker) -> llvm::Error {
    return j.lljit->addIRModule(tracker, std::move(tsm));
  });
  check(fn.takeError(), "compiling kernel '" + unique + "'");
  if (disk && !j.objects.last.empty()) j.disk->store(key, unique, {j.objects.last});
  SG_LOG(2) << "JIT: " << unique << ": " << emitted << " IR instructions emitted, " << optimised
            << " optimised; optimise " << optimise_ms << " ms, code generation and linking "
            << ms_since(generating) << " ms";
  return j.cache.insert(std::move(rt), *fn, std::move(key));
}

void Jit::remove(uint64_t handle) {
  std::lock_guard lock(impl_->mu);
  if (llvm::orc::ResourceTrackerSP rt = impl_->cache.release(handle))
    check(rt->remove(), "removing a kernel");
}

size_t Jit::live_kernels() const {
  std::lock_guard lock(impl_->mu);
  return impl_->cache.live();
}

Jit::CompileStats Jit::compile_stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

int Jit::compile_threads() const {
  std::lock_guard lock(impl_->mu);
  return impl_->compile_threads;
}

std::string Jit::target_triple() const { return impl_->lljit->getTargetTriple().str(); }
std::string Jit::data_layout() const {
  return impl_->lljit->getDataLayout().getStringRepresentation();
}

void Jit::delay_compiles_for_testing(int ms) {
  compile_delay_ms.store(ms, std::memory_order_relaxed);
}

void Jit::split_compiles(int threads, size_t min_instructions) {
  std::lock_guard lock(impl_->mu);
  impl_->compile_threads = std::max(threads, 1);
  impl_->split_min = min_instructions;
}

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
