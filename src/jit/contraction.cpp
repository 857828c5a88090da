// Contractions inside a region: MatMul and Gemm compute their product into a kernel-local buffer
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

#include "jit/element.h"
#include "jit/kernel_builder.h"
#include "jit/region_compiler.h"

namespace sgraph::jit {

using llvm::Value;

bool contracts(OpKind op) { return op == OpKind::MatMul || op == OpKind::Gemm; }

std::string why_not_contracted(const Graph& g, const Node& n) {
  const DType t = g.values[n.outputs[0]].dtype;
  if (t != DType::f32 && t != DType::f64) return "contraction of " + std::string(dtype_name(t));
  return "";
}

namespace {
// Gemm with a C operand and beta != 0 adds beta * C to the product.
bool adds_c(const Node& n) {
  return n.op == OpKind::Gemm && n.inputs.size() > 2 && n.inputs[2] != kNoValue &&
         n.attrs.get_float("beta", 1.0) != 0.0;
}
}  // namespace

KernelBuilder::Contraction KernelBuilder::contraction_geometry(const Node& n) {
  Contraction c;
  const Shape a = shapes_.at(n.inputs[0]), b = shapes_.at(n.inputs[1]);
  const Shape& out = shapes_.at(n.outputs[0]);
  const auto fail = [&] {
    SG_FAIL() << node_str(n) << ": shapes " << shape_str(a) << " x " << shape_str(b) << " -> "
              << shape_str(out) << " do not contract";
  };
  if (n.op == OpKind::Gemm) {
    if (a.size() != 2 || b.size() != 2) fail();
    c.ta = n.attrs.get_int("transA", 0) != 0;
    c.tb = n.attrs.get_int("transB", 0) != 0;
    c.M = c.ta ? a[1] : a[0];
    c.K = c.ta ? a[0] : a[1];
    c.N = c.tb ? b[0] : b[1];
    if ((c.tb ? b[1] : b[0]) != c.K || out != Shape{c.M, c.N}) fail();
    c.alpha = n.attrs.get_float("alpha", 1.0);
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
KernelBuilder::Operand KernelBuilder::contraction_operand(ValueId v, bool matrix_trans) {
  Operand o;
  o.value = v;
  o.trans = matrix_trans;
  if (producer_[v] >= 0) {
    const Node& p = g_.nodes[producer_[v]];
    const ValueId in = p.inputs[0];
    const size_t rank = shapes_.at(v).size();
    if (p.op == OpKind::Transpose && rank >= 2 && producer_[in] < 0) {
      Ints perm = p.attrs.get_ints("perm", {});
      bool swaps_last_two = perm.size() == rank;
      for (size_t d = 0; swaps_last_two && d < rank; ++d) {
        const size_t want = d == rank - 2 ? rank - 1 : d == rank - 1 ? rank - 2 : d;
        swaps_last_two = perm[d] == static_cast<int64_t>(want);
      }
      if (rank == 2 && perm.empty()) swaps_last_two = true;  // the default reverses the dims
      if (swaps_last_two) {
        o.value = in;
        o.trans = !matrix_trans;
        return o;
      }
    }
  }
  if (producer_[o.value] < 0) return o;
  o.local = local_buffer(memory_type(ctx_, g_.values[v].dtype), numel(shapes_.at(v)));
  return o;
}

void KernelBuilder::allocate_contraction(const Node& n) {
  ContractionPlan p;
  p.geometry = contraction_geometry(n);
  const bool gemm = n.op == OpKind::Gemm;
  p.a = contraction_operand(n.inputs[0], gemm && p.geometry.ta);
  p.b = contraction_operand(n.inputs[1], gemm && p.geometry.tb);
  p.product = local_buffer(memory_type(ctx_, g_.values[n.outputs[0]].dtype),
                           numel(shapes_.at(n.outputs[0])));
  contraction_[&n] = std::move(p);
}

void KernelBuilder::materialise_contraction(const Node& n) {
  ContractionPlan& p = contraction_.at(&n);
  for (Operand* o : {&p.a, &p.b}) {
    if (o->local.slot < 0) continue;
    // Through views (a Flatten before a Gemm) the buffer is filled in the order of the values
    // they view, which have the same row-major offsets: the nest loops over the viewed value's
    // own dims, not over the view's, whose index it would have to divide back apart per element.
    ValueId v = o->value;
    while (producer_[v] >= 0 && index_map(g_.nodes[producer_[v]].op) == IndexMap::same_offset)
      v = g_.nodes[producer_[v]].inputs[0];
    const Shape s = shapes_.at(v);
    const Local l = o->local;
    loop_nest(s, true, [&](const Index& idx) {
      Value* x = element(v, idx);
      if (g_.values[v].dtype == DType::boolean) x = b_.CreateZExt(x, l.type);
      b_.CreateStore(x, local_ptr(l, offset_of(idx, s)));
    });
  }
  const Contraction& c = p.geometry;
  const auto base = [&](const Operand& o) {
    return o.local.slot >= 0 ? kernel_ptrs_[o.local.slot] : kernel_ptrs_[slot_of_[o.value]];
  };
  const DType t = g_.values[n.outputs[0]].dtype;
  call_gemm(t, c.M, c.N, c.K, base(p.a), c.a_off, p.a.trans, base(p.b), c.b_off, p.b.trans,
            kernel_ptrs_[p.product.slot], c.alpha, packs_b(t, p.b, c));
}

// A B operand worth packing once: an f32 constant of the graph (read in place), the same matrix
// for every batch item, of at least kMinPacked elements.
bool KernelBuilder::packs_b(DType t, const Operand& b, const Contraction& c) const {
  constexpr int64_t kMinPacked = 64 * 64;
  return t == DType::f32 && b.local.slot < 0 && g_.values[b.value].initializer.defined() &&
         c.K * c.N >= kMinPacked &&
         std::all_of(c.b_off.begin(), c.b_off.end(), [](int64_t o) { return o == 0; });
}

void KernelBuilder::call_gemm(DType t, int64_t M, int64_t N, int64_t K, Value* a,
                              const std::vector<int64_t>& a_off, bool ta, Value* b,
                              const std::vector<int64_t>& b_off, bool tb, Value* c, double alpha,
                              bool const_b) {
  SG_ASSERT(a_off.size() == b_off.size()) << "GEMM batch offsets differ in count";
  llvm::Type* i64t = b_.getInt64Ty();
  llvm::Type* ptr = b_.getPtrTy();
  const auto offsets = [&](const std::vector<int64_t>& off) -> Value* {
    if (std::all_of(off.begin(), off.end(), [](int64_t o) { return o == 0; }))
      return llvm::ConstantPointerNull::get(b_.getPtrTy());
    return i64_array(off);
  };
  // The same arguments for each helper; sgraph_gemm_const_b_f32's B offsets are null (packs_b).
  const char* fn = const_b           ? "sgraph_gemm_const_b_f32"
                   : t == DType::f32 ? "sgraph_gemm_f32"
                                     : "sgraph_gemm_f64";
  llvm::FunctionCallee gemm =
      m_.getOrInsertFunction(fn, b_.getVoidTy(), ptr, i64t, i64t, i64t, i64t, ptr, ptr, i64t, ptr,
                             ptr, i64t, ptr, b_.getDoubleTy());
  b_.CreateCall(gemm, {kernel_->getArg(2), i64(static_cast<int64_t>(a_off.size())), i64(M), i64(N),
                       i64(K), a, offsets(a_off), i64(ta ? 1 : 0), b, offsets(b_off),
                       i64(tb ? 1 : 0), c, llvm::ConstantFP::get(b_.getDoubleTy(), alpha)});
}

// The element of a contraction's output at `idx`: the product, plus beta * C for Gemm.
Value* KernelBuilder::contraction_element(const Node& n, const Index& idx) {
  const ContractionPlan& p = contraction_.at(&n);
  const Shape& out = shape(n.outputs[0]);
  Value* x = b_.CreateLoad(p.product.type, local_ptr(p.product, offset_of(idx, out)));
  if (!adds_c(n)) return x;
  const ValueId cv = n.inputs[2];
  Value* cx = element(cv, broadcast_index(n, idx, out, shape(cv)));
  const double beta = n.attrs.get_float("beta", 1.0);
  if (beta != 1.0) cx = b_.CreateFMul(cx, llvm::ConstantFP::get(x->getType(), beta));
  return b_.CreateFAdd(x, cx);
}

}  // namespace sgraph::jit
