// KernelBuilder for dynamic regions: shapes whose changing dims are symbols the kernel reads from
// its `dims` argument. A dim is scale * s + offset (ir/sym_shape.h); static dims stay constants,
// so an innermost dim that never changed keeps a constant trip count and vectorises as in a static
// kernel, and a symbolic innermost dim gets LLVM's vector loop with a scalar remainder.
//
// The kernel loads the symbols once for its own use (trip counts) and passes the `dims` pointer
// to the nests that use it, whose bodies load them at their entry (read-only, noalias: hoisted).
// A nest runs only when every symbolic dim of its shape is positive: its loops test their bound
// after the first iteration, so an empty dim must not reach them.
#include <algorithm>

#include "jit/kernel_builder.h"
#include "ops/op.h"

namespace sgraph::jit {

using llvm::Value;

namespace {
std::vector<Shape> static_shapes(const std::vector<SymShape>& sym) {
  std::vector<Shape> out(sym.size());
  for (size_t v = 0; v < sym.size(); ++v)
    if (is_static(sym[v])) out[v] = eval_shape(sym[v], {});
  return out;
}
}  // namespace

KernelBuilder::KernelBuilder(const Graph& g, const Region& r, const std::vector<SymShape>& sym,
                             size_t num_symbols, llvm::Module& m)
    : ops::Emitter(b_, g),
      r_(r),
      own_shapes_(static_shapes(sym)),
      shapes_(own_shapes_),
      sym_(&sym),
      num_symbols_(num_symbols),
      ctx_(m.getContext()),
      m_(m),
      b_(ctx_) {
  producer_.assign(g.values.size(), -1);
  for (int32_t n : r.nodes) producer_[g.nodes[n].outputs[0]] = n;
  slot_of_.assign(g.values.size(), -1);
}

bool KernelBuilder::symbolic(ValueId v) const { return !is_static(sym_shape(v)); }

const SymShape& KernelBuilder::sym_shape(ValueId v) const {
  SG_ASSERT(sym_ && static_cast<size_t>(v) < sym_->size())
      << "no symbolic shape for value '" << graph.values[v].name << "'";
  return (*sym_)[v];
}

void KernelBuilder::load_symbols(Value* dims, std::vector<Value*>& into) {
  into.clear();
  for (size_t k = 0; k < num_symbols_; ++k)
    into.push_back(b_.CreateAlignedLoad(b_.getInt64Ty(),
                                        b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), dims, k),
                                        llvm::Align(8), "sym" + std::to_string(k)));
}

Value* KernelBuilder::dim_value(const SymDim& d) {
  if (!d.symbolic()) return i64(d.offset);
  const std::vector<Value*>& syms = ptrs_.empty() ? kernel_syms_ : nest_syms_;
  SG_ASSERT(static_cast<size_t>(d.sym) < syms.size()) << "symbol " << d.sym << " out of range";
  Value* x = syms[static_cast<size_t>(d.sym)];
  if (d.scale != 1) x = b_.CreateMul(x, i64(d.scale), "", true, true);
  if (d.offset != 0) x = b_.CreateAdd(x, i64(d.offset), "", false, true);
  if (d.div != 1) {  // rounded down (x may be negative: the guard then refuses the call)
    Value* q = b_.CreateSDiv(x, i64(d.div));
    Value* below = b_.CreateAnd(b_.CreateICmpSLT(x, i64(0)),
                                b_.CreateICmpNE(b_.CreateSRem(x, i64(d.div)), i64(0)));
    x = b_.CreateSub(q, b_.CreateZExt(below, b_.getInt64Ty()));
  }
  return x;
}

SymShape KernelBuilder::dims(ValueId v) const {
  return dynamic() ? sym_shape(v) : ops::to_sym(shape(v));
}

void KernelBuilder::loop_nest(const SymShape& s, bool parallel, const Body& body, bool unroll) {
  if (is_static(s))
    loop_nest(eval_shape(s, {}), parallel, body, unroll);
  else
    sym_loop_nest(s, parallel, body);
}

LocalBuffer KernelBuilder::local_buffer(llvm::Type* t, const SymShape& s) {
  if (is_static(s)) return local_buffer(t, numel(eval_shape(s, {})));
  SG_ASSERT(!placed_) << "a local buffer asked for after the kernel's buffers were placed";
  LocalBuffer l{add_slot(t, false, false), t};
  sym_parts_.push_back({l.slot,
                        {static_cast<int64_t>(m_.getDataLayout().getTypeAllocSize(t)), s},
                        nullptr,
                        nullptr});
  return l;
}

// v's element at row-major offset `off` of its symbolic shape: the offset split back into an
// index by the dims' values (the outermost dim takes what is left).
Value* KernelBuilder::sym_element_at_offset(ValueId v, Value* off) {
  const SymShape s = sym_shape(v);
  Index idx(s.size(), i64(0));
  size_t first = 0;
  while (first < s.size() && s[first].is_one()) ++first;
  for (size_t d = s.size(); d-- > first;) {
    if (s[d].is_one()) continue;
    if (d == first) {
      idx[d] = off;
      break;
    }
    Value* n = dim_value(s[d]);
    idx[d] = b_.CreateURem(off, n);
    off = b_.CreateUDiv(off, n);
  }
  return element(v, idx);
}

void KernelBuilder::sym_loop_nest(const SymShape& s, bool parallel, const Body& body) {
  const auto unit = [&](size_t d) { return s[d].is_one(); };
  if (std::any_of(s.begin(), s.end(),
                  [](const SymDim& d) { return !d.symbolic() && d.offset == 0; }))
    return;  // empty for every value of the symbols
  size_t outer = 0;
  while (outer < s.size() && unit(outer)) ++outer;
  // Skip the nest when a symbolic dim is not positive.
  Value* nonempty = nullptr;
  for (const SymDim& d : s) {
    if (!d.symbolic()) continue;
    Value* pos = b_.CreateICmpSGT(dim_value(d), i64(0));
    nonempty = nonempty ? b_.CreateAnd(nonempty, pos) : pos;
  }
  llvm::BasicBlock* after = nullptr;
  if (nonempty) {
    auto* run = llvm::BasicBlock::Create(ctx_, "run", kernel_);
    after = llvm::BasicBlock::Create(ctx_, "after", kernel_);
    b_.CreateCondBr(nonempty, run, after);
    b_.SetInsertPoint(run);
  }
  Value* trip = outer < s.size() ? dim_value(s[outer]) : i64(1);
  llvm::Function* bfn = nullptr;
  llvm::Function* nest = make_nest(bfn);
  const llvm::IRBuilderBase::InsertPoint in_kernel = b_.saveIP();
  emit_loops(
      bfn, s.size(), unit, [&](size_t d) { return dim_value(s[d]); }, outer, 1, body, true);
  const auto [code, used_slots] = finish_nest(nest, bfn, -1);
  b_.restoreIP(in_kernel);
  call_nest(code, used_slots, trip, parallel && !serial_);
  if (after) {
    b_.CreateBr(after);
    b_.SetInsertPoint(after);
  }
}

}  // namespace sgraph::jit
