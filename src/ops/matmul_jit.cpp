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
  int64_t M = 0, N = 0, K = 0;
  bool ta = false, tb = false;
  double alpha = 1;
  std::vector<int64_t> a_off, b_off;  // per batch item, in elements
};

struct Operand {
  ValueId value = kNoValue;  // the buffer's value (a region input, or the operand itself)
  bool trans = false;
  LocalBuffer local;  // when the operand is computed in the region: the buffer its nest fills
};

struct ContractionPlan {
  Contraction geometry;
  Operand a, b;
  LocalBuffer product;
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

Contraction contraction_geometry(Emitter& e, const Node& n) {
  Contraction c;
  const Shape a = e.planned_shape(n.inputs[0]), b = e.planned_shape(n.inputs[1]);
  const Shape& out = e.planned_shape(n.outputs[0]);
  const auto fail = [&] {
    SG_FAIL() << node_str(n) << ": shapes " << shape_str(a) << " x " << shape_str(b) << " -> "
              << shape_str(out) << " do not contract";
  };
  if (n.op == OpKind::Gemm) {
    if (a.size() != 2 || b.size() != 2) fail();
    const GemmParams gp = gemm_params(n);
    c.ta = gp.trans_a;
    c.tb = gp.trans_b;
    c.M = c.ta ? a[1] : a[0];
    c.K = c.ta ? a[0] : a[1];
    c.N = c.tb ? b[0] : b[1];
    if ((c.tb ? b[1] : b[0]) != c.K || out != Shape{c.M, c.N}) fail();
    c.alpha = gp.alpha;
    c.a_off = c.b_off = {0};
    return c;
  }
  if (a.empty() || b.empty()) fail();
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  c.M = a_vec ? 1 : a[a.size() - 2];
  c.K = a.back();
  c.N = b_vec ? 1 : b.back();
  if ((b_vec ? b[0] : b[b.size() - 2]) != c.K) fail();
  const Shape ab(a.begin(), a.end() - (a_vec ? 1 : 2)), bb(b.begin(), b.end() - (b_vec ? 1 : 2));
  const size_t rank = std::max(ab.size(), bb.size());
  Shape batch(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t x = d + ab.size() >= rank ? ab[d + ab.size() - rank] : 1;
    const int64_t y = d + bb.size() >= rank ? bb[d + bb.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) fail();
    batch[d] = std::max(x, y);
  }
  Shape expect = batch;
  if (!a_vec) expect.push_back(c.M);
  if (!b_vec) expect.push_back(c.N);
  if (expect != out) fail();
  // Each batch item's matrix offsets: a broadcast (size-1) dim has stride 0.
  const auto offsets = [&](const Shape& s, int64_t matrix) {
    std::vector<int64_t> stride(rank, 0);
    int64_t st = matrix;
    for (size_t j = s.size(); j-- > 0; st *= s[j])
      if (s[j] != 1) stride[j + rank - s.size()] = st;
    std::vector<int64_t> off;
    std::vector<int64_t> idx(rank, 0);
    for (int64_t item = 0, count = numel(batch); item < count; ++item) {
      int64_t o = 0;
      for (size_t d = 0; d < rank; ++d) o += idx[d] * stride[d];
      off.push_back(o);
      for (size_t d = rank; d-- > 0;)
        if (++idx[d] < batch[d])
          break;
        else
          idx[d] = 0;
    }
    return off;
  };
  c.a_off = offsets(ab, c.M * c.K);
  c.b_off = offsets(bb, c.K * c.N);
  return c;
}

// The buffer an operand is read from: a region input in place (perhaps through a Transpose of
// its last two dims, flipping `trans`), else a local buffer its own nest fills.

// The buffer an operand is read from: a region input in place (perhaps through a Transpose of
// its last two dims, flipping `trans`), else a local buffer its own nest fills.
Operand contraction_operand(Emitter& e, ValueId v, bool matrix_trans) {
  Operand o;
  o.value = v;
  o.trans = matrix_trans;
  if (const Node* p = e.producer(v); p && p->op == OpKind::Transpose) {
    const ValueId in = p->inputs[0];
    const auto rank = static_cast<int64_t>(e.planned_shape(v).size());
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
  o.local = e.local_buffer(memory_type(e.context(), e.dtype(v)), numel(e.planned_shape(v)));
  return o;
}

void allocate_contraction(Emitter& e, const Node& n) {
  ContractionPlan p;
  p.geometry = contraction_geometry(e, n);
  const bool gemm = n.op == OpKind::Gemm;
  p.a = contraction_operand(e, n.inputs[0], gemm && p.geometry.ta);
  p.b = contraction_operand(e, n.inputs[1], gemm && p.geometry.tb);
  p.product = e.local_buffer(memory_type(e.context(), e.dtype(n.outputs[0])),
                             numel(e.planned_shape(n.outputs[0])));
  e.state(n) = std::move(p);
}

// A B operand worth packing once: an f32 constant of the graph (read in place), the same matrix
// for every batch item, of at least kMinPacked elements.
bool packs_b(const Graph& g, DType t, const Operand& b, const Contraction& c) {
  constexpr int64_t kMinPacked = 64 * 64;
  return t == DType::f32 && !b.local.defined() && g.values[b.value].initializer.defined() &&
         c.K * c.N >= kMinPacked &&
         std::all_of(c.b_off.begin(), c.b_off.end(), [](int64_t o) { return o == 0; });
}

void materialise_contraction(Emitter& e, const Node& n) {
  ContractionPlan& p = e.state_of<ContractionPlan>(n);
  for (Operand* o : {&p.a, &p.b}) {
    if (!o->local.defined()) continue;
    // Through views (a Flatten before a Gemm) the buffer is filled in the order of the values
    // they view, which have the same row-major offsets: the nest loops over the viewed value's
    // own dims, not over the view's, whose index it would have to divide back apart per element.
    ValueId v = o->value;
    while (const Node* q = e.producer(v)) {
      if (!op_def(q->op).view) break;
      v = q->inputs[0];
    }
    const Shape s = e.planned_shape(v);
    const LocalBuffer l = o->local;
    e.loop_nest(s, true, [&](const Index& idx) {
      llvm::Value* x = e.element(v, idx);
      if (e.dtype(v) == DType::boolean) x = e.b.CreateZExt(x, l.type);
      e.b.CreateStore(x, e.at(l, e.offset_of(idx, s)));
    });
  }
  const Contraction& c = p.geometry;
  const auto base = [&](const Operand& o) {
    return o.local.defined() ? e.frame_pointer(o.local) : e.frame_pointer(o.value);
  };
  const DType t = e.dtype(n.outputs[0]);
  e.call_gemm({.dtype = t,
               .M = c.M,
               .N = c.N,
               .K = c.K,
               .a = base(p.a),
               .b = base(p.b),
               .c = e.frame_pointer(p.product),
               .a_off = c.a_off,
               .b_off = c.b_off,
               .ta = p.a.trans,
               .tb = p.b.trans,
               .alpha = c.alpha,
               .const_b = packs_b(e.graph, t, p.b, c)});
}

// The element of a contraction's output at `idx`: the product, plus beta * C for Gemm.
llvm::Value* generate_contraction(Emitter& e, const Node& n, const Index& idx) {
  const ContractionPlan& p = e.state_of<ContractionPlan>(n);
  const Shape& out = e.shape(n.outputs[0]);
  llvm::Value* x = e.b.CreateLoad(p.product.type, e.at(p.product, e.offset_of(idx, out)));
  if (!adds_c(n)) return x;
  const ValueId cv = n.inputs[2];
  llvm::Value* cx = e.element(cv, e.broadcast_index(n, idx, out, e.shape(cv)));
  const double beta = gemm_params(n).beta;
  if (beta != 1.0) cx = e.b.CreateFMul(cx, llvm::ConstantFP::get(x->getType(), beta));
  return e.b.CreateFAdd(x, cx);
}

// The product is read like a region input; Gemm's C at the output's broadcast index.
std::optional<std::vector<ValueId>> merge_contraction(Emitter&, const Node& n) {
  if (n.op == OpKind::Gemm && n.inputs.size() > 2) return std::vector<ValueId>{n.inputs[2]};
  return std::vector<ValueId>{};
}

}  // namespace

extern const Lowering kContractionLowering;
const Lowering kContractionLowering{.why_not = why_not_contraction,
                                    .generate = generate_contraction,
                                    .allocate = allocate_contraction,
                                    .materialise = materialise_contraction,
                                    .merge = merge_contraction,
                                    .reads_product = true};

}  // namespace sgraph::ops
