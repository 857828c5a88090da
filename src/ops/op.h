// src/ops/op.h — what every op provides, and the helpers op files share.
//
// Each op file defines `const OpDef k<Name>` (see SG_FOR_EACH_OP) holding:
//   types  — output dtypes from input dtypes and attributes; throws sgraph::Error on a type error
//   shapes — output shapes from input shapes, attributes and, for shape-valued inputs, their values
//   run    — the reference kernel: fills outputs already allocated with the inferred shapes
//   element — (elementwise ops, optional) the JIT element emitter: one output element from the
//             operands' elements at the matching (broadcast) index; see src/ops/element.h
//   lowering — (optional) the rest of what the JIT knows about the op: why a node cannot be
//             compiled, its element generator (index ops), how it materialises (reductions,
//             contractions, windows), per-channel operands; see src/ops/lowering.h
//   grad   — (differentiable ops, optional) the gradient rule: the inputs' gradients as ops
//             appended to the graph; see src/ops/grad.h
// An op whose output is a view of input 0 (Reshape, Squeeze, ...) sets `view` and no `run`.
// Errors thrown here carry no node name: the caller (builder, verifier, interpreter) adds it.
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <vector>

#include "ir/sym_shape.h"
#include "sgraph/graph.h"

namespace llvm {
class Value;
}  // namespace llvm

namespace sgraph::ops {

struct ElementCtx;  // src/ops/element.h
struct Lowering;    // src/ops/lowering.h
struct GradCtx;     // src/ops/grad.h
// A JIT element emitter: returns the op's output element from its operands' elements (nullptr
// where an operand is absent), or nullptr when it does not handle the operands' dtypes.
using ElementFn = llvm::Value* (*)(ElementCtx&, std::span<llvm::Value* const> operands);
// A gradient rule: appends the ops computing the gradients of the node's inputs from those of its
// outputs (see src/ops/grad.h).
using GradFn = void (*)(GradCtx&);

struct TypeCtx {
  const Node& node;
  std::span<const DType> in;  // DType::undefined for an absent optional input
  std::vector<DType>& out;    // sized to the node's outputs

  const Attributes& attrs() const { return node.attrs; }
  bool has(size_t i) const { return i < in.size() && in[i] != DType::undefined; }
  void expect_float(size_t i) const;
  void expect_numeric(size_t i) const;  // not bool
  void expect_one_of(size_t i, std::initializer_list<DType> ok) const;
  void expect_same(size_t i, size_t j) const;
  void expect_int_index(size_t i) const;  // i32 or i64
};

// Thrown by ShapeCtx::value when a shape-valued input is not known (verify-time only).
struct ValueUnknown {};

struct ShapeCtx {
  const Node& node;
  std::span<const Shape* const> in;      // nullptr for an absent optional input
  std::span<const Tensor* const> value;  // input values when known (always when running)
  std::span<const DType> dtype;
  std::vector<Shape>& out;
  // When set (sized to the inputs): require_value(i) sets element i, so a caller learns which
  // inputs' values the shapes depend on (the values a compiled region's guard must check).
  std::vector<bool>* values_read = nullptr;

  const Attributes& attrs() const { return node.attrs; }
  bool has(size_t i) const { return i < in.size() && in[i] != nullptr; }
  const Shape& shape(size_t i) const { return *in[i]; }
  int64_t rank(size_t i) const { return static_cast<int64_t>(in[i]->size()); }
  const Tensor& require_value(size_t i) const;  // throws ValueUnknown when not known
};

// Runs the subgraphs of control-flow ops (If's branches). The Session passes one that serves
// each branch through a Session of its own (warm-up, regions, kernels, guards); without one a
// branch is interpreted.
class SubgraphRunner {
 public:
  virtual ~SubgraphRunner() = default;
  // `g` is an attribute of `node` and lives as long as the graph holding the node.
  virtual std::vector<Tensor> run(const Node& node, const Graph& g,
                                  std::span<const Tensor> inputs) = 0;
};

struct KernelCtx {
  const Node& node;
  std::span<const Tensor> in;           // undefined Tensor for an absent optional input
  std::span<Tensor> out;                // allocated with the inferred dtypes and shapes
  SubgraphRunner* subgraphs = nullptr;  // control-flow ops: runs their subgraphs (always given)
  const Attributes& attrs() const { return node.attrs; }
  bool has(size_t i) const { return i < in.size() && in[i].defined(); }
};

struct OpDef {
  std::string_view name;
  int min_inputs, max_inputs;
  int min_outputs, max_outputs;
  void (*types)(TypeCtx&);
  void (*shapes)(ShapeCtx&);
  void (*run)(KernelCtx&);
  bool view = false;  // output 0 is input 0's buffer reshaped: no kernel runs
  // The kernel sets its outputs itself (control flow: shapes are known only when it runs);
  // shapes() is used at graph-build time only.
  bool makes_outputs = false;
  ElementFn element = nullptr;         // the JIT element emitter, for elementwise ops
  const Lowering* lowering = nullptr;  // the JIT lowering, for the other compiled ops
  GradFn grad = nullptr;               // the gradient rule, for differentiable ops
  // Output 0's symbolic shape from the inputs' (nullptr: absent), by the op's shape rule, for the
  // dims warm-up cannot relate by observation (a strided window's "(w+1)/2"); nullopt where the
  // rule gives no such form. The ShapeTracker uses it (symbolic_dims).
  std::optional<SymShape> (*symbolic_shape)(const Graph& g, const Node& n,
                                            std::span<const SymShape* const> in) = nullptr;
  // Output 0's values depend on its inputs' shapes alone, never on their elements (Shape, Size):
  // a region whose guard fixes those shapes needs no value guard for them (runtime/value_guards).
  bool value_of_shapes = false;
  // Output 0's elements, row-major, as forms of the symbols, for a small integer value computed
  // from shapes (Shape(x) -> Slice -> Concat, as exporters write x.view(x.size(0), -1)): from the
  // inputs' symbolic shapes `in` and their elements `elems` where known (nullptr: unknown; a
  // constant's are constant dims); nullopt where the rule gives none. Through it a dynamic region's
  // planner knows, from the symbols alone, a shape operand the region computes itself. Views pass
  // input 0's elements through without one (ops::symbolic_value).
  std::optional<SymShape> (*symbolic_value)(const Graph& g, const Node& n,
                                            std::span<const SymShape* const> in,
                                            std::span<const SymShape* const> elems) = nullptr;
  // The ONNX domain the op belongs to: "" for the default one (ai.onnx), else e.g.
  // "ai.onnx.preview.training". The importer accepts a node only from its op's domain; the
  // exporter writes it there.
  std::string_view domain = "";
};

const OpDef& op_def(OpKind op);

// `def` with its JIT element emitter: const OpDef kAdd = with_element(emit_add, {"Add", ...});
constexpr OpDef with_element(ElementFn element, OpDef def) {
  def.element = element;
  return def;
}

// `def` with its JIT lowering: const OpDef kSlice = with_lowering(&kSliceLowering, {"Slice", ...});
constexpr OpDef with_lowering(const Lowering* lowering, OpDef def) {
  def.lowering = lowering;
  return def;
}

// `def` with its symbolic shape rule.
constexpr OpDef with_symbolic_shape(
    std::optional<SymShape> (*rule)(const Graph&, const Node&, std::span<const SymShape* const>),
    OpDef def) {
  def.symbolic_shape = rule;
  return def;
}

// `def` with its rule for the symbolic elements of a small integer output (OpDef::symbolic_value).
constexpr OpDef with_symbolic_value(
    std::optional<SymShape> (*rule)(const Graph&, const Node&, std::span<const SymShape* const>,
                                    std::span<const SymShape* const>),
    OpDef def) {
  def.symbolic_value = rule;
  return def;
}

// Node n's output elements as forms of the symbols (OpDef::symbolic_value; a view's are input 0's),
// `in` and `elems` as there; nullopt where they are not known.
std::optional<SymShape> symbolic_value(const Graph& g, const Node& n,
                                       std::span<const SymShape* const> in,
                                       std::span<const SymShape* const> elems);

// `def` in an ONNX domain other than the default one: with_domain("ai.onnx.preview.training", ...).
constexpr OpDef with_domain(std::string_view domain, OpDef def) {
  def.domain = domain;
  return def;
}

// `def` with its gradient rule: const OpDef kTanh = with_grad(grad_tanh, with_element(...));
constexpr OpDef with_grad(GradFn grad, OpDef def) {
  def.grad = grad;
  return def;
}

// ---- shared helpers ------------------------------------------------------------------------

// Normalises a possibly negative axis against `rank`; throws naming the attribute when out of
// range.
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view what = "axis");
// Numpy-style broadcast of two shapes; throws naming both shapes when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Row-major strides of `shape`.
Shape strides_of(const Shape& shape);
// Strides to read a tensor of `in_shape` as if broadcast to `out_shape` (0 along broadcast dims).
Shape broadcast_strides(const Shape& in_shape, const Shape& out_shape);

// A tensor of `shape` viewed as [outer, dim, inner] around the (normalised) `axis`.
struct AxisSplit {
  int64_t outer, dim, inner;
};
AxisSplit split_at_axis(const Shape& shape, int64_t axis);

// visit_dtype for float-only kernels (their types() rule has already rejected other dtypes).
template <class F>
decltype(auto) visit_float(DType t, F&& f) {
  if (t == DType::f32) return f.template operator()<float>();
  SG_ASSERT(t == DType::f64) << "float kernel called on " << dtype_name(t);
  return f.template operator()<double>();
}

// The string attribute `name` (default: names[0]) as the enumerator at its index in `names`;
// throws "unknown <op> <name> '<value>' (expected one of ...)" for any other value.
template <class E, size_t N>
E attr_choice(const Attributes& a, std::string_view op, const char* name,
              const std::array<const char*, N>& names) {
  const std::string v = a.get_string(name, names[0]);
  for (size_t i = 0; i < N; ++i)
    if (v == names[i]) return static_cast<E>(i);
  detail::Message m;
  m << "unknown " << op << " " << name << " '" << v << "' (expected one of";
  for (const char* n : names) m << " " << n;
  throw Error(m.str() + ")");
}

// Common type rules.
void types_same_as_input0(TypeCtx& c);
void types_float_same(TypeCtx& c);  // input 0 float; every output takes its dtype
// Common shape rule: output 0 has input 0's shape.
void shapes_same_as_input0(ShapeCtx& c);

// Visits every index of `out_shape` in row-major order, calling f(out_linear, in_offset...) where
// each in_offset walks its tensor with the given (broadcast) strides. Inner dimension is a
// tight loop.
template <size_t N, class F>
void for_each_broadcast(const Shape& out_shape, const std::array<Shape, N>& in_strides, F&& f) {
  const int64_t rank = static_cast<int64_t>(out_shape.size());
  const int64_t total = numel(out_shape);
  if (total == 0) return;
  if (rank == 0) {
    std::array<int64_t, N> off{};
    f(int64_t{0}, off);
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, N> off{};
  const int64_t inner = out_shape[rank - 1];
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = in_strides[k][rank - 1];
  for (int64_t base = 0; base < total; base += inner) {
    std::array<int64_t, N> o = off;
    for (int64_t j = 0; j < inner; ++j) {
      f(base + j, o);
      for (size_t k = 0; k < N; ++k) o[k] += inner_stride[k];
    }
    // advance the outer index (dims 0..rank-2)
    for (int64_t d = rank - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += in_strides[k][d];
      if (idx[d] < out_shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= in_strides[k][d] * out_shape[d];
      idx[d] = 0;
    }
  }
}

// Whether the JIT can fuse `op` into a region: it has an element emitter, or a lowering that
// generates or materialises its elements (src/ops/lowering.cpp). Whether a node of it can also
// depends on its lowering's why_not (dtypes, constant parameters).
bool is_compilable(OpKind op);
// Why node n's op lowering refuses it, from the graph's dtypes and constants ("" when it takes it,
// or has no such rule): Lowering::why_not, for code that does not include LLVM.
std::string why_not_lowered(const Graph& g, const Node& n);

}  // namespace sgraph::ops
