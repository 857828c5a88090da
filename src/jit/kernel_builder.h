// KernelBuilder: builds the LLVM function of one region (internal to src/jit; see
// region_compiler.h for what a kernel computes). Its parts live in separate files:
//   kernel_builder.cpp  the kernel's frame, loop nests, element generation, loads and stores
//   coalesce.cpp        merging adjacent dims of an output nest into one loop
//   index_maps.cpp      index ops: views, Transpose, Expand, Slice, Concat, Gather, Pad
//   materialise.cpp     values computed into kernel-local buffers before the nests that read
//                       them: reductions, Softmax/LogSoftmax row statistics
//   contraction.cpp     MatMul/Gemm: a GEMM call into a local buffer, consumers as the epilogue
//   conv.cpp            Conv, MaxPool, AveragePool: windows over a (padded) source; Conv direct
//                       or through im2col + GEMM; per-channel operands (BatchNormalization)
//
// Kernel frame. `void name(void* const* buffers, const int64_t* dims, void* ctx)` places the
// kernel-local buffers (on its stack, or in the caller's scratch block: buffers[inputs + outputs]),
// puts every pointer the kernel uses (its buffers' and the local ones) in a pointer table, and runs
// each loop nest through sgraph_parallel_for(ctx, nest, table, trip), in order. A nest is a
// function `nest(void* const* table, int64_t begin, int64_t end)` running its outermost loop over
// [begin, end): it loads the pointers and calls an always-inline body whose pointer parameters are
// noalias, so LLVM knows the buffers overlap nothing and vectorises without runtime checks. Nests
// whose outermost loop iterations write disjoint memory (every output nest; a reduction whose
// outermost dim is kept) may be split over threads; the others run whole.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops/window.h"
#include "runtime/region_builder.h"
#include "sgraph/graph.h"

namespace sgraph::jit {

using Index = std::vector<llvm::Value*>;  // an i64 per dimension

std::string node_str(const Node& n);
std::vector<DType> operand_dtypes(const Graph& g, const Node& n);
// In memory a bool is a byte.
llvm::Type* memory_type(llvm::LLVMContext& ctx, DType t);

// Index ops (index_maps.cpp): a view op (Identity, Reshape, Flatten, Squeeze, Unsqueeze) reads
// its input at the same row-major offset, Transpose permutes the index, Expand broadcasts it;
// Slice, Concat, Gather and Pad map it too (see index_maps.cpp).
enum class IndexMap { none, same_offset, transpose, broadcast, slice, concat, gather, pad };
IndexMap index_map(OpKind op);
// Why index op `n` cannot be compiled (an input that must be a constant is not); "" when it can.
std::string why_not_index_op(const Graph& g, const Node& n);

// Materialised ops (materialise.cpp): why node `n` cannot be materialised ("" when it can).
std::string why_not_materialised(const Graph& g, const Node& n);
// Contractions (contraction.cpp), materialised through a GEMM call.
bool contracts(OpKind op);
std::string why_not_contracted(const Graph& g, const Node& n);
// Convolutions and pools (conv.cpp): Conv, MaxPool, AveragePool, materialised as they need.
bool windowed(OpKind op);
std::string why_not_windowed(const Graph& g, const Node& n);
// Whether input i of `n` is a per-channel vector [C] read at the element's index along dim 1
// (BatchNormalization's parameters, Conv's bias) rather than numpy-broadcast.
bool per_channel(const Node& n, size_t i);

class KernelBuilder {
 public:
  KernelBuilder(const Graph& g, const Region& r, const std::vector<Shape>& shapes, llvm::Module& m);
  void build(const std::string& name);
  // Bytes of the scratch block the kernel expects after its outputs (0: none), 64-byte aligned.
  int64_t scratch_bytes() const { return heap_bytes_; }

 private:
  // A pointer the kernel uses: a buffer argument (region input or output) or a local buffer.
  struct Slot {
    llvm::Type* type = nullptr;  // element type in memory
    bool input = false, output = false;
    bool stream = false;  // a region output of at least kStreamBytes: stored non-temporally
  };
  struct Local {
    int slot = -1;
    llvm::Type* type = nullptr;  // the element type in memory (the accumulator's)
  };
  using Body = std::function<void(const Index&)>;
  struct Contraction {  // batch items of op(A)[M,K] x op(B)[K,N]
    int64_t M = 0, N = 0, K = 0;
    bool ta = false, tb = false;
    double alpha = 1;
    std::vector<int64_t> a_off, b_off;  // per batch item, in elements
  };
  struct Operand {
    ValueId value = kNoValue;  // the buffer's value (a region input, or the operand itself)
    bool trans = false;
    Local local;  // when the operand is computed in the region: the buffer its nest fills
  };
  struct ContractionPlan {
    Contraction geometry;
    Operand a, b;
    Local product;
  };
  struct WindowPlan {  // Conv, MaxPool, AveragePool
    ops::Window w;
    int64_t group = 1;
    bool gemm = false;    // Conv through im2col + GEMM, else computed directly
    bool padded = false;  // some window reads outside the input: the source is padded
    Local source;         // the input copied (and padded); slot < 0: read the input itself
    Shape source_shape;   // [N, C, padded spatial...]
    Local weights;        // GEMM: the weights, when computed in the region
    Local col;            // GEMM: the im2col matrix; slot < 0: the source itself (1x1 kernel)
    Local product;        // GEMM: [N, M, out...]
  };

  // ---- kernel_builder.cpp ----
  const Shape& shape(ValueId v) const;
  llvm::Value* i64(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }
  int add_slot(llvm::Type* t, bool input, bool output);
  llvm::Value* ptr(int slot) const;
  // A loop nest over `s`, outlined into its own function, body(idx) at the innermost level.
  // `parallel`: iterations of the outermost loop write disjoint memory. `unroll` false: LLVM may
  // not unroll the loops around the innermost (copies of many short rows, where full unrolling
  // makes huge blocks that cost more to compile than they save).
  void loop_nest(const Shape& s, bool parallel, const Body& body, bool unroll = true);
  void emit_output_nest(ValueId v);
  llvm::Value* element(ValueId v, const Index& idx);
  llvm::Value* element_at_offset(ValueId v, llvm::Value* off);
  llvm::Value* compute(const Node& n, const Index& idx);
  Index broadcast_index(const Node& n, const Index& idx, const Shape& out, const Shape& in);
  std::optional<Index> unit_dims_map(const Index& idx, const Shape& from, const Shape& to);
  llvm::Value* offset_of(const Index& idx, const Shape& s);
  llvm::Value* address(ValueId v, llvm::Value* off);
  llvm::Value* load(ValueId v, llvm::Value* off);
  void store(ValueId v, llvm::Value* off, llvm::Value* x);
  llvm::Value* constant(const Tensor& t);
  llvm::Value* i64_array(const std::vector<int64_t>& v);  // a constant global array

  // ---- coalesce.cpp ----
  void coalesce(ValueId v);

  // ---- index_maps.cpp ----
  llvm::Value* compute_index_op(const Node& n, IndexMap map, const Index& idx);
  llvm::Value* slice_element(const Node& n, const Index& idx);
  llvm::Value* concat_element(const Node& n, const Index& idx);
  llvm::Value* gather_element(const Node& n, const Index& idx);
  llvm::Value* pad_element(const Node& n, const Index& idx);
  llvm::Value* clamp(llvm::Value* i, int64_t lo, int64_t hi);

  // ---- materialise.cpp ----
  static bool is_softmax(OpKind op) { return op == OpKind::Softmax || op == OpKind::LogSoftmax; }
  Local local_buffer(llvm::Type* t, int64_t count);
  void allocate_heap();
  llvm::Value* local_ptr(const Local& l, llvm::Value* off);
  void allocate(const Node& n);
  void materialise(const Node& n);
  llvm::Type* acc_type(const Node& n);
  Shape row_shape(const Node& n);
  llvm::Value* row_offset(const Index& idx, const Shape& rs);
  std::vector<bool> reduced_mask(const Node& n, size_t rank);
  llvm::Value* max_of(llvm::Value* a, llvm::Value* x, DType t);
  llvm::Value* lowest(DType t, llvm::Type* type);
  llvm::Value* reassoc_fadd(llvm::Value* a, llvm::Value* x);
  void materialise_reduce(const Node& n);
  llvm::Value* load_reduced(const Node& n, const Local& l, llvm::Value* off);
  void materialise_softmax(const Node& n);
  llvm::Value* softmax_element(const Node& n, const Index& idx);
  llvm::Value* exp_arg(llvm::Value* d);
  void materialise_layer_norm(const Node& n);
  llvm::Value* layer_norm_element(const Node& n, const Index& idx);

  // ---- contraction.cpp ----
  Contraction contraction_geometry(const Node& n);
  Operand contraction_operand(ValueId v, bool matrix_trans);
  void allocate_contraction(const Node& n);
  void materialise_contraction(const Node& n);
  llvm::Value* contraction_element(const Node& n, const Index& idx);
  // sgraph_gemm_f32/f64 over a_off.size() batch items (offsets in elements; all 0: none passed),
  // or with const_b, sgraph_gemm_const_b_f32 (B packed once per plan; b_off all 0).
  void call_gemm(DType t, int64_t M, int64_t N, int64_t K, llvm::Value* a,
                 const std::vector<int64_t>& a_off, bool ta, llvm::Value* b,
                 const std::vector<int64_t>& b_off, bool tb, llvm::Value* c, double alpha,
                 bool const_b = false);
  // Whether B is worth packing once per plan (call_gemm's const_b).
  bool packs_b(DType t, const Operand& b, const Contraction& c) const;

  // ---- conv.cpp ----
  Index channel_index(const Node& n, ValueId v, const Index& idx);
  void allocate_window(const Node& n);
  void materialise_window(const Node& n);
  bool made_from_windows(ValueId v);
  llvm::Value* window_tap(const Node& n, const WindowPlan& p, llvm::Value* image,
                          llvm::Value* channel, const Index& o, const Index& k);
  llvm::Value* per_position(const Ints& values, llvm::Value* o);
  llvm::Value* window_element(const Node& n, const Index& idx);
  llvm::Value* direct_conv(const Node& n, const WindowPlan& p, const Index& idx);

  const Graph& g_;
  const Region& r_;
  const std::vector<Shape>& shapes_;
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  std::string name_;
  llvm::Function* kernel_ = nullptr;
  llvm::Value* table_ = nullptr;   // in the kernel: the pointer table the nests read
  std::vector<int32_t> producer_;  // per value: the member node making it, or -1
  std::vector<int> slot_of_;       // per value: its buffer argument's slot (region in/outputs)
  std::vector<Slot> slots_;
  std::vector<llvm::Value*> local_alloc_;  // per slot, in the kernel: local buffers' pointers
  std::vector<llvm::Value*> kernel_ptrs_;  // per slot, in the kernel: every pointer
  std::vector<llvm::Value*> ptrs_;         // per slot, in the nest being built: its pointer
  int nests_ = 0;
  std::map<std::pair<ValueId, Index>, llvm::Value*> cache_;  // elements made in the current nest
  std::map<ValueId, Shape> coalesced_;  // shapes in the current loop nest, if merged
  std::map<ValueId, Local> local_;      // reductions' accumulator buffers
  // Softmax: row max, row sum; LayerNormalization: row mean, row inverse standard deviation.
  std::map<const Node*, std::pair<Local, Local>> softmax_;
  std::map<const Node*, ContractionPlan> contraction_;  // MatMul/Gemm
  std::map<const Node*, WindowPlan> window_;            // Conv, MaxPool, AveragePool
  std::vector<std::pair<int, int64_t>> heap_parts_;     // large local buffers: slot, offset
  int64_t heap_bytes_ = 0;                              // their block's size
  llvm::Value* heap_ = nullptr;                         // the block, the caller's scratch
};

}  // namespace sgraph::jit
