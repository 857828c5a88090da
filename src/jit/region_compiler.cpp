// The region compiler (see region_compiler.h).
#include "jit/region_compiler.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <utility>

#include "jit/element.h"
#include "ops/op.h"
#include "runtime/debug.h"

namespace sgraph::jit {
namespace {

using llvm::Value;
using Index = std::vector<Value*>;  // an i64 per dimension

// In memory a bool is a byte.
llvm::Type* memory_type(llvm::LLVMContext& ctx, DType t) {
  return t == DType::boolean ? llvm::Type::getInt8Ty(ctx) : ops::element_type(ctx, t);
}

// Ops the compiler maps indices for itself; every other op needs an element emitter. A view op
// (Identity, Reshape, Flatten, Squeeze, Unsqueeze) reads its input at the same row-major offset.
enum class IndexMap { none, same_offset, transpose, broadcast };
IndexMap index_map(OpKind op);

std::string node_str(const Node& n) {
  return "node '" + n.name + "' (" + std::string(op_name(n.op)) + ")";
}

std::vector<DType> operand_dtypes(const Graph& g, const Node& n) {
  std::vector<DType> in;
  for (ValueId v : n.inputs) in.push_back(v == kNoValue ? DType::undefined : g.values[v].dtype);
  return in;
}

// Calls the node's emitter on placeholder operands: "" when it handles the node's dtypes.
std::string probe_emitter(llvm::Module& m, const Node& n, const std::vector<DType>& in, DType out) {
  llvm::LLVMContext& ctx = m.getContext();
  std::vector<llvm::Type*> params;
  for (DType t : in) {
    if (t == DType::undefined) continue;
    params.push_back(ops::element_type(ctx, t));
    if (!params.back()) return "unsupported dtype " + std::string(dtype_name(t));
  }
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false);
  auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "probe", m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  std::vector<Value*> operands;
  for (size_t i = 0, arg = 0; i < in.size(); ++i)
    operands.push_back(in[i] == DType::undefined ? nullptr : f->getArg(arg++));
  ops::ElementCtx c{b, n, in, out};
  Value* x = nullptr;
  try {
    x = ops::op_def(n.op).element(c, operands);
  } catch (const Error& e) {
    return e.message();
  }
  if (x && x->getType() == ops::element_type(ctx, out)) return "";
  std::string types;
  for (DType t : in) types += (types.empty() ? "" : ", ") + std::string(dtype_name(t));
  return "no element emitter for operands (" + types + ")";
}

// Builds the kernel function of one region into a module.
class KernelBuilder {
 public:
  KernelBuilder(const Graph& g, const Region& r, const std::vector<Shape>& shapes, llvm::Module& m)
      : g_(g), r_(r), shapes_(shapes), ctx_(m.getContext()), m_(m), b_(ctx_) {
    producer_.assign(g.values.size(), -1);
    for (int32_t n : r.nodes) producer_[g.nodes[n].outputs[0]] = n;
    buffer_.assign(g.values.size(), nullptr);
  }

  // void name(void* const* buffers, const int64_t* dims, void* ctx) loads the buffer pointers and
  // calls an always-inline body whose pointer parameters are noalias, so that LLVM knows the
  // outputs overlap nothing and vectorises without runtime checks.
  void build(const std::string& name) {
    llvm::Type* ptr = b_.getPtrTy();
    const size_t nin = r_.inputs.size(), nargs = nin + r_.outputs.size();
    auto* kty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, ptr}, false);
    auto* kernel = llvm::Function::Create(kty, llvm::Function::ExternalLinkage, name, m_);
    auto* bty =
        llvm::FunctionType::get(b_.getVoidTy(), std::vector<llvm::Type*>(nargs, ptr), false);
    auto* body = llvm::Function::Create(bty, llvm::Function::InternalLinkage, name + ".body", m_);
    body->addFnAttr(llvm::Attribute::AlwaysInline);
    body->addFnAttr(llvm::Attribute::NoUnwind);
    for (unsigned i = 0; i < nargs; ++i) {
      body->addParamAttr(i, llvm::Attribute::NoAlias);
      body->addParamAttr(i, llvm::Attribute::NoCapture);
      body->addParamAttr(i, i < nin ? llvm::Attribute::ReadOnly : llvm::Attribute::WriteOnly);
    }
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", kernel));
    std::vector<Value*> pointers;
    for (size_t i = 0; i < nargs; ++i)
      pointers.push_back(
          b_.CreateLoad(ptr, b_.CreateConstInBoundsGEP1_64(ptr, kernel->getArg(0), i)));
    b_.CreateCall(body, pointers);
    b_.CreateRetVoid();

    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body));
    for (size_t i = 0; i < nargs; ++i)
      buffer_[i < nin ? r_.inputs[i] : r_.outputs[i - nin]] = body->getArg(i);
    // Kernel-local buffers first (all allocas in the entry block), then one loop nest per
    // materialised value in the region's (topological) node order, then the outputs.
    std::vector<int32_t> mat_nodes;
    for (int32_t i : r_.nodes)
      if (materialises(g_.nodes[i].op)) mat_nodes.push_back(i);
    for (int32_t i : mat_nodes) allocate(g_.nodes[i]);
    for (int32_t i : mat_nodes) {
      const Node& n = g_.nodes[i];
      if (is_softmax(n.op))
        materialise_softmax(n);
      else
        materialise_reduce(n);
    }
    for (ValueId out : r_.outputs) {
      SG_ASSERT(producer_[out] >= 0)
          << "region output '" << g_.values[out].name << "' is not made by a node of the region";
      emit_loop_nest(out);
    }
    for (Value* p : heap_) b_.CreateCall(free_fn(), {p});
    b_.CreateRetVoid();
  }

 private:
  const Shape& shape(ValueId v) const {
    if (auto it = coalesced_.find(v); it != coalesced_.end()) return it->second;
    SG_CHECK(static_cast<size_t>(v) < shapes_.size())
        << "no shape given for value '" << g_.values[v].name << "'";
    return shapes_[v];
  }
  Value* i64(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }

  // Merges adjacent dims of output `v` that every value feeding it either spans fully or
  // broadcasts entirely, when only elementwise ops and Expand lie in between: x[N,C,H,W] + b[C,1,1]
  // loops over [N,C,H*W], so short rows still make long vector loops. Offsets are unchanged.
  void coalesce(ValueId v) {
    coalesced_.clear();
    const Shape s = shape(v);
    std::vector<ValueId> cone, todo = {v};
    std::vector<bool> seen(g_.values.size(), false);
    while (!todo.empty()) {
      const ValueId u = todo.back();
      todo.pop_back();
      if (u == kNoValue || seen[u]) continue;
      seen[u] = true;
      cone.push_back(u);
      if (producer_[u] < 0 || local_.count(u)) continue;
      const Node& n = g_.nodes[producer_[u]];
      if (is_softmax(n.op)) return;
      const IndexMap map = index_map(n.op);
      if (map == IndexMap::same_offset || map == IndexMap::transpose) return;
      if (map == IndexMap::broadcast)
        todo.push_back(n.inputs[0]);
      else
        todo.insert(todo.end(), n.inputs.begin(), n.inputs.end());
    }
    // full[k][d]: cone value k (right-aligned to s) spans dim d; one-element values impose nothing.
    std::vector<std::vector<bool>> full;
    for (ValueId u : cone) {
      const Shape& su = shape(u);
      if (numel(su) == 1) continue;
      if (su.size() > s.size()) return;
      std::vector<bool>& f = full.emplace_back(s.size(), false);
      for (size_t j = 0, lead = s.size() - su.size(); j < su.size(); ++j) {
        if (su[j] != 1 && su[j] != s[lead + j]) return;  // inconsistent: compute() will say so
        f[lead + j] = su[j] != 1;
      }
    }
    std::vector<std::vector<size_t>> groups;  // of adjacent dims, each a loop
    for (size_t d = 0; d < s.size(); ++d) {
      const auto fits = [&](const std::vector<size_t>& group) {
        const auto rep =
            std::find_if(group.begin(), group.end(), [&](size_t e) { return s[e] != 1; });
        if (s[d] == 1 || rep == group.end()) return true;
        return std::all_of(full.begin(), full.end(),
                           [&](const auto& f) { return f[d] == f[*rep]; });
      };
      if (groups.empty() || !fits(groups.back()))
        groups.push_back({d});
      else
        groups.back().push_back(d);
    }
    if (groups.size() == s.size()) return;
    for (ValueId u : cone) {
      const Shape& su = shape(u);
      if (numel(su) == 1) continue;
      const size_t lead = s.size() - su.size();
      Shape merged;
      for (const auto& group : groups) {
        int64_t size = 1;
        for (size_t d : group)
          if (d >= lead) size *= su[d - lead];
        merged.push_back(size);
      }
      coalesced_[u] = std::move(merged);
    }
  }

  // One loop per dim of size > 1 (innermost last), the element stored at the innermost level.
  void emit_loop_nest(ValueId v) {
    coalesce(v);
    const Shape& s = shape(v);
    loop_nest(s, [&](const Index& idx) { store(v, offset_of(idx, s), element(v, idx)); });
  }

  // A loop nest over `s` calling body(idx) at the innermost level.
  template <class F>
  void loop_nest(const Shape& s, F body) {
    if (numel(s) == 0) return;
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    struct Loop {
      llvm::BasicBlock* header;
      llvm::PHINode* iv;
      int64_t trip;
    };
    std::vector<Loop> loops;
    Index idx(s.size());
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] == 1) {
        idx[d] = i64(0);
        continue;
      }
      llvm::BasicBlock* pre = b_.GetInsertBlock();
      auto* header = llvm::BasicBlock::Create(ctx_, "d" + std::to_string(d), f);
      b_.CreateBr(header);
      b_.SetInsertPoint(header);
      llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, "i" + std::to_string(d));
      iv->addIncoming(i64(0), pre);
      idx[d] = iv;
      loops.push_back({header, iv, s[d]});
    }
    cache_.clear();  // elements of another nest do not dominate this one
    body(idx);
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
      Value* next = b_.CreateAdd(it->iv, i64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
      it->iv->addIncoming(next, b_.GetInsertBlock());
      auto* exit = llvm::BasicBlock::Create(ctx_, "", f);
      b_.CreateCondBr(b_.CreateICmpULT(next, i64(it->trip)), it->header, exit);
      b_.SetInsertPoint(exit);
    }
  }

  // The element of `v` at multi-index `idx` (in v's shape).
  Value* element(ValueId v, const Index& idx) {
    auto key = std::make_pair(v, idx);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    Value* x = nullptr;
    if (auto it = local_.find(v); it != local_.end())
      x = load_reduced(g_.nodes[producer_[v]], it->second, offset_of(idx, shape(v)));
    else if (producer_[v] < 0)
      x = load(v, offset_of(idx, shape(v)));
    else
      x = compute(g_.nodes[producer_[v]], idx);
    cache_.emplace(std::move(key), x);
    return x;
  }

  // The element of `v` at row-major offset `off`.
  Value* element_at_offset(ValueId v, Value* off) {
    if (producer_[v] < 0) return load(v, off);
    if (auto it = local_.find(v); it != local_.end())
      return load_reduced(g_.nodes[producer_[v]], it->second, off);
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

  // The output element of member node `n` at `idx`.
  Value* compute(const Node& n, const Index& idx) {
    const Shape& out = shape(n.outputs[0]);
    if (is_softmax(n.op)) return softmax_element(n, idx);
    switch (index_map(n.op)) {
      case IndexMap::same_offset: {
        const ValueId in = n.inputs[0];
        SG_CHECK(numel(shape(in)) == numel(out))
            << node_str(n) << ": input shape " << shape_str(shape(in)) << " and output shape "
            << shape_str(out) << " differ in size";
        if (std::optional<Index> same = unit_dims_map(idx, out, shape(in)))
          return element(in, *same);
        return element_at_offset(in, offset_of(idx, out));
      }
      case IndexMap::transpose: {
        const Ints perm = n.attrs.get_ints("perm", reversed_dims(out.size()));
        const Shape& in = shape(n.inputs[0]);
        SG_CHECK(perm.size() == out.size() && in.size() == out.size())
            << node_str(n) << ": perm " << shape_str(perm) << " does not fit shape "
            << shape_str(in);
        Index in_idx(out.size());
        for (size_t d = 0; d < out.size(); ++d) {
          SG_CHECK(in.at(perm[d]) == out[d]) << node_str(n) << ": output shape " << shape_str(out)
                                             << " is not a transpose of " << shape_str(in);
          in_idx[perm[d]] = idx[d];
        }
        return element(n.inputs[0], in_idx);
      }
      case IndexMap::broadcast:
        return element(n.inputs[0], broadcast_index(n, idx, out, shape(n.inputs[0])));
      case IndexMap::none:
        break;
    }
    const std::vector<DType> in = operand_dtypes(g_, n);
    std::vector<Value*> operands(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue)
        operands[i] = element(n.inputs[i], broadcast_index(n, idx, out, shape(n.inputs[i])));
    ops::ElementCtx c{b_, n, in, g_.values[n.outputs[0]].dtype};
    Value* x = ops::op_def(n.op).element(c, operands);
    SG_ASSERT(x) << node_str(n) << ": its element emitter declined after the probe accepted it";
    return x;
  }

  // ---- Materialised values: reductions and Softmax's row max and row sum ----

  struct Local {
    Value* ptr = nullptr;
    llvm::Type* type = nullptr;  // the element type in memory (the accumulator's)
  };

  static bool is_softmax(OpKind op) { return op == OpKind::Softmax || op == OpKind::LogSoftmax; }

  llvm::FunctionCallee malloc_fn() {
    return m_.getOrInsertFunction("malloc", b_.getPtrTy(), b_.getInt64Ty());
  }
  llvm::FunctionCallee free_fn() {
    return m_.getOrInsertFunction("free", b_.getVoidTy(), b_.getPtrTy());
  }

  // A kernel-local buffer of `count` elements of `t`: on the stack when small, else malloc'ed once
  // per call (freed at the end).
  Local local_buffer(llvm::Type* t, int64_t count) {
    const int64_t bytes =
        std::max<int64_t>(1, count) * static_cast<int64_t>(m_.getDataLayout().getTypeAllocSize(t));
    Local l{nullptr, t};
    if (bytes <= 64 * 1024) {
      l.ptr = b_.CreateAlloca(t, i64(std::max<int64_t>(1, count)));
    } else {
      l.ptr = b_.CreateCall(malloc_fn(), {i64(bytes)});
      heap_.push_back(l.ptr);
    }
    return l;
  }

  // The accumulator type of a reduction node: f64 for float sums, i64 for integer sums, the
  // element type for max.
  llvm::Type* acc_type(const Node& n) {
    const DType t = g_.values[n.inputs[0]].dtype;
    if (n.op == OpKind::ReduceMax) return memory_type(ctx_, t);
    return is_float(t) ? b_.getDoubleTy() : b_.getInt64Ty();
  }

  Shape row_shape(const Node& n) {  // Softmax: the input shape with the axis dim 1
    Shape s = shapes_.at(n.inputs[0]);
    s[ops::normalize_axis(n.attrs.get_int("axis", -1), static_cast<int64_t>(s.size()))] = 1;
    return s;
  }

  void allocate(const Node& n) {
    if (is_softmax(n.op)) {
      const Shape rs = row_shape(n);
      llvm::Type* t = ops::element_type(ctx_, g_.values[n.inputs[0]].dtype);
      softmax_[&n] = {local_buffer(t, numel(rs)), local_buffer(b_.getDoubleTy(), numel(rs))};
    } else {
      local_[n.outputs[0]] = local_buffer(acc_type(n), numel(shapes_.at(n.outputs[0])));
    }
  }

  std::vector<bool> reduced_mask(const Node& n, size_t rank) {
    Ints axes;
    if (n.inputs.size() > 1 && n.inputs[1] != kNoValue)
      axes = g_.values[n.inputs[1]].initializer.to_int64();
    else
      axes = n.attrs.get_ints("axes", {});
    const bool noop = n.attrs.get_int("noop_with_empty_axes", 0) != 0;
    std::vector<bool> reduced(rank, axes.empty() && !noop);
    for (int64_t a : axes) reduced[ops::normalize_axis(a, static_cast<int64_t>(rank))] = true;
    return reduced;
  }

  Value* max_of(Value* a, Value* x, DType t) {
    if (is_float(t))  // NaN propagates
      return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x,
                             b_.CreateSelect(b_.CreateFCmpOLT(a, x), x, a));
    const bool u = t == DType::u8;
    return b_.CreateSelect(u ? b_.CreateICmpULT(a, x) : b_.CreateICmpSLT(a, x), x, a);
  }

  Value* lowest(DType t, llvm::Type* type) {
    if (is_float(t)) return llvm::ConstantFP::getInfinity(type, /*Negative=*/true);
    if (t == DType::u8) return llvm::ConstantInt::get(type, 0);
    return llvm::ConstantInt::get(type, llvm::APInt::getSignedMinValue(type->getIntegerBitWidth()));
  }

  Value* reassoc_fadd(Value* a, Value* x) {
    Value* s = b_.CreateFAdd(a, x);
    if (auto* i = llvm::dyn_cast<llvm::Instruction>(s)) {
      llvm::FastMathFlags f;
      f.setAllowReassoc();
      i->setFastMathFlags(f);
    }
    return s;
  }

  void materialise_reduce(const Node& n) {
    coalesced_.clear();
    const ValueId x = n.inputs[0], y = n.outputs[0];
    const DType t = g_.values[x].dtype;
    const Shape& in = shapes_.at(x);
    const Shape& out = shapes_.at(y);
    const std::vector<bool> reduced = reduced_mask(n, in.size());
    const bool keep = n.attrs.get_int("keepdims", 1) != 0;
    Shape expect;
    for (size_t d = 0; d < in.size(); ++d)
      if (!reduced[d] || keep) expect.push_back(reduced[d] ? 1 : in[d]);
    SG_CHECK(expect == out) << node_str(n) << ": output shape " << shape_str(out)
                            << " does not match the reduction of " << shape_str(in);
    const Local l = local_.at(y);
    const bool is_max = n.op == OpKind::ReduceMax;
    Value* identity = is_max ? lowest(t, l.type) : llvm::Constant::getNullValue(l.type);
    loop_nest(out, [&](const Index& oi) {
      b_.CreateStore(identity, b_.CreateInBoundsGEP(l.type, l.ptr, offset_of(oi, out)));
    });
    loop_nest(in, [&](const Index& ii) {
      Index oi;
      for (size_t d = 0; d < in.size(); ++d)
        if (!reduced[d])
          oi.push_back(ii[d]);
        else if (keep)
          oi.push_back(i64(0));
      Value* p = b_.CreateInBoundsGEP(l.type, l.ptr, offset_of(oi, out));
      Value* a = b_.CreateLoad(l.type, p);
      Value* e = element(x, ii);
      Value* r = nullptr;
      if (is_max)
        r = max_of(a, e, t);
      else if (is_float(t))
        r = reassoc_fadd(a, b_.CreateFPCast(e, l.type));
      else
        r = b_.CreateAdd(a, b_.CreateIntCast(e, l.type, /*isSigned=*/true));
      b_.CreateStore(r, p);
    });
  }

  // A reduction's element at row-major offset `off` of its output: the accumulator, finished.
  Value* load_reduced(const Node& n, const Local& l, Value* off) {
    Value* a = b_.CreateLoad(l.type, b_.CreateInBoundsGEP(l.type, l.ptr, off));
    const DType t = g_.values[n.outputs[0]].dtype;
    if (n.op == OpKind::ReduceMax) return a;
    if (n.op == OpKind::ReduceMean) {
      const Shape& in = shapes_.at(n.inputs[0]);
      const std::vector<bool> reduced = reduced_mask(n, in.size());
      int64_t count = 1;
      for (size_t d = 0; d < in.size(); ++d)
        if (reduced[d]) count *= in[d];
      a = is_float(t) ? b_.CreateFDiv(a, llvm::ConstantFP::get(l.type, static_cast<double>(count)))
                      : b_.CreateSDiv(a, i64(count));
    }
    llvm::Type* et = ops::element_type(ctx_, t);
    return is_float(t) ? b_.CreateFPCast(a, et) : b_.CreateIntCast(a, et, true);
  }

  void materialise_softmax(const Node& n) {
    coalesced_.clear();
    const ValueId x = n.inputs[0];
    const DType t = g_.values[x].dtype;
    const Shape& in = shapes_.at(x);
    const Shape rs = row_shape(n);
    const auto& [mx, sum] = softmax_.at(&n);
    const auto row = [&](const Index& ii) {
      Index ri = ii;
      for (size_t d = 0; d < rs.size(); ++d)
        if (rs[d] == 1) ri[d] = i64(0);
      return offset_of(ri, rs);
    };
    loop_nest(rs, [&](const Index& ri) {
      Value* off = offset_of(ri, rs);
      b_.CreateStore(lowest(t, mx.type), b_.CreateInBoundsGEP(mx.type, mx.ptr, off));
      b_.CreateStore(llvm::ConstantFP::get(sum.type, 0.0),
                     b_.CreateInBoundsGEP(sum.type, sum.ptr, off));
    });
    loop_nest(in, [&](const Index& ii) {
      Value* p = b_.CreateInBoundsGEP(mx.type, mx.ptr, row(ii));
      Value* a = b_.CreateLoad(mx.type, p);
      Value* e = element(x, ii);
      b_.CreateStore(b_.CreateSelect(b_.CreateFCmpOLT(a, e), e, a), p);
    });
    const std::vector<DType> dts = {t};
    ops::ElementCtx c{b_, n, dts, t};
    loop_nest(in, [&](const Index& ii) {
      Value* off = row(ii);
      Value* m = b_.CreateLoad(mx.type, b_.CreateInBoundsGEP(mx.type, mx.ptr, off));
      Value* e = c.math("exp", b_.CreateFSub(element(x, ii), m));
      Value* p = b_.CreateInBoundsGEP(sum.type, sum.ptr, off);
      b_.CreateStore(reassoc_fadd(b_.CreateLoad(sum.type, p), b_.CreateFPCast(e, sum.type)), p);
    });
  }

  // exp(x - max) * (1 / sum), or (x - max) - log(sum), at `idx` (in the uncoalesced shape).
  Value* softmax_element(const Node& n, const Index& idx) {
    const ValueId x = n.inputs[0];
    const DType t = g_.values[x].dtype;
    const Shape rs = row_shape(n);
    const auto& [mx, sum] = softmax_.at(&n);
    Index ri = idx;
    for (size_t d = 0; d < rs.size(); ++d)
      if (rs[d] == 1) ri[d] = i64(0);
    Value* off = offset_of(ri, rs);
    Value* m = b_.CreateLoad(mx.type, b_.CreateInBoundsGEP(mx.type, mx.ptr, off));
    Value* s = b_.CreateLoad(sum.type, b_.CreateInBoundsGEP(sum.type, sum.ptr, off));
    const std::vector<DType> dts = {t};
    ops::ElementCtx c{b_, n, dts, t};
    Value* d = b_.CreateFSub(element(x, idx), m);
    llvm::Type* et = mx.type;
    if (n.op == OpKind::LogSoftmax) return b_.CreateFSub(d, b_.CreateFPCast(c.math("log", s), et));
    Value* inv = b_.CreateFPCast(b_.CreateFDiv(llvm::ConstantFP::get(sum.type, 1.0), s), et);
    return b_.CreateFMul(c.math("exp", d), inv);
  }

  static Ints reversed_dims(size_t rank) {
    Ints p(rank);
    for (size_t d = 0; d < rank; ++d) p[d] = static_cast<int64_t>(rank - 1 - d);
    return p;
  }

  // `idx` (in `out`) mapped to an operand of shape `in` by numpy broadcasting.
  Index broadcast_index(const Node& n, const Index& idx, const Shape& out, const Shape& in) {
    Index r(in.size(), i64(0));
    if (numel(in) == 1) return r;
    const bool fits = in.size() <= out.size();
    const size_t lead = fits ? out.size() - in.size() : 0;
    for (size_t j = 0; j < in.size(); ++j) {
      if (in[j] == 1) continue;
      SG_CHECK(fits && in[j] == out[lead + j]) << node_str(n) << ": operand shape " << shape_str(in)
                                               << " does not broadcast to " << shape_str(out);
      r[j] = idx[lead + j];
    }
    return r;
  }

  // When `from` and `to` differ only by size-1 dims (Squeeze, Unsqueeze, many Reshapes), `idx` in
  // `from` mapped to `to` without div/mod.
  std::optional<Index> unit_dims_map(const Index& idx, const Shape& from, const Shape& to) {
    std::vector<size_t> a, b;
    for (size_t d = 0; d < from.size(); ++d)
      if (from[d] != 1) a.push_back(d);
    for (size_t d = 0; d < to.size(); ++d)
      if (to[d] != 1) b.push_back(d);
    if (a.size() != b.size()) return std::nullopt;
    for (size_t k = 0; k < a.size(); ++k)
      if (from[a[k]] != to[b[k]]) return std::nullopt;
    Index r(to.size(), i64(0));
    for (size_t k = 0; k < a.size(); ++k) r[b[k]] = idx[a[k]];
    return r;
  }

  Value* offset_of(const Index& idx, const Shape& s) {
    Value* off = nullptr;
    int64_t stride = 1;
    for (size_t d = s.size(); d-- > 0; stride *= s[d]) {
      if (s[d] == 1) continue;
      Value* t = stride == 1 ? idx[d] : b_.CreateMul(idx[d], i64(stride), "", true, true);
      off = off ? b_.CreateAdd(off, t, "", true, true) : t;
    }
    return off ? off : i64(0);
  }

  Value* address(ValueId v, Value* off) {
    SG_ASSERT(buffer_[v]) << "value '" << g_.values[v].name << "' has no buffer in the region";
    return b_.CreateInBoundsGEP(memory_type(ctx_, g_.values[v].dtype), buffer_[v], off);
  }

  // A region input's element: one-element constants are folded into the code.
  Value* load(ValueId v, Value* off) {
    const ValueInfo& info = g_.values[v];
    if (info.initializer.defined() && info.initializer.numel() == 1)
      return constant(info.initializer);
    llvm::Type* t = memory_type(ctx_, info.dtype);
    Value* x = b_.CreateAlignedLoad(t, address(v, off), llvm::Align(dtype_size(info.dtype)));
    return info.dtype == DType::boolean ? b_.CreateICmpNE(x, llvm::ConstantInt::get(t, 0)) : x;
  }

  void store(ValueId v, Value* off, Value* x) {
    const DType t = g_.values[v].dtype;
    if (t == DType::boolean) x = b_.CreateZExt(x, memory_type(ctx_, t));
    b_.CreateAlignedStore(x, address(v, off), llvm::Align(dtype_size(t)));
  }

  Value* constant(const Tensor& t) {
    llvm::Type* type = ops::element_type(ctx_, t.dtype());
    return visit_dtype(t.dtype(), [&]<class T>() -> Value* {
      const T v = t.data<T>()[0];
      if constexpr (std::is_floating_point_v<T>)
        return llvm::ConstantFP::get(type, static_cast<double>(v));
      else
        return llvm::ConstantInt::get(type, static_cast<uint64_t>(v), std::is_signed_v<T>);
    });
  }

  const Graph& g_;
  const Region& r_;
  const std::vector<Shape>& shapes_;
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  std::vector<int32_t> producer_;  // per value: the member node making it, or -1
  std::vector<Value*> buffer_;     // per value: its buffer parameter (region inputs, outputs)
  std::map<std::pair<ValueId, Index>, Value*> cache_;  // elements made in the current loop nest
  std::map<ValueId, Shape> coalesced_;                 // shapes in the current loop nest, if merged
  std::map<ValueId, Local> local_;                     // reductions' accumulator buffers
  std::map<const Node*, std::pair<Local, Local>> softmax_;  // Softmax: row max, row sum
  std::vector<Value*> heap_;                                // malloc'ed buffers to free
};

}  // namespace

std::string why_not_compilable(const Graph& g, const Region& r) {
  llvm::LLVMContext ctx;
  llvm::Module m("probe", ctx);
  for (int32_t i : r.nodes) {
    const Node& n = g.nodes.at(i);
    const auto why = [&](const std::string& s) { return node_str(n) + ": " + s; };
    if (n.outputs.size() != 1) return why("several outputs");
    const DType out = g.values[n.outputs[0]].dtype;
    if (!ops::element_type(ctx, out))
      return why("unsupported dtype " + std::string(dtype_name(out)));
    if (index_map(n.op) != IndexMap::none) continue;
    if (materialises(n.op)) {
      const DType in = g.values[n.inputs[0]].dtype;
      if (n.op == OpKind::Softmax || n.op == OpKind::LogSoftmax) {
        if (!is_float(in)) return why("softmax of " + std::string(dtype_name(in)));
        continue;
      }
      const bool ok = in == DType::f32 || in == DType::f64 || in == DType::i32 ||
                      in == DType::i64 ||
                      (n.op == OpKind::ReduceMax && (in == DType::u8 || in == DType::i8));
      if (!ok || in != out) return why("reduction of " + std::string(dtype_name(in)));
      if (n.inputs.size() > 1 && n.inputs[1] != kNoValue &&
          !g.values[n.inputs[1]].initializer.defined())
        return why("axes input is not a constant");
      continue;
    }
    if (!ops::op_def(n.op).element) return why("no element emitter");
    if (std::string s = probe_emitter(m, n, operand_dtypes(g, n), out); !s.empty()) return why(s);
  }
  return "";
}

CompiledRegion compile_region(Jit& jit, const Graph& g, const Region& r,
                              const std::vector<Shape>& value_shapes, const std::string& name) {
  CompiledRegion result;
  result.why_not = why_not_compilable(g, r);
  if (!result.why_not.empty()) return result;
  const auto start = std::chrono::steady_clock::now();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = std::make_unique<llvm::Module>(name, *ctx);
  m->setTargetTriple(jit.target_triple());
  m->setDataLayout(jit.data_layout());
  KernelBuilder(g, r, value_shapes, *m).build(name);
  result.kernel = jit.add(std::move(ctx), std::move(m), name);
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  SG_LOG(2) << "compiled " << name << " (" << r.nodes.size() << " ops) in " << result.compile_ms
            << " ms";
  return result;
}

namespace {
IndexMap index_map(OpKind op) {
  if (ops::op_def(op).view) return IndexMap::same_offset;
  if (op == OpKind::Transpose) return IndexMap::transpose;
  if (op == OpKind::Expand) return IndexMap::broadcast;
  return IndexMap::none;
}
}  // namespace

bool maps_indices(OpKind op) { return index_map(op) != IndexMap::none; }

bool materialises(OpKind op) {
  return op == OpKind::ReduceSum || op == OpKind::ReduceMean || op == OpKind::ReduceMax ||
         op == OpKind::Softmax || op == OpKind::LogSoftmax;
}

}  // namespace sgraph::jit
