// KernelBuilder: the kernel's frame, its loop nests, element generation, loads and stores.
#include "jit/kernel_builder.h"

#include <llvm/IR/StructuralHash.h>

#include <algorithm>

#include "ir/debug.h"
#include "jit/host.h"
#include "jit/jit.h"
#include "jit/parallel.h"
#include "ops/element.h"
#include "ops/op.h"

namespace sgraph::jit {

using llvm::Value;
using ops::memory_type;
using ops::node_str;

KernelBuilder::KernelBuilder(const Graph& g, const Region& r, const std::vector<Shape>& shapes,
                             llvm::Module& m)
    : ops::Emitter(b_, g), r_(r), shapes_(shapes), ctx_(m.getContext()), m_(m), b_(ctx_) {
  producer_.assign(g.values.size(), -1);
  for (int32_t n : r.nodes) producer_[g.nodes[n].outputs[0]] = n;
  slot_of_.assign(g.values.size(), -1);
}

void KernelBuilder::build(const std::string& name) {
  name_ = name;
  llvm::Type* ptr = b_.getPtrTy();
  auto* kty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, ptr}, false);
  kernel_ = llvm::Function::Create(kty, llvm::Function::ExternalLinkage, name, m_);
  kernel_->addFnAttr(llvm::Attribute::NoUnwind);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", kernel_));
  for (ValueId v : r_.inputs)
    slot_of_[v] = add_slot(memory_type(ctx_, graph.values[v].dtype), true, false);
  for (ValueId v : r_.outputs) {
    llvm::Type* t = memory_type(ctx_, graph.values[v].dtype);
    slot_of_[v] = add_slot(t, false, true);
    if (dynamic() && symbolic(v)) continue;  // (not streamed: its size is not known)
    const auto bytes =
        numel(shapes_.at(v)) * static_cast<int64_t>(m_.getDataLayout().getTypeAllocSize(t));
    slots_.back().stream = bytes >= kStreamBytes;
  }
  const size_t nargs = slots_.size();
  if (dynamic()) {  // the symbols: a slot for the nests, loaded in the kernel for its own use
    dims_slot_ = add_slot(b_.getInt64Ty(), true, false);
    local_alloc_[dims_slot_] = kernel_->getArg(1);
    load_symbols(kernel_->getArg(1), kernel_syms_);
  }
  // Kernel-local buffers and the kernel's pointers, then one nest per materialised value in the
  // region's (topological) node order, then one per output.
  std::vector<const Node*> mat_nodes;
  for (int32_t i : r_.nodes)
    if (const ops::Lowering* l = ops::op_def(graph.nodes[i].op).lowering; l && l->materialise)
      mat_nodes.push_back(&graph.nodes[i]);
  // Values several nests would each make again are held before the nodes plan their buffers, so
  // that a contraction reads such an operand where it is held instead of copying it.
  const std::vector<std::pair<ValueId, int>> values = shared_values(mat_nodes);
  for (const auto& [v, after] : values) hold_whole(v);
  for (const Node* n : mat_nodes)
    if (const ops::Lowering* l = ops::op_def(n->op).lowering; l->allocate) l->allocate(*this, *n);
  for (ValueId v : shared_windows(mat_nodes)) {
    hold_whole(v);
    shared_[producer_[v]] = v;
  }
  allocate_heap();
  for (size_t i = 0; i < slots_.size(); ++i)
    kernel_ptrs_.push_back(
        i < nargs ? b_.CreateLoad(ptr, b_.CreateConstInBoundsGEP1_64(ptr, kernel_->getArg(0), i))
                  : local_alloc_[i]);
  placed_ = true;
  const auto fill_values = [&](int after) {
    for (const auto& [v, a] : values)
      if (a == after) {
        coalesced_.clear();
        nest_for_ = "value '" + graph.values[v].name + "', shared";
        fill_shared(v);
      }
  };
  fill_values(-1);
  for (size_t i = 0; i < mat_nodes.size(); ++i) {
    const Node* n = mat_nodes[i];
    coalesced_.clear();
    nest_for_ = node_str(*n);
    ops::op_def(n->op).lowering->materialise(*this, *n);
    if (auto it = shared_.find(static_cast<int32_t>(n - graph.nodes.data())); it != shared_.end())
      fill_shared(it->second);
    fill_values(static_cast<int>(i));
  }
  for (ValueId out : r_.outputs) {
    SG_ASSERT(producer_[out] >= 0)
        << "region output '" << graph.values[out].name << "' is not made by a node of the region";
    nest_for_ = "region output '" + graph.values[out].name + "'";
    emit_output_nest(out);
  }
  b_.CreateRetVoid();
  inline_nests();
  pack_heap();
  pack_sym_heap();
}

void KernelBuilder::used(int slot) {
  const auto [it, fresh] = live_.emplace(slot, std::make_pair(nests_, nests_));
  if (!fresh) it->second.second = nests_;
}

void KernelBuilder::used_by_call(std::initializer_list<Value*> pointers) {
  for (Value* p : pointers)
    for (size_t slot = 0; slot < kernel_ptrs_.size(); ++slot)
      if (kernel_ptrs_[slot] == p) used(static_cast<int>(slot));
}

// Places the scratch block's buffers by their lifetimes: two buffers share bytes when no nest or
// runtime call between the first and the last use of one uses the other (the kernel runs its
// nests and calls one after another). A buffer's uses are the nests whose bodies use its pointer
// and the runtime calls given it (frame_pointer, call_gemm), each at the number of nests made so
// far, so a call and the nest before it count as at once. Largest buffers first, each at the lowest
// offset clear of the live ones placed. text_encoder at 4x64: 73 buffers, 25.4 MB laid end to end.
// Symbolic-size buffers follow, placed by pack_sym_heap.
void KernelBuilder::pack_heap() {
  if (heap_parts_.empty()) return;
  std::vector<size_t> order(heap_parts_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return heap_parts_[x].bytes > heap_parts_[y].bytes; });
  const int64_t before = heap_bytes_;
  heap_bytes_ = 0;
  std::vector<const HeapPart*> placed;
  for (size_t i : order) {
    HeapPart& h = heap_parts_[i];
    std::vector<std::pair<int64_t, int64_t>> taken;  // [begin, end) of live placed buffers
    for (const HeapPart* q : placed)
      if (live_together(h.slot, q->slot)) taken.emplace_back(q->offset, q->offset + q->bytes);
    std::sort(taken.begin(), taken.end());
    int64_t at = 0;
    for (const auto& [b, e] : taken) {
      if (at + h.bytes <= b) break;
      at = std::max(at, e);
    }
    h.offset = at;
    h.at->setOperand(1, i64(at));
    heap_bytes_ = std::max(heap_bytes_, at + h.bytes);
    placed.push_back(&h);
  }
  SG_LOG(2) << name_ << ": " << heap_parts_.size() << " local buffers in a scratch block of "
            << heap_bytes_ << " bytes (" << before << " laid end to end)";
}

std::pair<int, int> KernelBuilder::life(int slot) const {
  const auto it = live_.find(slot);
  return it == live_.end() ? std::make_pair(0, -1) : it->second;  // (never used: empty)
}

// Whether the two slots' buffers are both live at some nest or call (never, if one is never used).
bool KernelBuilder::live_together(int x, int y) const {
  const auto [xf, xl] = life(x);
  const auto [yf, yl] = life(y);
  return xf <= xl && yf <= yl && xf <= yl && yf <= xl;
}

// Places a dynamic kernel's symbolic-size buffers after the static parts by their lifetimes, as
// pack_heap does, but with sizes known only when the kernel runs: the buffers are put in groups
// whose members are never live at once, each group one part of the block as large as its largest
// member (the kernel takes the maximum of its members' sizes, the runtime likewise, see
// scratch_need). In order of first use, a buffer joins a group holding a buffer of the same size,
// else any group it fits in (max(a, b) <= a + b: joining never costs more than a part of its own),
// else starts one.
void KernelBuilder::pack_sym_heap() {
  if (sym_parts_.empty()) return;
  std::vector<size_t> order(sym_parts_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return life(sym_parts_[x].slot).first < life(sym_parts_[y].slot).first;
  });
  std::vector<std::vector<size_t>> groups;
  for (size_t i : order) {
    const auto fits = [&](const std::vector<size_t>& group) {
      return std::none_of(group.begin(), group.end(), [&](size_t j) {
        return live_together(sym_parts_[i].slot, sym_parts_[j].slot);
      });
    };
    std::vector<size_t>* into = nullptr;
    for (auto& group : groups)
      if (fits(group)) {
        const bool same = std::any_of(group.begin(), group.end(), [&](size_t j) {
          return sym_parts_[j].size == sym_parts_[i].size;
        });
        if (same || !into) into = &group;
        if (same) break;
      }
    if (into)
      into->push_back(i);
    else
      groups.push_back({i});
  }
  b_.SetInsertPoint(sym_parts_.front().at);
  Value* at = i64(heap_bytes_);
  sym_groups_.clear();
  for (const auto& group : groups) {
    Value* bytes = sym_parts_[group.front()].bytes;
    sym_groups_.emplace_back();
    for (size_t j : group) {
      if (j != group.front())
        bytes = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umax, bytes, sym_parts_[j].bytes);
      sym_parts_[j].at->setOperand(1, at);
      sym_groups_.back().push_back(sym_parts_[j].size);
    }
    at = b_.CreateAdd(at, bytes, "", true, true);
  }
  SG_LOG(2) << name_ << ": " << sym_parts_.size() << " local buffers of symbolic size in "
            << groups.size() << " parts of the scratch block";
}

// The outputs of nodes made inline as windows (Lowering::made_inline) that more than one nest
// reads: each nest would compute every tap again (a squeeze-excitation block reads its depthwise
// conv's output in the pooling nest and again in the nest scaling it). A nest reads the values
// its body computes: those it stores (a region output; a node's own nests, e.g. a reduction or a
// copy, reading its inputs) and, through elements made inline, their operands, down to values
// read from buffers.
std::vector<ValueId> KernelBuilder::shared_windows(const std::vector<const Node*>& mat_nodes) {
  const auto made_inline = [this](const Node& n) {
    const ops::Lowering* l = ops::op_def(n.op).lowering;
    return l && l->made_inline ? l->made_inline(*this, n) : ops::MadeInline::no;
  };
  std::vector<int> readers(graph.values.size(), 0), last(graph.values.size(), -1);
  int nest = 0;
  const auto reach = [&](std::vector<ValueId> todo) {
    ++nest;
    while (!todo.empty()) {
      const ValueId u = todo.back();
      todo.pop_back();
      if (u == kNoValue || producer_[u] < 0 || held(u) || last[u] == nest) continue;
      last[u] = nest;
      ++readers[u];
      const Node& n = graph.nodes[producer_[u]];
      const ops::Lowering* l = ops::op_def(n.op).lowering;
      if (l && l->materialise && made_inline(n) != ops::MadeInline::from_input) continue;
      todo.insert(todo.end(), n.inputs.begin(), n.inputs.end());
    }
  };
  for (ValueId o : r_.outputs) reach({o});
  for (const Node* n : mat_nodes)
    if (made_inline(*n) != ops::MadeInline::from_input) reach(n->inputs);
  std::vector<ValueId> shared;
  for (const Node* n : mat_nodes)
    if (made_inline(*n) != ops::MadeInline::no && readers[n->outputs[0]] > 1) {
      shared.push_back(n->outputs[0]);
      SG_LOG(2) << name_ << ": " << node_str(*n) << "'s output, read by " << readers[n->outputs[0]]
                << " nests, computed once into a buffer";
    }
  return shared;
}

// Values made inline (elementwise ops, index ops, a LayerNormalization's output) that several
// nests each make again, at a cost that sharing repays: computed once, into a buffer those nests
// read. A transformer's residual stream is the case: each block's LayerNormalization reads it in
// its statistics nest and again in the nest that normalises it into a GEMM operand, and the next
// residual Add reads it too, so made inline every block's nests made it again from the first
// block's input on, each value at a cost growing with the blocks before it (the recognizer's last
// LayerNormalization summed eight buffers per element, in each of its passes). Chosen greedily:
// the value whose sharing saves most, (readers - 1) * cost, until none saves kMinSaving; the cost
// of an element counts the values its making computes or loads, down to values read from buffers
// (region inputs, materialised outputs, values already shared). Returned with the index of the
// last materialised node (of `mat_nodes`) their elements need, -1 for none: each is filled right
// after that node's nests, in the region's node order.
std::vector<std::pair<ValueId, int>> KernelBuilder::shared_values(
    const std::vector<const Node*>& mat_nodes) {
  constexpr int64_t kMinSaving = 8;
  const size_t nv = graph.values.size();
  std::vector<int> mat_index(graph.nodes.size(), -1);
  for (size_t i = 0; i < mat_nodes.size(); ++i)
    mat_index[static_cast<size_t>(mat_nodes[i] - graph.nodes.data())] = static_cast<int>(i);
  std::vector<bool> shared(nv, false);
  // The values making u's element makes (or loads) again: none for a value read from a buffer.
  const auto operands = [&](ValueId u) -> std::vector<ValueId> {
    if (producer_[u] < 0 || shared[u]) return {};
    const Node& n = graph.nodes[producer_[u]];
    const ops::Lowering* l = ops::op_def(n.op).lowering;
    if (l && l->materialise)
      return l->inline_reads ? l->inline_reads(*this, n) : std::vector<ValueId>{};
    return n.inputs;
  };
  // The values a nest starting from `roots` makes, each once (a nest's elements are cached).
  std::vector<int> mark(nv, -1);
  int walk = 0;
  const auto visit = [&](std::vector<ValueId> todo, const std::function<void(ValueId)>& f) {
    ++walk;
    while (!todo.empty()) {
      const ValueId u = todo.back();
      todo.pop_back();
      if (u == kNoValue || mark[u] == walk) continue;
      mark[u] = walk;
      f(u);
      const std::vector<ValueId> more = operands(u);
      todo.insert(todo.end(), more.begin(), more.end());
    }
  };
  const auto candidate = [&](ValueId u) {
    if (producer_[u] < 0 || shared[u] || slot_of_[u] >= 0) return false;  // (a region output)
    const Node& n = graph.nodes[producer_[u]];
    const ops::OpDef& def = ops::op_def(n.op);
    if (def.view || n.outputs.size() != 1) return false;
    return !(def.lowering && def.lowering->materialise) || !operands(u).empty();
  };
  std::vector<std::pair<ValueId, int>> chosen;
  for (;;) {
    std::vector<int64_t> readers(nv, 0);
    const auto count = [&](ValueId u) { ++readers[u]; };
    for (ValueId o : r_.outputs) visit({o}, count);
    for (const Node* n : mat_nodes) visit(n->inputs, count);
    for (const auto& [v, after] : chosen) visit(graph.nodes[producer_[v]].inputs, count);
    ValueId best = kNoValue;
    int64_t best_saving = kMinSaving - 1;
    for (ValueId u = 0; static_cast<size_t>(u) < nv; ++u) {
      if (readers[u] < 2 || !candidate(u)) continue;
      int64_t cost = 0;
      visit({u}, [&](ValueId) { ++cost; });
      if (const int64_t saving = (readers[u] - 1) * cost; saving > best_saving) {
        best = u;
        best_saving = saving;
      }
    }
    if (best == kNoValue) break;
    int after = -1;  // the last materialised node (or shared value's) its elements need
    visit({best}, [&](ValueId u) {
      if (producer_[u] < 0) return;
      if (const int m = mat_index[static_cast<size_t>(producer_[u])]; m > after) after = m;
      for (const auto& [v, a] : chosen)
        if (v == u && a > after) after = a;
    });
    SG_LOG(2) << name_ << ": value '" << graph.values[best].name << "', read by " << readers[best]
              << " nests, computed once into a buffer (saves " << best_saving << " per element)";
    shared[best] = true;
    chosen.emplace_back(best, after);
  }
  // In the graph's (topological) node order, so that a value is filled after those it reads.
  std::sort(chosen.begin(), chosen.end(), [&](const auto& x, const auto& y) {
    return std::make_pair(x.second, producer_[x.first]) <
           std::make_pair(y.second, producer_[y.first]);
  });
  return chosen;
}

// Holds v whole in a local buffer of its own (its elements stored as they are).
void KernelBuilder::hold_whole(ValueId v) {
  const DType t = graph.values[v].dtype;
  const LocalBuffer l = local_buffer(memory_type(ctx_, t), dims(v));
  if (t != DType::boolean) return hold(v, l, nullptr);
  hold(v, l,
       [this](Value* x) { return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0)); });
}

// A shared window's nest: its elements, computed once, into the buffer it is held in.
void KernelBuilder::fill_shared(ValueId v) {
  const Held& h = held_.at(v);
  const Node& n = graph.nodes[producer_[v]];
  const SymShape s = dims(v);
  loop_nest(s, /*parallel=*/true, [&](const Index& idx) {
    Value* x = compute(n, idx);  // (not element(): that reads the buffer being filled)
    if (graph.values[v].dtype == DType::boolean) x = b_.CreateZExt(x, h.buffer.type);
    b_.CreateStore(x, at(h.buffer, offset_of(idx, s)));
  });
}

int KernelBuilder::add_slot(llvm::Type* t, bool input, bool output) {
  slots_.push_back({t, input, output});
  local_alloc_.resize(slots_.size(), nullptr);
  return static_cast<int>(slots_.size()) - 1;
}

Value* KernelBuilder::ptr(int slot) const {
  SG_ASSERT(slot >= 0 && static_cast<size_t>(slot) < ptrs_.size())
      << "no pointer for slot " << slot;
  return ptrs_[slot];
}

const Shape& KernelBuilder::shape(ValueId v) const {
  if (auto it = coalesced_.find(v); it != coalesced_.end()) return it->second;
  return planned_shape(v);
}

const Shape& KernelBuilder::planned_shape(ValueId v) const {
  SG_CHECK(static_cast<size_t>(v) < shapes_.size())
      << "no shape given for value '" << graph.values[v].name << "'";
  // A lowering computing with a symbolic value's static shape would be silently wrong.
  SG_ASSERT(!dynamic() || !symbolic(v))
      << "the static shape of '" << graph.values[v].name << "' asked for in a dynamic region";
  return shapes_[v];
}

// A nest function `nest(table, begin, end)` and its body `bfn` (see kernel_builder.h).
llvm::Function* KernelBuilder::make_nest(llvm::Function*& bfn) {
  llvm::Type* ptr = b_.getPtrTy();
  llvm::Type* i64t = b_.getInt64Ty();
  const std::string nname = name_ + ".n" + std::to_string(nests_++);
  SG_LOG(2) << "JIT: nest " << nname << " for " << nest_for_;  // names in perf's profile
  auto* nty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64t, i64t}, false);
  auto* nest = llvm::Function::Create(nty, llvm::Function::InternalLinkage, nname, m_);
  nest->addFnAttr(llvm::Attribute::NoUnwind);
  std::vector<llvm::Type*> params(slots_.size(), ptr);
  params.push_back(i64t);
  params.push_back(i64t);
  bfn = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                               llvm::Function::InternalLinkage, nname + ".body", m_);
  bfn->addFnAttr(llvm::Attribute::AlwaysInline);
  bfn->addFnAttr(llvm::Attribute::NoUnwind);
  return nest;
}

// Runs a nest over [0, trip) from the kernel: on the calling thread, or split over threads by
// sgraph_parallel_for. It is given a table of the pointers its body uses (finish_nest), filled
// here. Whether a nest called on the calling thread is inlined is settled when the kernel is done
// (inline_nests).
void KernelBuilder::call_nest(llvm::Function* nest, const std::vector<int>& slots, Value* trip,
                              bool threads) {
  llvm::Type* ptr = b_.getPtrTy();
  Value* table = llvm::ConstantPointerNull::get(b_.getPtrTy());
  if (!slots.empty()) {
    llvm::BasicBlock& entry = kernel_->getEntryBlock();
    llvm::IRBuilder<> at_entry(&entry, entry.getFirstInsertionPt());
    table = at_entry.CreateAlloca(ptr, i64(static_cast<int64_t>(slots.size())), "nest.ptrs");
    for (size_t j = 0; j < slots.size(); ++j) {
      b_.CreateStore(kernel_ptrs_.at(slots[j]), b_.CreateConstInBoundsGEP1_64(ptr, table, j));
      used(slots[j]);
    }
  }
  NestUse& use = nest_uses_[nest];
  ++use.calls;
  if (threads) {
    llvm::FunctionCallee pfor = m_.getOrInsertFunction("sgraph_parallel_for", b_.getVoidTy(), ptr,
                                                       ptr, ptr, b_.getInt64Ty());
    b_.CreateCall(pfor, {kernel_->getArg(2), nest, table, trip});
  } else {
    use.serial = true;
    b_.CreateCall(nest, {table, i64(0), trip});
  }
}

// A nest called once on the calling thread is inlined into a static kernel (one function, no
// per-function code-generation cost: 20-30 ms less for a small model's kernel). One called more
// than once (the same code for several nodes, finish_nest) is compiled once and called. A dynamic
// kernel's nests stay functions of their own: code generation's loop strength reduction grows
// faster than linearly with a function's loops over symbolic bounds, and one function for
// ppocr_mobile_v2_cls's 209-op dynamic region took 11.6 s of code generation, 9.1 s of it in that
// pass (`llc -time-passes` on its SGRAPH_DUMP_IR module; 1.1 s with -disable-lsr). Split, `sgraph
// check` on its data sets at 1 thread compiles in 1.5 s instead of 8.3 s, with a process peak of
// 97 MB instead of 209 MB.
void KernelBuilder::inline_nests() {
  for (const auto& [nest, use] : nest_uses_) {
    if (dynamic() || use.calls > 1)
      nest->addFnAttr(llvm::Attribute::NoInline);
    else if (use.serial)
      nest->addFnAttr(llvm::Attribute::AlwaysInline);
  }
}

void KernelBuilder::loop_nest(const Shape& s, bool parallel, const Body& body, bool unroll) {
  if (numel(s) == 0) return;
  size_t outer = 0;  // the outermost dim of size > 1: its loop runs over [begin, end)
  while (outer < s.size() && s[outer] == 1) ++outer;
  int64_t trip = outer < s.size() ? s[outer] : 1;
  // A nest of one long loop is split into blocks (the outer loop over [begin, end) of blocks, an
  // inner one of constant length), so threads get blocks and the vector loop has no tail.
  int64_t block = 1;
  if (outer < s.size() && std::count_if(s.begin(), s.end(), [](int64_t e) { return e > 1; }) == 1)
    for (int64_t b = 1024; b <= trip / 2; b += 16)
      if (trip % b == 0) {
        block = b;
        break;
      }
  trip /= block;
  llvm::Function* bfn = nullptr;
  llvm::Function* nest = make_nest(bfn);
  const llvm::IRBuilderBase::InsertPoint in_kernel = b_.saveIP();
  emit_loops(
      bfn, s.size(), [&](size_t d) { return s[d] == 1; }, [&](size_t d) { return i64(s[d]); },
      outer, block, body, unroll);
  // In the kernel: run the nest, split over threads when allowed and worth a dispatch.
  const bool threads = parallel && trip > 1 && !serial_ && worth_threads(numel(s), *bfn);
  const auto [code, used_slots] = finish_nest(nest, bfn, threads ? -1 : trip);
  b_.restoreIP(in_kernel);
  call_nest(code, used_slots, i64(trip), threads);
}

// Whether a static nest of `elements` runs of the body `bfn` repays a parallel dispatch (about
// 1 us with the workers awake, 5-13 us once they sleep; see parallel.cpp): its work, counted as
// the body's instructions as emitted (a call, to libm or a helper, as 30) per element, at least
// parallel_work(). Below it the nest runs on the calling thread: a transformer layer at a few
// tokens is dozens of nests of a few thousand elements, each done in a microsecond or two.
namespace {

// The work of a body as emitted: its instructions, a call (to libm or a helper) counting 30.
int64_t emitted_cost(const llvm::Function& f) {
  int64_t cost = 0;
  for (const llvm::BasicBlock& bb : f)
    for (const llvm::Instruction& i : bb) cost += llvm::isa<llvm::CallInst>(i) ? 30 : 1;
  return cost;
}

}  // namespace

bool KernelBuilder::worth_threads(int64_t elements, const llvm::Function& bfn) const {
  if (parallel_work_ <= 0) return true;
  const int64_t cost = emitted_cost(bfn) + inner_cost_;
  return elements >= (parallel_work_ + cost - 1) / cost;
}

namespace {
// A loop's own (distinct) llvm.loop node holding `properties`.
llvm::MDNode* loop_node(llvm::LLVMContext& ctx, std::initializer_list<llvm::Metadata*> properties) {
  std::vector<llvm::Metadata*> ops{nullptr};
  ops.insert(ops.end(), properties.begin(), properties.end());
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx, ops);
  id->replaceOperandWith(0, id);
  return id;
}

// A loop's own llvm.loop node with one property: {name}, or {name, true}.
llvm::MDNode* loop_property(llvm::LLVMContext& ctx, const char* name, bool enable) {
  llvm::Metadata* prop[] = {llvm::MDString::get(ctx, name),
                            llvm::ConstantAsMetadata::get(llvm::ConstantInt::getTrue(ctx))};
  return loop_node(ctx, {llvm::MDNode::get(ctx, llvm::ArrayRef(prop, enable ? 2 : 1))});
}

// The most instructions a nest's body may have (emitted_cost, before optimisation) to have its
// short rows unrolled (emit_loops): a copy or a conv's taps are tens.
constexpr int64_t kUnrolledRowCost = 256;

// A short row's loop left to the SLP vectoriser: not vectorised as a loop, unrolled whole.
llvm::MDNode* unrolled_row(llvm::LLVMContext& ctx) {
  llvm::Metadata* no_vectorize[] = {
      llvm::MDString::get(ctx, "llvm.loop.vectorize.enable"),
      llvm::ConstantAsMetadata::get(llvm::ConstantInt::getFalse(ctx))};
  return loop_node(ctx,
                   {llvm::MDNode::get(ctx, no_vectorize),
                    llvm::MDNode::get(ctx, llvm::MDString::get(ctx, "llvm.loop.unroll.full"))});
}
}  // namespace

// The body of a nest over `rank` dims: one loop per dim not `unit` (innermost last), the
// outermost (`outer`, split into blocks of `block`) over [begin, end), body(idx) at the innermost
// level.
void KernelBuilder::emit_loops(llvm::Function* bfn, size_t rank,
                               const std::function<bool(size_t)>& unit,
                               const std::function<Value*(size_t)>& bound, size_t outer,
                               int64_t block, const Body& body, bool unroll) {
  llvm::Type* i64t = b_.getInt64Ty();
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", bfn));
  ptrs_.assign(slots_.size(), nullptr);
  for (size_t i = 0; i < slots_.size(); ++i) ptrs_[i] = bfn->getArg(static_cast<unsigned>(i));
  if (dims_slot_ >= 0) load_symbols(ptrs_[dims_slot_], nest_syms_);
  Value* begin = bfn->getArg(static_cast<unsigned>(slots_.size()));
  Value* end = bfn->getArg(static_cast<unsigned>(slots_.size() + 1));
  struct Loop {
    llvm::BasicBlock* header;
    llvm::PHINode* iv;
    Value* end;
  };
  std::vector<Loop> loops;
  Index idx(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (unit(d)) {
      idx[d] = i64(0);
      continue;
    }
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, "d" + std::to_string(d), bfn);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(i64t, 2, "i" + std::to_string(d));
    iv->addIncoming(d == outer ? begin : i64(0), pre);
    idx[d] = iv;
    loops.push_back({header, iv, d == outer ? end : bound(d)});
    if (d == outer && block > 1) {  // the block's loop
      auto* inner = llvm::BasicBlock::Create(ctx_, "b" + std::to_string(d), bfn);
      b_.CreateBr(inner);
      b_.SetInsertPoint(inner);
      llvm::PHINode* jv = b_.CreatePHI(i64t, 2, "j" + std::to_string(d));
      jv->addIncoming(i64(0), header);
      idx[d] = b_.CreateAdd(b_.CreateMul(iv, i64(block), "", true, true), jv, "", true, true);
      loops.push_back({inner, jv, i64(block)});
    }
  }
  cache_.clear();  // elements of another nest do not exist in this one
  inner_cost_ = 0;
  body(idx);
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
    Value* next = b_.CreateAdd(it->iv, i64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
    it->iv->addIncoming(next, b_.GetInsertBlock());
    auto* exit = llvm::BasicBlock::Create(ctx_, "", bfn);
    llvm::BranchInst* br = b_.CreateCondBr(b_.CreateICmpSLT(next, it->end), it->header, exit);
    // A short innermost row of a constant length that is not a whole number of 16 lanes
    // (small_cnn's first conv, 28 outputs a row). Where masking is cheap (AVX-512): one or two
    // vectors, the last one masked, where LLVM would pick 4 lanes to leave no remainder (7
    // iterations); measured on Zen 4: small_cnn at 16 images 0.175 -> 0.170 ms; longer rows (the
    // recognizer's) are as fast either way or slower masked. Where it is not (AVX2), a row
    // shorter than 16 and not a whole number of 8 lanes is left to the unroller and the SLP
    // vectoriser (8 + 4 + 2 for 14), since LLVM masks a loop of so few iterations whole, and a
    // masked store costs tens of cycles there (small_cnn's im2col rows of 14 took 32% of its time
    // on Zen 3). Only a small body (kUnrolledRowCost) is unrolled: a large one repays the masked
    // stores, and unrolled would be up to 15 copies to compile.
    const auto* ct = llvm::dyn_cast<llvm::ConstantInt>(it->end);
    const int64_t row = ct ? ct->getSExtValue() : 0;
    if (it == loops.rbegin() && ct && row < 32 && row % 16 != 0) {
      if (masked_tails_)
        br->setMetadata(llvm::LLVMContext::MD_loop,
                        loop_property(ctx_, "llvm.loop.vectorize.predicate.enable", true));
      else if (row < 16 && row % 8 != 0 && emitted_cost(*bfn) <= kUnrolledRowCost)
        br->setMetadata(llvm::LLVMContext::MD_loop, unrolled_row(ctx_));
    }
    if (!unroll && it != loops.rbegin())
      br->setMetadata(llvm::LLVMContext::MD_loop,
                      loop_property(ctx_, "llvm.loop.unroll.disable", false));
    b_.SetInsertPoint(exit);
  }
  b_.CreateRetVoid();
  ptrs_.clear();
  nest_syms_.clear();
  cache_.clear();
}

// Completes a nest whose body `bfn` is emitted, and returns the nest to call (this one, or an
// earlier one with the same code) and the slots whose pointers to give it (call_nest). The body is
// remade to take only the pointers it uses, in slot order, and the nest to load them from the
// table it is given: so nests doing the same work on other buffers are the same function (every
// layer of a transformer: text_encoder's 4 layers, 57 nests, are then 25), compiled once. Only the
// pointers the body uses are noalias: in a region of hundreds of buffers, noalias pointers the body
// does not use would each become an alias scope to track once inlined, in every nest. `trip` >= 0:
// the nest is always run whole on the calling thread over [0, trip), and its body gets those bounds
// as constants (as if inlined into the kernel: a vector loop of a known trip count needs no
// remainder), so it is the same code only as nests of the same trip count.
std::pair<llvm::Function*, std::vector<int>> KernelBuilder::finish_nest(llvm::Function* nest,
                                                                        llvm::Function* bfn,
                                                                        int64_t trip) {
  llvm::Type* ptr = b_.getPtrTy();
  llvm::Type* i64t = b_.getInt64Ty();
  const auto nslots = static_cast<unsigned>(slots_.size());
  std::vector<int> slots;
  for (unsigned i = 0; i < nslots; ++i)
    if (!bfn->getArg(i)->use_empty()) slots.push_back(static_cast<int>(i));
  std::vector<llvm::Type*> params(slots.size(), ptr);
  params.push_back(i64t);
  params.push_back(i64t);
  auto* body = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                      llvm::Function::InternalLinkage, "", m_);
  const auto nused = static_cast<unsigned>(slots.size());
  std::vector<llvm::AttributeSet> param_attrs(nused + 2);
  for (unsigned j = 0; j < nused; ++j) {
    const Slot& slot = slots_[slots[j]];
    llvm::AttrBuilder ab(ctx_);
    ab.addAttribute(llvm::Attribute::NoAlias).addAttribute(llvm::Attribute::NoCapture);
    if (slot.input) ab.addAttribute(llvm::Attribute::ReadOnly);
    if (slot.output && !slot.read_back) ab.addAttribute(llvm::Attribute::WriteOnly);
    param_attrs[j] = llvm::AttributeSet::get(ctx_, ab);
  }
  body->takeName(bfn);
  body->setAttributes(
      llvm::AttributeList::get(ctx_, bfn->getAttributes().getFnAttrs(), {}, param_attrs));
  body->splice(body->end(), bfn);
  for (unsigned j = 0; j < nused; ++j)
    bfn->getArg(static_cast<unsigned>(slots[j]))->replaceAllUsesWith(body->getArg(j));
  bfn->getArg(nslots)->replaceAllUsesWith(body->getArg(nused));
  bfn->getArg(nslots + 1)->replaceAllUsesWith(body->getArg(nused + 1));
  bfn->eraseFromParent();

  // The same code as an earlier nest: the same body (llvm::FunctionComparator: same instructions,
  // types, constants, callees and attributes, up to renaming) and pointers of the same kinds.
  std::vector<int64_t> kinds{trip};
  for (int slot : slots) {
    const Slot& k = slots_[slot];
    kinds.push_back(k.input | k.output << 1 | k.stream << 2 | k.read_back << 3);
  }
  const uint64_t hash = llvm::StructuralHash(*body);
  for (auto [it, end] = nest_codes_.equal_range(hash); it != end; ++it) {
    const NestCode& code = it->second;
    if (code.kinds != kinds) continue;
    if (llvm::FunctionComparator(body, code.body, &global_numbers_).compare() != 0) continue;
    SG_LOG(2) << "JIT: nest " << nest->getName().str() << " is " << code.nest->getName().str()
              << "'s code";
    body->eraseFromParent();
    nest->eraseFromParent();
    return {code.nest, std::move(slots)};
  }

  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", nest));
  std::vector<Value*> args;
  for (unsigned j = 0; j < nused; ++j) {
    const Slot& slot = slots_[slots[j]];
    llvm::LoadInst* p = b_.CreateLoad(ptr, b_.CreateConstInBoundsGEP1_64(ptr, nest->getArg(0), j));
    if (slot.output) {  // region outputs are 64-byte aligned (ExecutableGraph checks)
      p->setMetadata(llvm::LLVMContext::MD_align,
                     llvm::MDNode::get(ctx_, llvm::ConstantAsMetadata::get(b_.getInt64(64))));
      if (slot.stream) p->setMetadata(kStreamMetadata, llvm::MDNode::get(ctx_, {}));
    }
    args.push_back(p);
  }
  args.push_back(trip >= 0 ? i64(0) : nest->getArg(1));
  args.push_back(trip >= 0 ? i64(trip) : nest->getArg(2));
  b_.CreateCall(body, args);
  b_.CreateRetVoid();
  nest_codes_.emplace(hash, NestCode{nest, body, std::move(kinds)});
  return {nest, std::move(slots)};
}

void KernelBuilder::emit_output_nest(ValueId v) {
  if (auto it = held_.find(v); it != held_.end() && it->second.buffer.slot == slot_of_[v])
    return;  // its node filled it (output_buffer)
  if (dynamic()) {
    const SymShape& s = sym_shape(v);
    sym_loop_nest(s, /*parallel=*/true,
                  [&](const Index& idx) { store(v, value_offset(idx, v), element(v, idx)); });
    return;
  }
  coalesce(v);
  const Shape s = shape(v);
  loop_nest(s, /*parallel=*/true,
            [&](const Index& idx) { store(v, offset_of(idx, s), element(v, idx)); });
  coalesced_.clear();
}

namespace {

Value* finished(const auto& held, Value* loaded) {
  return held.finish ? held.finish(loaded) : loaded;
}

}  // namespace

Value* KernelBuilder::element(ValueId v, const Index& idx) {
  auto key = std::make_pair(v, idx);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  Value* x = nullptr;
  if (auto it = held_.find(v); it != held_.end())
    x = finished(it->second, b_.CreateLoad(it->second.buffer.type,
                                           at(it->second.buffer, value_offset(idx, v))));
  else if (producer_[v] < 0)
    x = load(v, value_offset(idx, v));
  else
    x = compute(graph.nodes[producer_[v]], idx);
  cache_.emplace(std::move(key), x);
  return x;
}

Value* KernelBuilder::element_at_offset(ValueId v, Value* off) {
  if (producer_[v] < 0) return load(v, off);
  if (auto it = held_.find(v); it != held_.end())
    return finished(it->second, b_.CreateLoad(it->second.buffer.type, at(it->second.buffer, off)));
  if (dynamic()) return sym_element_at_offset(v, off);
  const Shape& s = shape(v);
  Index idx(s.size(), i64(0));
  size_t first = 0;  // the outermost dim of size > 1 takes what is left of the offset
  while (first < s.size() && s[first] == 1) ++first;
  for (size_t d = s.size(); d-- > first;) {
    if (s[d] == 1) continue;
    if (d == first) {
      idx[d] = off;
      break;
    }
    idx[d] = b_.CreateURem(off, i64(s[d]));
    off = b_.CreateUDiv(off, i64(s[d]));
  }
  return element(v, idx);
}

// An element of node n's output: its lowering's generator, or its element emitter applied to the
// operands' elements at the broadcast (or per-channel) index.
Value* KernelBuilder::compute(const Node& n, const Index& idx) {
  const ops::OpDef& def = ops::op_def(n.op);
  const ops::Lowering* lowering = def.lowering;
  if (lowering && lowering->generate) return lowering->generate(*this, n, idx);
  const std::vector<DType> in = ops::operand_dtypes(graph, n);
  std::vector<Value*> operands(n.inputs.size(), nullptr);
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i] != kNoValue) operands[i] = element(n.inputs[i], operand_index(n, i, idx));
  SG_ASSERT(def.element) << node_str(n) << ": neither an element generator nor an emitter";
  ops::ElementCtx c{b_, n, in, graph.values[n.outputs[0]].dtype};
  Value* x = def.element(c, operands);
  SG_ASSERT(x) << node_str(n) << ": its element emitter declined after the probe accepted it";
  return x;
}

// The index of operand i that output index idx reads: numpy-broadcast, or per channel.
Index KernelBuilder::operand_index(const Node& n, size_t i, const Index& idx) {
  const ops::Lowering* lowering = ops::op_def(n.op).lowering;
  if (lowering && lowering->per_channel && lowering->per_channel(n, i))
    return channel_index(n, n.inputs[i], idx);
  if (dynamic()) return broadcast_index(n, idx, sym_shape(n.outputs[0]), sym_shape(n.inputs[i]));
  return broadcast_index(n, idx, shape(n.outputs[0]), shape(n.inputs[i]));
}

Value* KernelBuilder::value_offset(const Index& idx, ValueId v) {
  return dynamic() ? offset_of(idx, sym_shape(v)) : offset_of(idx, shape(v));
}

Value* KernelBuilder::address(ValueId v, Value* off) {
  SG_ASSERT(slot_of_[v] >= 0) << "value '" << graph.values[v].name
                              << "' has no buffer in the region";
  return b_.CreateInBoundsGEP(memory_type(ctx_, graph.values[v].dtype), ptr(slot_of_[v]), off);
}

Value* KernelBuilder::load(ValueId v, Value* off) {
  const ValueInfo& info = graph.values[v];
  if (info.initializer.defined() && info.initializer.numel() == 1)
    return constant(info.initializer);  // one-element constants are folded into the code
  llvm::Type* t = memory_type(ctx_, info.dtype);
  Value* x = b_.CreateAlignedLoad(t, address(v, off), llvm::Align(dtype_size(info.dtype)));
  return info.dtype == DType::boolean ? b_.CreateICmpNE(x, llvm::ConstantInt::get(t, 0)) : x;
}

void KernelBuilder::store(ValueId v, Value* off, Value* x) {
  const DType t = graph.values[v].dtype;
  if (t == DType::boolean) x = b_.CreateZExt(x, memory_type(ctx_, t));
  b_.CreateAlignedStore(x, address(v, off), llvm::Align(dtype_size(t)));
}

Value* KernelBuilder::constant(const Tensor& t) {
  llvm::Type* type = ops::element_type(ctx_, t.dtype());
  return visit_dtype(t.dtype(), [&]<class T>() -> Value* {
    const T v = t.data<T>()[0];
    if constexpr (std::is_floating_point_v<T>)
      return llvm::ConstantFP::get(type, static_cast<double>(v));
    else
      return llvm::ConstantInt::get(type, static_cast<uint64_t>(v), std::is_signed_v<T>);
  });
}

// A constant table, one global per distinct contents (so nests reading equal tables can be the
// same code, finish_nest).
Value* KernelBuilder::table(llvm::Constant* init) {
  llvm::GlobalVariable*& g = tables_[init];  // (constants are uniqued by their contents)
  if (!g)
    g = new llvm::GlobalVariable(m_, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init,
                                 name_ + ".table");
  return g;
}

Value* KernelBuilder::i64_array(const Ints& v) {
  return table(llvm::ConstantDataArray::get(
      ctx_, llvm::ArrayRef<uint64_t>(reinterpret_cast<const uint64_t*>(v.data()), v.size())));
}

Value* KernelBuilder::f64_array(const std::vector<double>& v) {
  return table(llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<double>(v.data(), v.size())));
}

Value* KernelBuilder::frame_pointer(ValueId v) {
  SG_ASSERT(slot_of_[v] >= 0) << "value '" << graph.values[v].name
                              << "' has no buffer in the region";
  return kernel_ptrs_.at(slot_of_[v]);
}

// A kernel-local buffer of `count` elements of `t`: on the kernel's stack when small, else a
// part of the one scratch block the caller passes after the outputs (allocate_heap). The caller
// allocates it, so an allocation failure is an sgraph::Error before the kernel runs, never a
// null pointer inside it, and a plan can keep its block from call to call (freeing many large
// blocks made glibc give their pages back on every call and the next call fault them in again: a
// CNN region's ~20 buffers, ~1500 page faults per call, its time doubled).
LocalBuffer KernelBuilder::local_buffer(llvm::Type* t, int64_t count) {
  SG_ASSERT(!placed_) << "a local buffer asked for after the kernel's buffers were placed";
  const int64_t bytes =
      std::max<int64_t>(1, count) * static_cast<int64_t>(m_.getDataLayout().getTypeAllocSize(t));
  LocalBuffer l{add_slot(t, false, false), t};
  if (bytes <= 64 * 1024) {
    local_alloc_[l.slot] = b_.CreateAlloca(t, i64(std::max<int64_t>(1, count)));
  } else {
    heap_parts_.push_back({l.slot, heap_bytes_, (bytes + 63) / 64 * 64});
    heap_bytes_ += heap_parts_.back().bytes;
  }
  return l;
}

// The scratch block: the static parts at constant offsets, then the symbolic ones, placed from
// the symbols (the runtime sizes the block with the same sums, see scratch_sym()).
void KernelBuilder::allocate_heap() {
  if (heap_bytes_ == 0 && sym_parts_.empty()) return;
  const auto slot = static_cast<uint64_t>(r_.inputs.size() + r_.outputs.size());
  heap_ = b_.CreateLoad(b_.getPtrTy(),
                        b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), kernel_->getArg(0), slot));
  for (HeapPart& h : heap_parts_) {  // (the offset set again by pack_heap)
    h.at = llvm::GetElementPtrInst::CreateInBounds(b_.getInt8Ty(), heap_, {i64(h.offset)});
    b_.Insert(h.at);
    local_alloc_[h.slot] = h.at;
  }
  // Every symbolic part's size first, then the addresses: pack_sym_heap makes the offsets from
  // the sizes just before the first address, so the sizes must come before it.
  for (SymPart& p : sym_parts_) {
    Value* bytes = b_.CreateMul(count(p.size.dims), i64(p.size.elem_bytes), "", true, true);
    p.bytes = b_.CreateMul(b_.CreateUDiv(b_.CreateAdd(bytes, i64(63), "", true, true), i64(64)),
                           i64(64), "", true, true);
  }
  for (SymPart& p : sym_parts_) {  // (the offsets made by pack_sym_heap)
    p.at = llvm::GetElementPtrInst::CreateInBounds(b_.getInt8Ty(), heap_, {i64(0)});
    b_.Insert(p.at);
    local_alloc_[p.slot] = p.at;
  }
}

void KernelBuilder::hold(ValueId v, LocalBuffer l, Finish finish) {
  SG_ASSERT(producer_[v] >= 0) << "a region input cannot be held";
  held_[v] = {l, std::move(finish)};
}

LocalBuffer KernelBuilder::output_buffer(ValueId v) {
  SG_ASSERT(!placed_) << "an output buffer asked for after the kernel's buffers were placed";
  const int slot = slot_of_[v];
  if (slot < 0 || !slots_[slot].output) return {};
  slots_[slot].read_back = true;  // (not write-only in the nests)
  slots_[slot].stream = false;    // (read back: kept in the caches)
  return {slot, slots_[slot].type};
}

// The loop of an inner_loop, in the nest body being built: guarded by trip > 0, its induction
// variable and carried values as phis, its exit's values as phis of the entry and the latch. Its
// work counts toward the nest's (worth_threads): the instructions emitted in it, times the trip
// count when constant (else taken as 64).
std::vector<Value*> KernelBuilder::inner_loop(Value* trip, const std::vector<Value*>& init,
                                              const InnerBody& body) {
  llvm::Function* f = b_.GetInsertBlock()->getParent();
  const int64_t cost_before = emitted_cost(*f);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, "inner", f);
  auto* exit = llvm::BasicBlock::Create(ctx_, "inner.end", f);
  b_.CreateCondBr(b_.CreateICmpSGT(trip, i64(0)), loop, exit);
  b_.SetInsertPoint(loop);
  llvm::PHINode* j = b_.CreatePHI(b_.getInt64Ty(), 2, "j");
  j->addIncoming(i64(0), pre);
  std::vector<Value*> carried;
  for (Value* v : init) {
    llvm::PHINode* phi = b_.CreatePHI(v->getType(), 2);
    phi->addIncoming(v, pre);
    carried.push_back(phi);
  }
  const auto outer_elements = cache_;  // elements made in the loop stay in it
  const std::vector<Value*> next = body(j, carried);
  cache_ = outer_elements;
  SG_ASSERT(next.size() == init.size()) << "an inner loop's body returned " << next.size()
                                        << " values for " << init.size() << " carried";
  Value* j1 = b_.CreateAdd(j, i64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  j->addIncoming(j1, latch);
  for (size_t k = 0; k < next.size(); ++k)
    llvm::cast<llvm::PHINode>(carried[k])->addIncoming(next[k], latch);
  llvm::BranchInst* back = b_.CreateCondBr(b_.CreateICmpSLT(j1, trip), loop, exit);
  // Rows are often short (attention over 40-80 positions ran a fifth of its elements through a
  // scalar exp): the vector loop's last, partial iteration is masked instead of leaving a scalar
  // remainder, unless a constant trip count leaves none at any width and interleave (a multiple
  // of 64), where the unmasked loop with several accumulators is faster. Also on AVX2, whose
  // masked stores are slow (jit::masked_tails): these bodies (exp, sums) repay them, Softmax over
  // rows of 80 measured 10-15% faster masked on Zen 3.
  const auto* ct = llvm::dyn_cast<llvm::ConstantInt>(trip);
  if (!ct || ct->getSExtValue() % 64 != 0)
    back->setMetadata(llvm::LLVMContext::MD_loop,
                      loop_property(ctx_, "llvm.loop.vectorize.predicate.enable", true));
  b_.SetInsertPoint(exit);
  std::vector<Value*> out;
  for (size_t k = 0; k < next.size(); ++k) {
    llvm::PHINode* phi = b_.CreatePHI(init[k]->getType(), 2);
    phi->addIncoming(init[k], pre);
    phi->addIncoming(next[k], latch);
    out.push_back(phi);
  }
  const int64_t times = ct ? std::max<int64_t>(ct->getSExtValue(), 1) : 64;
  inner_cost_ += (emitted_cost(*f) - cost_before) * (times - 1);
  return out;
}

// sgraph_gemm_f32/f64 over call.a_off.size() batch items (offsets in elements; all 0: none
// passed), or with const_b, sgraph_gemm_const_b_f32 (B packed once per plan; b_off all 0).
void KernelBuilder::call_gemm(const ops::GemmCall& call) {
  SG_ASSERT(call.items || call.a_off.size() == call.b_off.size())
      << "GEMM batch offsets differ in count";
  llvm::Type* i64t = b_.getInt64Ty();
  llvm::Type* ptr = b_.getPtrTy();
  const auto offsets = [&](const std::vector<int64_t>& off) -> Value* {
    if (std::all_of(off.begin(), off.end(), [](int64_t o) { return o == 0; }))
      return llvm::ConstantPointerNull::get(b_.getPtrTy());
    return i64_array(off);
  };
  // The same arguments for each helper; sgraph_gemm_const_b_f32's B offsets are null.
  SG_ASSERT(!(call.const_a && call.const_b)) << "a GEMM with both operands packed";
  const char* fn = call.const_b               ? "sgraph_gemm_const_b_f32"
                   : call.const_a             ? "sgraph_gemm_const_a_f32"
                   : call.dtype == DType::f32 ? "sgraph_gemm_f32"
                                              : "sgraph_gemm_f64";
  llvm::FunctionCallee gemm =
      m_.getOrInsertFunction(fn, b_.getVoidTy(), ptr, i64t, i64t, i64t, i64t, ptr, ptr, i64t, ptr,
                             ptr, i64t, ptr, b_.getDoubleTy());
  Value* items = call.items ? call.items : i64(static_cast<int64_t>(call.a_off.size()));
  Value* a_off = call.items ? call.a_items : offsets(call.a_off);
  // A packed B is the same matrix for every item (ops::GemmCall::const_b): no offsets, also when
  // A's come from a table built per call.
  Value* b_off = call.const_b ? llvm::ConstantPointerNull::get(b_.getPtrTy())
                 : call.items ? call.b_items
                              : offsets(call.b_off);
  used_by_call({call.a, call.b, call.c, a_off, b_off});  // (their uses: now, see pack_heap)
  b_.CreateCall(gemm, {kernel_->getArg(2), items, call.M, call.N, call.K, call.a, a_off,
                       i64(call.ta ? 1 : 0), call.b, b_off, i64(call.tb ? 1 : 0), call.c,
                       llvm::ConstantFP::get(b_.getDoubleTy(), call.alpha)});
}

void KernelBuilder::call_winograd(const ops::WinogradCall& call) {
  llvm::Type* i64t = b_.getInt64Ty();
  llvm::Type* ptr = b_.getPtrTy();
  llvm::FunctionCallee fn =
      m_.getOrInsertFunction("sgraph_conv_winograd_f32", b_.getVoidTy(), ptr, ptr, i64t, i64t, i64t,
                             ptr, i64t, i64t, i64t, i64t, i64t, i64t, i64t, i64t, ptr, ptr, ptr);
  used_by_call({call.weights, call.src, call.v, call.y, call.out});
  b_.CreateCall(fn, {kernel_->getArg(2), call.weights, i64(call.M), i64(call.C), i64(call.KH),
                     call.src, call.N, call.Hs, call.Ws, i64(call.sh), i64(call.dh), call.OH,
                     call.OW, i64(call.rows ? 1 : 0), call.v, call.y, call.out});
}

}  // namespace sgraph::jit
