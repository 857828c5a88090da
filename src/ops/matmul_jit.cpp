// The lowering of MatMul and Gemm: they compute their product into a kernel-local buffer
// through the runtime's GEMM (sgraph_gemm_f32/f64, see kernel_runtime.cpp: the blocked,
// ISA-dispatched GEMM every contraction op uses), called once per kernel call; their consumers
// fuse as the epilogue, reading the product like a region input. Gemm's `+ beta * C` is part of
// the element its consumers read, so a bias and an activation after it cost no extra pass.
//
// An operand that is a region input (or a region input transposed in its last two dims) is
// passed to the GEMM in place; a B that is a large f32 constant of the graph goes to
// sgraph_gemm_const_b_f32, which packs it once per plan (the weights of a linear layer); an operand
// computed in the region is first materialised into a kernel-local buffer by a loop nest of its
// own. Batch dims broadcast as in numpy: the offsets of each batch item's A and B matrices are
// constants in the module.
#include <algorithm>

#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

struct Contraction {  // batch items of op(A)[M,K] x op(B)[K,N]
  SymShape M;  // the dims whose product is M (in a dynamic region, A's batch dims may fold into M)
  SymDim N, K;
  SymShape batch;  // symbolic batch dims that A and B share (a_item, b_item empty): run-time items
  bool ta = false, tb = false;
  double alpha = 1;
  std::vector<int64_t> a_item, b_item;  // per batch item, the index of its A and B matrix
};

struct Operand {
  ValueId value = kNoValue;  // the buffer's value (a region input, or the operand itself)
  bool trans = false;
  LocalBuffer local;     // when the operand is computed in the region: the buffer its nest fills
  bool filled = false;   // local is the buffer its producer holds it in, filled by that producer
  bool swapped = false;  // local holds the operand with its last two dims swapped (trans flipped)
};

struct ContractionPlan {
  Contraction geometry;
  Operand a, b;
  LocalBuffer product;
  // The items' A and B offsets when they are known only at run time (a symbolic batch, or a
  // matrix of symbolic size): filled per call by a nest of their own.
  LocalBuffer a_offsets, b_offsets;
};

// Gemm with a C operand and beta != 0 adds beta * C to the product.
bool adds_c(const Node& n) {
  return n.op == OpKind::Gemm && has_input(n, 2) && gemm_params(n).beta != 0.0;
}

std::string why_not_contraction(const Graph& g, const Node& n) {
  const DType t = g.values[n.outputs[0]].dtype;
  if (t != DType::f32 && t != DType::f64) return "contraction of " + std::string(dtype_name(t));
  return "";
}

// The contraction's geometry from its operands' and output's shapes (symbolic in a dynamic
// region: symbolic batch dims fold into M against a matrix B, or are shared by A and B); "" in
// `why` when they contract.
Contraction geometry_of(const Node& n, const SymShape& a, const SymShape& b, const SymShape& out,
                        std::string& why) {
  Contraction c;
  const auto fail = [&](const char* what) {
    why = what;
    return c;
  };
  if (n.op == OpKind::Gemm) {
    if (a.size() != 2 || b.size() != 2) return fail("operands not matrices");
    const GemmParams gp = gemm_params(n);
    c.ta = gp.trans_a;
    c.tb = gp.trans_b;
    c.M = {c.ta ? a[1] : a[0]};
    c.K = c.ta ? a[0] : a[1];
    c.N = c.tb ? b[0] : b[1];
    if (!((c.tb ? b[1] : b[0]) == c.K) || !(out == SymShape{c.M[0], c.N}))
      return fail("shapes do not contract");
    c.alpha = gp.alpha;
    c.a_item = c.b_item = {0};
    return c;
  }
  if (a.empty() || b.empty()) return fail("a scalar operand");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  c.M = {a_vec ? SymDim::constant(1) : a[a.size() - 2]};
  c.K = a.back();
  c.N = b_vec ? SymDim::constant(1) : b.back();
  if (!((b_vec ? b[0] : b[b.size() - 2]) == c.K)) return fail("shapes do not contract");
  const SymShape sab(a.begin(), a.end() - (a_vec ? 1 : 2)),
      sbb(b.begin(), b.end() - (b_vec ? 1 : 2));
  if (!is_static(sab) || !is_static(sbb)) {
    SymShape expect = sab;
    if (!a_vec && !b_vec && sbb.empty()) {  // [batch.., M, K] x [K, N]: one GEMM of batch * M rows
      c.M.insert(c.M.begin(), sab.begin(), sab.end());
      c.a_item = c.b_item = {0};
    } else if (!a_vec && !b_vec && sab == sbb) {  // the same batch on both sides
      c.batch = sab;
    } else {
      return fail("symbolic batch dims that broadcast");
    }
    expect.push_back(c.M.back());
    expect.push_back(c.N);
    if (!(expect == out)) return fail("shapes do not contract");
    return c;
  }
  const Shape ab = eval_shape(sab, {}), bb = eval_shape(sbb, {});
  const size_t rank = std::max(ab.size(), bb.size());
  Shape batch(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t x = d + ab.size() >= rank ? ab[d + ab.size() - rank] : 1;
    const int64_t y = d + bb.size() >= rank ? bb[d + bb.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) return fail("batch dims do not broadcast");
    batch[d] = std::max(x, y);
  }
  SymShape expect = to_sym(batch);
  if (!a_vec) expect.push_back(c.M[0]);
  if (!b_vec) expect.push_back(c.N);
  if (!(expect == out)) return fail("shapes do not contract");
  // Each batch item's matrix index: a broadcast (size-1) dim has stride 0.
  const auto items = [&](const Shape& s) {
    std::vector<int64_t> stride(rank, 0);
    int64_t st = 1;
    for (size_t j = s.size(); j-- > 0; st *= s[j])
      if (s[j] != 1) stride[j + rank - s.size()] = st;
    std::vector<int64_t> item;
    std::vector<int64_t> idx(rank, 0);
    for (int64_t i = 0, count = numel(batch); i < count; ++i) {
      int64_t o = 0;
      for (size_t d = 0; d < rank; ++d) o += idx[d] * stride[d];
      item.push_back(o);
      for (size_t d = rank; d-- > 0;)
        if (++idx[d] < batch[d])
          break;
        else
          idx[d] = 0;
    }
    return item;
  };
  c.a_item = items(ab);
  c.b_item = items(bb);
  return c;
}

Contraction contraction_geometry(Emitter& e, const Node& n) {
  const SymShape a = e.dims(n.inputs[0]), b = e.dims(n.inputs[1]), out = e.dims(n.outputs[0]);
  std::string why;
  Contraction c = geometry_of(n, a, b, out, why);
  SG_CHECK(why.empty()) << node_str(n) << ": shapes " << sym_shape_str(a, {}) << " x "
                        << sym_shape_str(b, {}) << " -> " << sym_shape_str(out, {}) << ": " << why;
  return c;
}

std::string why_not_dynamic_contraction(const Graph&, const Node& n,
                                        const std::vector<const SymShape*>& in,
                                        const SymShape& out) {
  if (in.size() < 2 || !in[0] || !in[1]) return "missing operands";
  std::string why;
  geometry_of(n, *in[0], *in[1], out, why);
  if (why.empty() && adds_c(n) && in.size() > 2 && in[2]) why = sym_broadcasts(*in[2], out);
  return why;
}

// Whether v is a Transpose whose last dim runs across its input's rows and whose second-to-last
// dim along them (attention's K^T: [b, h, d, s] from [b, s, h, d]): its copy, filled in its own
// order, would read its input at a stride on every element. Filled with its last two dims swapped,
// the copy's inner loop reads the input's rows in order (a vector loop), and the GEMM reads the
// buffer transposed.
template <class Dims>
Dims last_two_swapped(Dims d) {
  std::swap(d[d.size() - 2], d.back());
  return d;
}

bool reads_across_rows(Emitter& e, ValueId v) {
  const Node* p = e.producer(v);
  const auto rank = static_cast<int64_t>(e.dims(v).size());
  if (!p || p->op != OpKind::Transpose || rank < 2) return false;
  const Ints perm = transpose_perm(*p, static_cast<size_t>(rank));
  return perm[rank - 2] == rank - 1 && perm[rank - 1] != rank - 1;
}

// The buffer an operand is read from: a region input in place (perhaps through a Transpose of
// its last two dims, flipping `trans`, unless `transposable` is false), else a local buffer its
// own nest fills.
Operand contraction_operand(Emitter& e, ValueId v, bool matrix_trans, bool transposable = true) {
  Operand o;
  o.value = v;
  o.trans = matrix_trans;
  if (const Node* p = e.producer(v); transposable && p && p->op == OpKind::Transpose) {
    const ValueId in = p->inputs[0];
    const auto rank = static_cast<int64_t>(e.dims(v).size());
    if (rank >= 2 && !e.producer(in)) {
      const Ints perm = transpose_perm(*p, static_cast<size_t>(rank));
      bool swaps_last_two = true;
      for (int64_t d = 0; swaps_last_two && d < rank; ++d)
        swaps_last_two = perm[d] == (d == rank - 2 ? rank - 1 : d == rank - 1 ? rank - 2 : d);
      if (swaps_last_two) {
        o.value = in;
        o.trans = !matrix_trans;
        return o;
      }
    }
  }
  if (!e.producer(o.value)) return o;
  if (const LocalBuffer h = e.plain_held(v); h.defined() && e.dtype(v) != DType::boolean) {
    o.local = h;  // (a Softmax made row by row)
    o.filled = true;
    return o;
  }
  if (transposable && reads_across_rows(e, v)) {
    o.swapped = true;
    o.trans = !matrix_trans;
  }
  o.local = e.local_buffer(memory_type(e.context(), e.dtype(v)),
                           o.swapped ? last_two_swapped(e.dims(v)) : e.dims(v));
  return o;
}

SymShape with(SymShape s, const SymDim& d) {
  s.push_back(d);
  return s;
}
SymShape a_matrix(const Contraction& c) { return with(c.M, c.K); }
SymShape b_matrix(const Contraction& c) { return {c.K, c.N}; }

bool nonzero(const std::vector<int64_t>& items) {
  return std::any_of(items.begin(), items.end(), [](int64_t i) { return i != 0; });
}

// Whether the items' offsets are known only at run time: a symbolic batch, or items past the
// first whose matrices are of symbolic size.
bool runtime_offsets(const Contraction& c) {
  return !c.batch.empty() || (!is_static(a_matrix(c)) && nonzero(c.a_item)) ||
         (!is_static(b_matrix(c)) && nonzero(c.b_item));
}

// The dims the items run over: the symbolic batch, or the static items.
SymShape item_shape(const Contraction& c) {
  return c.batch.empty() ? SymShape{SymDim::constant(static_cast<int64_t>(c.a_item.size()))}
                         : c.batch;
}

// The items' offsets (elements) of matrices of a static size (any size when every item is the
// first matrix).
std::vector<int64_t> static_offsets(const std::vector<int64_t>& item, const SymShape& matrix) {
  if (!nonzero(item)) return std::vector<int64_t>(item.size(), 0);
  std::vector<int64_t> off;
  for (int64_t i : item) off.push_back(i * numel(eval_shape(matrix, {})));
  return off;
}

void allocate_contraction(Emitter& e, const Node& n) {
  ContractionPlan p;
  p.geometry = contraction_geometry(e, n);
  const bool gemm = n.op == OpKind::Gemm;
  // A's batch folded into M reads the items' rows as one matrix: only untransposed.
  p.a = contraction_operand(e, n.inputs[0], gemm && p.geometry.ta, p.geometry.M.size() == 1);
  p.b = contraction_operand(e, n.inputs[1], gemm && p.geometry.tb);
  p.product = e.local_buffer(memory_type(e.context(), e.dtype(n.outputs[0])), e.dims(n.outputs[0]));
  if (runtime_offsets(p.geometry)) {
    const SymShape items = item_shape(p.geometry);
    p.a_offsets = e.local_buffer(e.b.getInt64Ty(), items);
    p.b_offsets = e.local_buffer(e.b.getInt64Ty(), items);
  }
  e.state(n) = std::move(p);
}

// A B operand worth packing once: an f32 constant of the graph (read in place), the same matrix
// for every batch item, of at least kMinPacked elements.
bool packs_b(const Graph& g, DType t, const Operand& b, const Contraction& c) {
  constexpr int64_t kMinPacked = 64 * 64;
  return t == DType::f32 && !b.local.defined() && g.values[b.value].initializer.defined() &&
         c.batch.empty() && !c.K.symbolic() && !c.N.symbolic() &&
         c.K.offset * c.N.offset >= kMinPacked &&
         std::all_of(c.b_item.begin(), c.b_item.end(), [](int64_t o) { return o == 0; });
}

void materialise_contraction(Emitter& e, const Node& n) {
  ContractionPlan& p = e.state_of<ContractionPlan>(n);
  for (Operand* o : {&p.a, &p.b}) {
    if (!o->local.defined() || o->filled) continue;
    // Through views (a Flatten before a Gemm) the buffer is filled in the order of the values
    // they view, which have the same row-major offsets: the nest loops over the viewed value's
    // own dims, not over the view's, whose index it would have to divide back apart per element.
    // (A swapped operand is a Transpose, not a view: it is filled from its own dims, swapped.)
    ValueId v = o->value;
    while (const Node* q = e.producer(v)) {
      if (!op_def(q->op).view) break;
      v = q->inputs[0];
    }
    const SymShape s = o->swapped ? last_two_swapped(e.dims(v)) : e.dims(v);
    const LocalBuffer l = o->local;
    e.loop_nest(s, true, [&](const Index& idx) {
      llvm::Value* x = e.element(v, o->swapped ? last_two_swapped(idx) : idx);
      if (e.dtype(v) == DType::boolean) x = e.b.CreateZExt(x, l.type);
      e.b.CreateStore(x, e.at(l, e.offset_of(idx, s)));
    });
  }
  const Contraction& c = p.geometry;
  const auto base = [&](const Operand& o) {
    return o.local.defined() ? e.frame_pointer(o.local) : e.frame_pointer(o.value);
  };
  const DType t = e.dtype(n.outputs[0]);
  std::vector<int64_t> a_off, b_off;
  llvm::Value* items = nullptr;
  if (runtime_offsets(c)) {
    // Item i's matrices: i itself over a symbolic batch, else its (broadcast) index in the
    // constant tables; times the matrices' sizes.
    const SymShape is = item_shape(c);
    llvm::Value* a_table = c.batch.empty() ? e.i64_array(c.a_item) : nullptr;
    llvm::Value* b_table = c.batch.empty() ? e.i64_array(c.b_item) : nullptr;
    llvm::IRBuilderBase& b = e.b;
    e.loop_nest(is, false, [&](const Index& idx) {
      llvm::Value* i = e.offset_of(idx, is);
      const auto matrix = [&](llvm::Value* table) {
        return table ? b.CreateLoad(b.getInt64Ty(), b.CreateInBoundsGEP(b.getInt64Ty(), table, i))
                     : i;
      };
      b.CreateStore(b.CreateMul(matrix(a_table), e.count(a_matrix(c))), e.at(p.a_offsets, i));
      b.CreateStore(b.CreateMul(matrix(b_table), e.count(b_matrix(c))), e.at(p.b_offsets, i));
    });
    items = e.count(is);
  } else {
    a_off = static_offsets(c.a_item, a_matrix(c));
    b_off = static_offsets(c.b_item, b_matrix(c));
  }
  e.call_gemm({.dtype = t,
               .M = e.count(c.M),
               .N = e.dim(c.N),
               .K = e.dim(c.K),
               .a = base(p.a),
               .b = base(p.b),
               .c = e.frame_pointer(p.product),
               .a_off = std::move(a_off),
               .b_off = std::move(b_off),
               .items = items,
               .a_items = items ? e.frame_pointer(p.a_offsets) : nullptr,
               .b_items = items ? e.frame_pointer(p.b_offsets) : nullptr,
               .ta = p.a.trans,
               .tb = p.b.trans,
               .alpha = c.alpha,
               .const_b = packs_b(e.graph, t, p.b, c)});
}

// The element of a contraction's output at `idx`: the product, plus beta * C for Gemm.
llvm::Value* generate_contraction(Emitter& e, const Node& n, const Index& idx) {
  const ContractionPlan& p = e.state_of<ContractionPlan>(n);
  const SymShape out = e.dims(n.outputs[0]);
  llvm::Value* x = e.b.CreateLoad(p.product.type, e.at(p.product, e.offset_of(idx, out)));
  if (!adds_c(n)) return x;
  const ValueId cv = n.inputs[2];
  llvm::Value* cx = e.element(cv, e.broadcast_index(n, idx, out, e.dims(cv)));
  const double beta = gemm_params(n).beta;
  if (beta != 1.0) cx = e.b.CreateFMul(cx, llvm::ConstantFP::get(x->getType(), beta));
  return e.b.CreateFAdd(x, cx);
}

// Gemm's C is read in its consumers' loops.
std::vector<ValueId> inline_reads_contraction(Emitter&, const Node& n) {
  if (adds_c(n)) return {n.inputs[2]};
  return {};
}

// The product is read like a region input; Gemm's C at the output's broadcast index.
std::optional<std::vector<ValueId>> merge_contraction(Emitter&, const Node& n) {
  if (n.op == OpKind::Gemm && n.inputs.size() > 2) return std::vector<ValueId>{n.inputs[2]};
  return std::vector<ValueId>{};
}

}  // namespace

extern const Lowering kContractionLowering;
const Lowering kContractionLowering{.why_not = why_not_contraction,
                                    .why_not_dynamic = why_not_dynamic_contraction,
                                    .generate = generate_contraction,
                                    .allocate = allocate_contraction,
                                    .materialise = materialise_contraction,
                                    .merge = merge_contraction,
                                    .reads_product = true,
                                    .inline_reads = inline_reads_contraction};

}  // namespace sgraph::ops
