// A large kernel module compiled on several threads (see compile_split in jit_impl.h).
//
// Optimising and generating code cost about the same per IR instruction whatever the function
// (bench/README.md: ~30 us per instruction on this machine, spread over the whole pipeline), so a
// region of a few thousand instructions is split by function into modules of about equal size,
// each optimised and compiled on a thread of its own, and the objects are linked together.
//
// The unit is a function. Part 0 holds the kernel's entry and every function whose address is
// taken (the loop nests' wrappers handed to sgraph_parallel_for), so no object takes the address
// of code in another; the other functions (the nests' bodies, most of the code) are spread over
// the parts, largest first onto the least loaded part. A function defined in one part and
// called from another is made external (its name already carries the kernel's unique prefix, so
// it cannot clash in the JIT's library); a call across parts is a plain call through the
// linker's stub, which the nests' bodies, called once per chunk of a loop, do not notice. Local
// constants (lookup tables) are copied into every part that reads them, so the optimiser still
// sees their values. A module with any other kind of global is not split.
//
// Each part gets a context of its own (an LLVMContext is not thread-safe): the module is written
// as bitcode once, and each thread but the calling one parses it; every part then drops the
// bodies of the functions it does not own (part 0 from the module itself, on the calling thread).
// Nothing about the code a part compiles to depends on the split but which functions are inlined
// where: a nest whose body sits in another part is called instead of inlined.
#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>
#include <unordered_map>

#include "ir/threads.h"
#include "jit/jit_impl.h"
#include "sgraph/error.h"

namespace sgraph::jit {
namespace {

// Whether a function is used other than as the callee of a call.
bool address_taken(const llvm::Function& f) {
  for (const llvm::Use& u : f.uses()) {
    const auto* call = llvm::dyn_cast<llvm::CallBase>(u.getUser());
    if (!call || !call->isCallee(&u)) return true;
  }
  return false;
}

// What compiling a function costs, roughly: its instructions, those in loops counted kLoopWeight
// times (the vectorisers make several versions of a loop: vector body, remainder, epilogue, and
// the loop passes work on them; straight-line set-up code, most of a kernel's entry, is cheap).
constexpr size_t kLoopWeight = 6;
size_t compile_weight(llvm::Function& f) {
  llvm::DominatorTree dt(f);
  llvm::LoopInfo loops(dt);
  size_t w = 0;
  for (const llvm::BasicBlock& bb : f) w += bb.size() * (loops.getLoopFor(&bb) ? kLoopWeight : 1);
  return w;
}

// The function an instruction belongs to, for a use of a global; nullptr when the user is not an
// instruction (a constant expression or another global's initialiser).
const llvm::Function* user_function(const llvm::User* u) {
  if (const auto* inst = llvm::dyn_cast<llvm::Instruction>(u)) return inst->getFunction();
  return nullptr;
}

// Removes the declarations and local constants nothing in `m` uses any more.
void drop_unused(llvm::Module& m) {
  for (bool erased = true; erased;) {
    erased = false;
    for (llvm::Function& f : llvm::make_early_inc_range(m))
      if (f.isDeclaration() && f.use_empty() && !f.isIntrinsic())
        f.eraseFromParent(), erased = true;
    for (llvm::GlobalVariable& gv : llvm::make_early_inc_range(m.globals()))
      if (gv.hasLocalLinkage() && gv.use_empty()) gv.eraseFromParent(), erased = true;
  }
}

// Compiles part `p` of module `m` (the whole module, which it changes): owner[f] == p for the
// functions the part defines; no owners: the module whole.
std::unique_ptr<llvm::MemoryBuffer> compile_part(llvm::Module* m, int p,
                                                 const std::unordered_map<std::string, int>& owner,
                                                 llvm::TargetMachine& tm,
                                                 const llvm::TargetLibraryInfoImpl& tlii,
                                                 const SplitHooks& hooks, PartTimes& times) {
  if (!owner.empty()) {  // one part of several
    for (llvm::Function& f : *m)
      if (!f.isDeclaration()) {
        const auto it = owner.find(f.getName().str());
        if (it != owner.end() && it->second != p) f.deleteBody();  // a declaration now
      }
    drop_unused(*m);
    std::string problems;
    llvm::raw_string_ostream os(problems);
    SG_CHECK(!llvm::verifyModule(*m, &os)) << "JIT: part " << p << " is invalid: " << problems;
  }
  const auto optimising = Clock::now();
  optimise(*m, tm, tlii);
  times.optimise_ms = ms_since(optimising);
  times.optimised = m->getInstructionCount();
  if (hooks.stream_stores) stream_stores(*m);
  if (hooks.export_locals) export_local_functions(*m);
  const auto generating = Clock::now();
  llvm::orc::SimpleCompiler compiler(tm);
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> object = compiler(*m);
  if (!object)
    SG_FAIL() << "JIT: compiling part " << p << ": " << llvm::toString(object.takeError());
  times.codegen_ms = ms_since(generating);
  return std::move(*object);
}

}  // namespace

std::vector<std::unique_ptr<llvm::TargetMachine>> MachinePool::take(int n) {
  std::vector<std::unique_ptr<llvm::TargetMachine>> out;
  while (static_cast<int>(out.size()) < n) {
    if (!idle.empty()) {
      out.push_back(std::move(idle.back()));
      idle.pop_back();
      continue;
    }
    llvm::Expected<std::unique_ptr<llvm::TargetMachine>> made = jtmb.createTargetMachine();
    if (!made) SG_FAIL() << "JIT: a target machine: " << llvm::toString(made.takeError());
    out.push_back(std::move(*made));
  }
  return out;
}

void MachinePool::give_back(std::vector<std::unique_ptr<llvm::TargetMachine>> machines) {
  for (auto& tm : machines)
    if (tm) idle.push_back(std::move(tm));
}

int split_parts(const llvm::Module& m, size_t instructions, int threads, size_t min_instructions) {
  if (threads < 2 || instructions < min_instructions) return 1;
  for (const llvm::GlobalVariable& gv : m.globals())
    if (!(gv.hasLocalLinkage() && gv.isConstant() && gv.hasInitializer()) ||
        gv.getInitializer()->needsRelocation())
      return 1;
  size_t functions = 0;
  for (const llvm::Function& f : m) functions += !f.isDeclaration();
  const size_t by_size =
      std::max<size_t>(1, instructions / std::max<size_t>(min_instructions / 2, 1));
  return static_cast<int>(std::min({static_cast<size_t>(threads), by_size, functions}));
}

std::vector<std::unique_ptr<llvm::MemoryBuffer>> compile_split(
    llvm::Module& m, const std::string& entry, int parts,
    const std::vector<std::unique_ptr<llvm::TargetMachine>>& machines,
    const llvm::TargetLibraryInfoImpl& tlii, const SplitHooks& hooks,
    std::vector<PartTimes>& times) {
  SG_ASSERT(parts >= 1 && machines.size() >= static_cast<size_t>(parts));
  if (parts == 1) {  // whole: nothing to split, nothing written as bitcode
    times.assign(1, PartTimes{});
    std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects;
    objects.push_back(compile_part(&m, 0, {}, *machines[0], tlii, hooks, times[0]));
    return objects;
  }
  // Owners: the entry and address-taken functions in part 0, the rest largest first.
  std::unordered_map<std::string, int> owner;
  std::vector<size_t> load(static_cast<size_t>(parts), 0);
  std::vector<std::pair<size_t, llvm::Function*>> spread;
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    if (f.getName() == entry || address_taken(f)) {
      owner[f.getName().str()] = 0;
      load[0] += compile_weight(f);
    } else {
      spread.emplace_back(compile_weight(f), &f);
    }
  }
  std::stable_sort(spread.begin(), spread.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [weight, f] : spread) {
    const size_t p = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[f->getName().str()] = static_cast<int>(p);
    load[p] += weight;
  }
  // A function called from a part other than its own is external there, under a name no other
  // kernel has.
  for (llvm::Function& f : m) {
    if (f.isDeclaration() || !f.hasLocalLinkage()) continue;
    const int own = owner.at(f.getName().str());
    bool across = false;
    for (const llvm::User* u : f.users()) {
      const llvm::Function* from = user_function(u);
      across |= !from || owner.at(from->getName().str()) != own;
    }
    if (!across) continue;
    if (!f.getName().starts_with(entry)) f.setName(entry + "." + f.getName().str());
    owner[f.getName().str()] = own;
    f.setLinkage(llvm::GlobalValue::ExternalLinkage);
    f.setVisibility(llvm::GlobalValue::DefaultVisibility);
  }
  llvm::SmallVector<char, 0> bitcode;
  {
    llvm::raw_svector_ostream os(bitcode);
    llvm::WriteBitcodeToFile(m, os);
  }
  const llvm::StringRef bits(bitcode.data(), bitcode.size());
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects(static_cast<size_t>(parts));
  std::vector<std::exception_ptr> failed(static_cast<size_t>(parts));
  times.assign(static_cast<size_t>(parts), PartTimes{});
  const auto run = [&](int p) {
    const auto i = static_cast<size_t>(p);
    try {
      if (p == 0) {  // the module itself, on the calling thread
        objects[i] = compile_part(&m, p, owner, *machines[i], tlii, hooks, times[i]);
        return;
      }
      llvm::LLVMContext ctx;  // a context of its own, parsed from the bitcode
      llvm::Expected<std::unique_ptr<llvm::Module>> part =
          llvm::parseBitcodeFile(llvm::MemoryBufferRef(bits, "part"), ctx);
      if (!part) SG_FAIL() << "JIT: reading a part back: " << llvm::toString(part.takeError());
      objects[i] = compile_part(part->get(), p, owner, *machines[i], tlii, hooks, times[i]);
    } catch (...) {
      failed[i] = std::current_exception();
    }
  };
  // Part 0 on this thread, the others on threads of their own; a part no thread could be started
  // for runs here after part 0.
  std::vector<std::thread> threads;
  int started = 1;
  while (started < parts && try_start_thread(threads, [&run, p = started] { run(p); })) ++started;
  run(0);
  for (int p = started; p < parts; ++p) run(p);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  return objects;
}

}  // namespace sgraph::jit
