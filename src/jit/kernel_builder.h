// KernelBuilder: builds the LLVM function of one region (internal to src/jit; see
// region_compiler.h for what a kernel computes). It is the JIT core: the kernel's frame, its loop
// nests, element generation with a per-nest cache, loads and stores, kernel-local buffers, the
// GEMM and parallel_for calls, and merging the dims of a nest (coalesce.cpp). It names no op:
// what each op compiles to comes from its lowering record (src/ops/lowering.h), which emits
// through the ops::Emitter this class implements.
//
// Kernel frame. `void name(void* const* buffers, const int64_t* dims, void* ctx)` places the
// kernel-local buffers (on its stack, or in the caller's scratch block: buffers[inputs + outputs],
// placed by their lifetimes), and runs each loop nest, in order, through
// sgraph_parallel_for(ctx, nest, table, trip) or by a direct call. A nest is a function
// `nest(void* const* table, int64_t begin, int64_t end)` running its outermost loop over
// [begin, end); `table` holds the pointers its body uses, filled by the kernel before the call. It
// loads them and calls an always-inline body whose pointer parameters are noalias, so LLVM knows
// the buffers overlap nothing and vectorises without runtime checks. Nests of the same code on
// other buffers (a transformer's layers) are one function (finish_nest). Nests whose outermost
// loop iterations write disjoint memory (every output nest; a reduction whose outermost dim is
// kept) may be split over threads; the others run whole. A serial kernel (only ever run on one
// thread, set_serial) calls every nest directly, and LLVM inlines those called once.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/FunctionComparator.h>

#include <any>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/region.h"
#include "ir/sym_shape.h"
#include "jit/host.h"
#include "jit/parallel.h"
#include "jit/region_compiler.h"
#include "ops/lowering.h"
#include "sgraph/graph.h"

namespace sgraph::jit {

using ops::Index;
using ops::LocalBuffer;

class KernelBuilder final : public ops::Emitter {
 public:
  KernelBuilder(const Graph& g, const Region& r, const std::vector<Shape>& shapes, llvm::Module& m);
  // A dynamic region's kernel (symbolic_dims.cpp): sym[v] is value v's shape, its symbols read
  // from the kernel's `dims` argument (dims[k]: symbol k, num_symbols of them). Only elementwise
  // ops (see why_not_dynamic in region_compiler.h).
  KernelBuilder(const Graph& g, const Region& r, const std::vector<SymShape>& sym,
                size_t num_symbols, llvm::Module& m);
  // One thread runs the kernel: nests are called directly (see compile_region). Before build().
  void set_serial(bool serial) { serial_ = serial; }
  void build(const std::string& name);
  // Bytes of the scratch block the kernel expects after its outputs (0: none), 64-byte aligned.
  int64_t scratch_bytes() const { return heap_bytes_; }
  // A dynamic region's local buffers of symbolic size, placed after those, in groups that share
  // a part of the block (see SymScratch).
  const SymScratch& scratch_sym() const { return sym_groups_; }

  // ---- ops::Emitter
  const Shape& planned_shape(ValueId v) const override;
  const Shape& shape(ValueId v) const override;
  bool merged(ValueId v) const override { return coalesced_.count(v) > 0; }
  const Node* producer(ValueId v) const override {
    return producer_[v] < 0 ? nullptr : &graph.nodes[producer_[v]];
  }
  llvm::Value* element(ValueId v, const Index& idx) override;
  llvm::Value* element_at_offset(ValueId v, llvm::Value* off) override;
  LocalBuffer local_buffer(llvm::Type* t, int64_t count) override;
  llvm::Value* pointer(const LocalBuffer& l) override { return ptr(l.slot); }
  llvm::Value* frame_pointer(const LocalBuffer& l) override {
    used(l.slot);
    return kernel_ptrs_.at(l.slot);
  }
  llvm::Value* frame_pointer(ValueId v) override;
  void hold(ValueId v, LocalBuffer l, Finish finish) override;
  bool held(ValueId v) const override { return held_.count(v) > 0; }
  LocalBuffer plain_held(ValueId v) const override {
    const auto it = held_.find(v);
    return it != held_.end() && !it->second.finish ? it->second.buffer : LocalBuffer{};
  }
  LocalBuffer output_buffer(ValueId v) override;
  std::vector<llvm::Value*> inner_loop(llvm::Value* trip, const std::vector<llvm::Value*>& init,
                                       const InnerBody& body) override;
  void loop_nest(const Shape& s, bool parallel, const Body& body, bool unroll = true) override;
  void call_gemm(const ops::GemmCall& call) override;
  void call_winograd(const ops::WinogradCall& call) override;
  llvm::Value* i64_array(const Ints& values) override;
  llvm::Value* f64_array(const std::vector<double>& values) override;
  std::any& state(const Node& n) override { return state_[&n]; }
  bool dynamic() const override { return sym_ != nullptr; }
  SymShape dims(ValueId v) const override;
  llvm::Value* dim(const SymDim& d) override { return dim_value(d); }
  void loop_nest(const SymShape& s, bool parallel, const Body& body, bool unroll = true) override;
  LocalBuffer local_buffer(llvm::Type* t, const SymShape& s) override;
  using ops::Emitter::broadcast_index;
  using ops::Emitter::offset_of;

 private:
  // A pointer the kernel uses: a buffer argument (region input or output) or a local buffer.
  struct Slot {
    llvm::Type* type = nullptr;  // element type in memory
    bool input = false, output = false;
    bool stream = false;     // a region output of at least kStreamBytes: stored non-temporally
    bool read_back = false;  // a region output its node fills and reads (output_buffer)
  };
  struct Held {
    LocalBuffer buffer;
    Finish finish;
  };

  int add_slot(llvm::Type* t, bool input, bool output);
  llvm::Value* ptr(int slot) const;
  void allocate_heap();
  void used(int slot);  // the nest being made, or a call after the last one, uses slot
  // A runtime call given these pointers uses the slots they point at (those that are slots).
  void used_by_call(std::initializer_list<llvm::Value*> pointers);
  void pack_heap();
  void pack_sym_heap();
  std::pair<int, int> life(int slot) const;
  bool live_together(int x, int y) const;
  // The loops over dims d < rank (none where unit(d)), bounds from bound(d) made inside the body.
  void emit_loops(llvm::Function* bfn, size_t rank, const std::function<bool(size_t)>& unit,
                  const std::function<llvm::Value*(size_t)>& bound, size_t outer, int64_t block,
                  const Body& body, bool unroll);
  llvm::Function* make_nest(llvm::Function*& bfn);
  bool worth_threads(int64_t elements, const llvm::Function& bfn) const;
  std::pair<llvm::Function*, std::vector<int>> finish_nest(llvm::Function* nest,
                                                           llvm::Function* bfn, int64_t trip);
  void call_nest(llvm::Function* nest, const std::vector<int>& slots, llvm::Value* trip,
                 bool threads);
  void inline_nests();
  void emit_output_nest(ValueId v);
  std::vector<std::pair<ValueId, int>> shared_values(const std::vector<const Node*>& mat_nodes);
  std::vector<ValueId> shared_windows(const std::vector<const Node*>& mat_nodes);
  void hold_whole(ValueId v);
  void fill_shared(ValueId v);
  llvm::Value* compute(const Node& n, const Index& idx);
  llvm::Value* address(ValueId v, llvm::Value* off);
  llvm::Value* load(ValueId v, llvm::Value* off);
  void store(ValueId v, llvm::Value* off, llvm::Value* x);
  llvm::Value* constant(const Tensor& t);
  llvm::Value* table(llvm::Constant* init);
  void coalesce(ValueId v);  // coalesce.cpp
  llvm::Value* value_offset(const Index& idx, ValueId v);
  Index operand_index(const Node& n, size_t i, const Index& idx);

  // ---- symbolic dims (symbolic_dims.cpp)
  bool symbolic(ValueId v) const;
  const SymShape& sym_shape(ValueId v) const;
  // A dim's value: in a nest's body (the symbols it loaded) or in the kernel.
  llvm::Value* dim_value(const SymDim& d);
  llvm::Value* sym_element_at_offset(ValueId v, llvm::Value* off);
  void sym_loop_nest(const SymShape& s, bool parallel, const Body& body);
  void load_symbols(llvm::Value* dims, std::vector<llvm::Value*>& into);

  const Region& r_;
  std::vector<Shape> own_shapes_;  // a dynamic region's static shapes (symbolic values: empty)
  const std::vector<Shape>& shapes_;
  const std::vector<SymShape>* sym_ = nullptr;  // a dynamic region's shapes, per value
  size_t num_symbols_ = 0;
  int dims_slot_ = -1;                     // the slot of `dims` (dynamic regions)
  std::vector<llvm::Value*> kernel_syms_;  // the symbols, loaded in the kernel
  std::vector<llvm::Value*> nest_syms_;    // and in the nest body being built
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  std::string name_;
  llvm::Function* kernel_ = nullptr;
  bool placed_ = false;            // the kernel's buffers are placed (kernel_ptrs_ made)
  std::vector<int32_t> producer_;  // per value: the member node making it, or -1
  std::vector<int> slot_of_;       // per value: its buffer argument's slot (region in/outputs)
  std::vector<Slot> slots_;
  std::vector<llvm::Value*> local_alloc_;  // per slot, in the kernel: local buffers' pointers
  std::vector<llvm::Value*> kernel_ptrs_;  // per slot, in the kernel: every pointer
  std::vector<llvm::Value*> ptrs_;         // per slot, in the nest being built: its pointer
  int nests_ = 0;
  std::string nest_for_;    // what the nests being made compute, for the SGRAPH_DEBUG=2 log
  int64_t inner_cost_ = 0;  // the current nest's inner loops' work per element (see inner_loop)
  bool serial_ = false;     // set_serial
  int64_t parallel_work_ = sgraph::parallel_work();          // see worth_threads
  bool masked_tails_ = jit::masked_tails();                  // see jit/host.h
  std::map<std::pair<ValueId, Index>, llvm::Value*> cache_;  // elements made in the current nest
  std::map<ValueId, Shape> coalesced_;     // shapes in the current loop nest, if merged
  std::map<ValueId, Held> held_;           // values computed whole into local buffers
  std::map<int32_t, ValueId> shared_;      // per node: its output held for several nests to read
  std::map<const Node*, std::any> state_;  // lowerings' per-node plans
  struct NestCode {  // a nest made (finish_nest): its body, its trip count and pointers' kinds
    llvm::Function* nest = nullptr;
    llvm::Function* body = nullptr;
    std::vector<int64_t> kinds;
  };
  std::multimap<uint64_t, NestCode> nest_codes_;  // by the body's structural hash
  llvm::GlobalNumberState global_numbers_;        // (for llvm::FunctionComparator)
  struct NestUse {
    int calls = 0;
    bool serial = false;  // called on the kernel's thread (not through sgraph_parallel_for)
  };
  std::map<llvm::Function*, NestUse> nest_uses_;
  std::map<llvm::Constant*, llvm::GlobalVariable*> tables_;  // by contents (see table())
  struct HeapPart {  // a large local buffer: a part of the scratch block
    int slot = -1;
    int64_t offset = 0, bytes = 0;
    llvm::GetElementPtrInst* at = nullptr;  // in the kernel: its address in the block
  };
  std::vector<HeapPart> heap_parts_;
  std::map<int, std::pair<int, int>> live_;  // per slot used: its first and last use (see used)
  int64_t heap_bytes_ = 0;                   // their block's size
  struct SymPart {  // a local buffer of symbolic size: after the static parts (pack_sym_heap)
    int slot = -1;
    SymScratchBuffer size;
    llvm::Value* bytes = nullptr;           // in the kernel: its bytes, rounded up to 64
    llvm::GetElementPtrInst* at = nullptr;  // in the kernel: its address in the block
  };
  std::vector<SymPart> sym_parts_;
  SymScratch sym_groups_;        // their groups, as placed
  llvm::Value* heap_ = nullptr;  // the block, the caller's scratch
};

}  // namespace sgraph::jit
