// How an op compiles into a region kernel: its lowering record (OpDef::lowering), and the Emitter
// API a lowering emits through. The JIT core (src/jit/kernel_builder) implements Emitter and names
// no op: everything it knows about an op comes from the op's OpDef.
//
// A region kernel is a sequence of loop nests (see src/jit/kernel_builder.h). Inside a nest, an
// element of a value at an index is *generated*: loaded from a region input, or made by the
// producing node from its operands' elements (the idea of XLA's elemental IR emitter):
//   - an elementwise op needs only OpDef::element (src/ops/element.h); the core makes the
//     operands' elements at the numpy-broadcast index (per channel for `per_channel` operands);
//   - an index op (views, Transpose, Slice, Pad, Gather, ...) sets `generate`: it maps the index
//     and asks for its operands' elements there, e.element(x, mapped);
//   - an op that *materialises* (reductions, Softmax, LayerNormalization, MatMul/Gemm, Conv and
//     pools) sets `allocate`, to plan its kernel-local buffers before any nest exists, and
//     `materialise`, to emit the nests that fill them (run in the region's node order, before the
//     output nests); its consumers then read its elements through `generate` (or, for a value
//     computed whole into a buffer, `Emitter::hold`).
// `merge` says how the dims of a loop nest reading the op's output may be merged into one loop
// (see src/jit/coalesce.cpp); a generating op that does not set it stops merging.
//
//   extern const Lowering kTransposeLowering;   // src/ops/transpose_jit.cpp
//   const OpDef kTranspose = with_lowering(&kTransposeLowering, OpDef{"Transpose", ...});
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <any>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/sym_shape.h"
#include "ops/element.h"
#include "sgraph/graph.h"

namespace sgraph::ops {

using Index = std::vector<llvm::Value*>;  // an i64 per dimension

// A kernel-local buffer (Emitter::local_buffer); slot < 0: none.
struct LocalBuffer {
  int slot = -1;
  llvm::Type* type = nullptr;  // the element type in memory
  bool defined() const { return slot >= 0; }
};

// A call of the runtime GEMM: batch item i computes C_i = alpha * op(A_i) op(B_i) into c, with
// A_i at a + a_off[i] and B_i at b + b_off[i] (in elements), row-major [M,K] x [K,N] -> [M,N].
// M, N and K are i64 values of the kernel frame: constants in a static region, computed from the
// symbols in a dynamic one.
struct GemmCall {
  DType dtype = DType::f32;
  llvm::Value *M = nullptr, *N = nullptr, *K = nullptr;
  llvm::Value *a = nullptr, *b = nullptr, *c = nullptr;  // pointers valid in the kernel frame
  std::vector<int64_t> a_off, b_off;                     // one per batch item (all 0: none)
  // Offsets known only at run time: `items` items, A_i at a + a_items[i], B_i at b + b_items[i]
  // (i64 arrays in the frame; a_off and b_off unused).
  llvm::Value* items = nullptr;
  llvm::Value *a_items = nullptr, *b_items = nullptr;
  bool ta = false, tb = false;
  double alpha = 1;
  bool const_b = false;  // B is a constant packed once per plan (f32; b_off all 0)
  bool const_a = false;  // A is a constant, each item's packed once per plan when B is short (f32)
};

// A call of the runtime's Winograd conv (ops/winograd.h, sgraph_conv_winograd_f32): weights
// [M, C, KH, 3] (a constant of the graph), the padded source [N, C, Hs, Ws], row stride sh and
// dilation dh, the output [N, M, OH, OW], scratch v and y (see kernel_runtime.h for their sizes).
struct WinogradCall {
  llvm::Value *weights = nullptr, *src = nullptr, *v = nullptr, *y = nullptr, *out = nullptr;
  int64_t M = 0, C = 0, KH = 1, sh = 1, dh = 1;
  llvm::Value *N = nullptr, *Hs = nullptr, *Ws = nullptr, *OH = nullptr, *OW = nullptr;
  bool rows = false;  // F(2x2,3x3): KH 3, sh and dh 1
};

class Emitter {
 public:
  using Body = std::function<void(const Index&)>;
  // Turns a held buffer's loaded element into the value's element (e.g. divides a sum).
  using Finish = std::function<llvm::Value*(llvm::Value* loaded)>;

  Emitter(llvm::IRBuilderBase& builder, const Graph& g) : b(builder), graph(g) {}
  virtual ~Emitter() = default;

  llvm::IRBuilderBase& b;
  const Graph& graph;

  llvm::LLVMContext& context() const { return b.getContext(); }
  llvm::Value* i64(int64_t v) const { return b.getInt64(static_cast<uint64_t>(v)); }
  DType dtype(ValueId v) const { return graph.values[v].dtype; }

  // ---- shapes and producers
  // The static shape of v as planned.
  virtual const Shape& planned_shape(ValueId v) const = 0;
  // v's shape in the current loop nest: planned, or with dims merged (see coalesce.cpp).
  virtual const Shape& shape(ValueId v) const = 0;
  virtual bool merged(ValueId v) const = 0;
  // The region's node making v; nullptr for a region input.
  virtual const Node* producer(ValueId v) const = 0;

  // ---- elements, inside a loop nest's body
  virtual llvm::Value* element(ValueId v, const Index& idx) = 0;
  // v's element at row-major offset `off` of its (current) shape.
  virtual llvm::Value* element_at_offset(ValueId v, llvm::Value* off) = 0;
  // The index of an operand of shape `in` that output index `idx` (of shape `out`) reads, by
  // numpy broadcasting; throws sgraph::Error naming the node when `in` does not broadcast.
  Index broadcast_index(const Node& n, const Index& idx, const Shape& out, const Shape& in);
  // The index of a per-channel operand v ([C], read at the output's dim 1).
  Index channel_index(const Node& n, ValueId v, const Index& idx);
  llvm::Value* offset_of(const Index& idx, const Shape& s);

  // ---- buffers
  // A kernel-local buffer of `count` elements of `t`; only while allocating.
  virtual LocalBuffer local_buffer(llvm::Type* t, int64_t count) = 0;
  // The buffer's pointer in the current nest, and the address of its element `off`.
  virtual llvm::Value* pointer(const LocalBuffer& l) = 0;
  llvm::Value* at(const LocalBuffer& l, llvm::Value* off) {
    return b.CreateInBoundsGEP(l.type, pointer(l), off);
  }
  // Pointers in the kernel's frame (outside nests: for runtime calls such as the GEMM): a local
  // buffer's, or the buffer argument of a region input or output.
  virtual llvm::Value* frame_pointer(const LocalBuffer& l) = 0;
  virtual llvm::Value* frame_pointer(ValueId v) = 0;
  // From now on, v's element at row-major offset o is finish(load of l at o): v is computed whole
  // into l (a reduction's accumulators); a null finish: l holds v's elements as they are. Only
  // while allocating.
  virtual void hold(ValueId v, LocalBuffer l, Finish finish) = 0;
  virtual bool held(ValueId v) const = 0;
  // The buffer holding v's elements as they are (held with a null finish), for a node reading it
  // whole (a GEMM operand); undefined otherwise.
  virtual LocalBuffer plain_held(ValueId v) const = 0;
  // v's own region-output buffer as a buffer its node fills whole, reads back as it likes and
  // holds v in (hold(v, l, ...)): no output nest then copies v. Undefined (slot < 0) when v is
  // not a region output. Only while allocating.
  virtual LocalBuffer output_buffer(ValueId v) = 0;

  // ---- code
  // A loop nest over `s`, body(idx) at the innermost level. `parallel`: iterations of the
  // outermost loop write disjoint memory (it may be split over threads). `unroll` false: LLVM may
  // not unroll the loops around the innermost.
  virtual void loop_nest(const Shape& s, bool parallel, const Body& body, bool unroll = true) = 0;
  // A loop over j = 0 .. trip-1 (an i64; none when trip <= 0) inside a nest's body, carrying
  // values: body(j, carried) returns the next ones (of the same types); returns their values
  // after the loop (`init` when it ran no iteration). Elements made inside the loop are not
  // reused after it. Several such loops over one row, while it is in the L1 cache, make a row
  // statistic and then the row's outputs (Softmax).
  using InnerBody =
      std::function<std::vector<llvm::Value*>(llvm::Value* j, const std::vector<llvm::Value*>&)>;
  virtual std::vector<llvm::Value*> inner_loop(llvm::Value* trip,
                                               const std::vector<llvm::Value*>& init,
                                               const InnerBody& body) = 0;
  virtual void call_gemm(const GemmCall& call) = 0;
  virtual void call_winograd(const WinogradCall& call) = 0;
  // Constant global arrays (tables indexed at run time).
  virtual llvm::Value* i64_array(const Ints& values) = 0;
  virtual llvm::Value* f64_array(const std::vector<double>& values) = 0;

  // ---- symbolic shapes. A lowering written against these serves both tiers: in a static
  // region every dim is a constant (and each call below is its static counterpart's), in a
  // dynamic region (ir/sym_shape.h) a dim may be scale * symbol + offset, read at run time.
  // Dynamic regions merge no dims, so a shape here is always the value's own.
  virtual bool dynamic() const = 0;
  // v's shape in the current nest, with its symbolic dims.
  virtual SymShape dims(ValueId v) const = 0;
  // A dim's value where code is being emitted (a nest's body or the kernel frame).
  virtual llvm::Value* dim(const SymDim& d) = 0;
  llvm::Value* count(const SymShape& s);  // the product of s's dims
  llvm::Value* offset_of(const Index& idx, const SymShape& s);
  // As broadcast_index; in a dynamic region an operand dim equals the output's or is a static 1.
  Index broadcast_index(const Node& n, const Index& idx, const SymShape& out, const SymShape& in);
  virtual void loop_nest(const SymShape& s, bool parallel, const Body& body,
                         bool unroll = true) = 0;
  // A local buffer of count(s) elements; a symbolic size is placed per call in the scratch block.
  virtual LocalBuffer local_buffer(llvm::Type* t, const SymShape& s) = 0;

  // ---- per-node state, from allocate to materialise and generate
  virtual std::any& state(const Node& n) = 0;
  template <class T>
  T& state_of(const Node& n) {
    return std::any_cast<T&>(state(n));
  }
};

// How the elements of a node with `materialise` are made in its consumers' loops
// (Lowering::made_inline).
enum class MadeInline {
  no,           // read from a buffer its own nests fill, or cheap to make again
  from_source,  // a window of taps over a copy of its input its own nests make
  from_input,   // a window of taps over its input's elements, made there too
};

struct Lowering {
  // Why node n cannot join a region ("" when it can), from the graph's dtypes and constants.
  // Null: it can (for an elementwise op, when its element emitter handles the dtypes).
  std::string (*why_not)(const Graph& g, const Node& n) = nullptr;
  // Why node n cannot be compiled in a dynamic region where its operands have the symbolic shapes
  // `in` (nullptr: an absent input) and its output `out`; "" when it can. Null for an op with
  // `generate` or `materialise`: its lowering takes no symbolic dims (an elementwise op's rule is
  // the core's, see why_not_dynamic in src/jit/region_compiler.h).
  std::string (*why_not_dynamic)(const Graph& g, const Node& n,
                                 const std::vector<const SymShape*>& in,
                                 const SymShape& out) = nullptr;
  // The least values of dims (over the symbols of `in` and `out`) the dynamic kernel of n needs
  // beyond every symbolic dim being at least 1 (a slice of a static length k from a symbolic dim
  // needs that dim at least k); the dynamic guard checks them. Null: none.
  void (*dynamic_needs)(const Graph& g, const Node& n, const std::vector<const SymShape*>& in,
                        const SymShape& out,
                        std::vector<std::pair<SymDim, int64_t>>& least) = nullptr;
  // The element of n's output at `idx` (in the output's current shape).
  llvm::Value* (*generate)(Emitter& e, const Node& n, const Index& idx) = nullptr;
  void (*allocate)(Emitter& e, const Node& n) = nullptr;
  void (*materialise)(Emitter& e, const Node& n) = nullptr;
  // The operands read at the output's (broadcast) index, whose dims merge with the output's; {}:
  // none (elements read from a buffer); nullopt: the op needs its output's real index. Null:
  // every input for an op without `generate` (elementwise), nullopt for one with it.
  std::optional<std::vector<ValueId>> (*merge)(Emitter& e, const Node& n) = nullptr;
  // Whether input i is a per-channel vector [C] read at the element's index along dim 1
  // (BatchNormalization's parameters, Conv's bias) rather than numpy-broadcast.
  bool (*per_channel)(const Node& n, size_t i) = nullptr;
  // Its elements are loads from a product it computes (MatMul/Gemm): windows under it are
  // computed in that product's own nests.
  bool reads_product = false;
  // For a node with `materialise`: how its consumers' loops make its elements, after allocate.
  // Null: MadeInline::no. An output made inline (a direct window: costly to make again) that
  // several nests read is computed once into a buffer they all read (KernelBuilder).
  MadeInline (*made_inline)(Emitter& e, const Node& n) = nullptr;
  // For a node with `materialise` whose consumers' loops make its elements (`generate`): the
  // inputs whose elements each of those loops makes again (LayerNormalization's input; Gemm's C).
  // Null: none. Asked before `allocate`, by the kernel's choice of the values several nests
  // would each make again (KernelBuilder::shared_values).
  std::vector<ValueId> (*inline_reads)(Emitter& e, const Node& n) = nullptr;
};

// ---- helpers lowerings share (lowering.cpp) --------------------------------------------------

std::string node_str(const Node& n);  // "node 'name' (Op)"
std::vector<DType> operand_dtypes(const Graph& g, const Node& n);
// The type of dtype t in memory (a bool is a byte).
llvm::Type* memory_type(llvm::LLVMContext& ctx, DType t);
bool has_input(const Node& n, size_t i);
bool is_constant(const Graph& g, const Node& n, size_t i);
// Input i's constant value, nullptr when absent; asserts it is a constant when present.
const Tensor* constant_input(const Graph& g, const Node& n, size_t i);
// "" when input i is absent or a constant, else "its <what> input is not a constant".
std::string need_constant(const Graph& g, const Node& n, size_t i, const char* what);

// The element of a one-element value v (a scalar operand: rank 0, or dims of 1), where code is
// being emitted.
llvm::Value* scalar_element(Emitter& e, ValueId v);
// idx mapped from shape `from` to a shape `to` that differs only in size-1 dims; nullopt if not.
std::optional<Index> unit_dims_map(Emitter& e, const Index& idx, const Shape& from,
                                   const Shape& to);
// i clamped into [lo, hi].
llvm::Value* clamp(Emitter& e, llvm::Value* i, int64_t lo, int64_t hi);
// i clamped into [lo, hi], hi a run-time value (>= lo).
llvm::Value* clamp(Emitter& e, llvm::Value* i, int64_t lo, llvm::Value* hi);
// max(a, x) for dtype t (floats: NaN propagates).
llvm::Value* max_of(llvm::IRBuilderBase& b, llvm::Value* a, llvm::Value* x, DType t);
// min(a, x) for dtype t (floats: NaN propagates).
llvm::Value* min_of(llvm::IRBuilderBase& b, llvm::Value* a, llvm::Value* x, DType t);
// The highest value of dtype t (+inf for floats).
llvm::Value* highest(DType t, llvm::Type* type);
// The lowest value of dtype t (-inf for floats).
llvm::Value* lowest(DType t, llvm::Type* type);
// a + x, allowed to reassociate (so accumulations vectorise).
llvm::Value* reassoc_fadd(llvm::IRBuilderBase& b, llvm::Value* a, llvm::Value* x);
// Whether a nest over `s` accumulating into a buffer indexed without the `collapsed` dims may
// split its outermost loop over threads: only if that loop's dim is kept.
bool outer_kept(const Shape& s, const std::vector<bool>& collapsed);
bool outer_kept(const SymShape& s, const std::vector<bool>& collapsed);

// ---- symbolic shapes
SymShape to_sym(const Shape& s);
// The output shape of a reduction of `in` over the `reduced` dims, each kept as a 1 when n's
// keepdims attribute (default 1) is set, else dropped.
SymShape reduced_shape(const Node& n, const SymShape& in, const std::vector<bool>& reduced);
// "" when an operand of shape `in` broadcasts to `out` in a dynamic region (each dim the output's
// or a static 1), else why not.
std::string sym_broadcasts(const SymShape& in, const SymShape& out);

}  // namespace sgraph::ops
