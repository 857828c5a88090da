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
    for (ValueId out : r_.outputs) {
      SG_ASSERT(producer_[out] >= 0)
          << "region output '" << g_.values[out].name << "' is not made by a node of the region";
      emit_loop_nest(out);
    }
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
      if (producer_[u] < 0) continue;
      const Node& n = g_.nodes[producer_[u]];
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
    store(v, offset_of(idx, s), element(v, idx));
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
    Value* x =
        producer_[v] < 0 ? load(v, offset_of(idx, shape(v))) : compute(g_.nodes[producer_[v]], idx);
    cache_.emplace(std::move(key), x);
    return x;
  }

  // The element of `v` at row-major offset `off`.
  Value* element_at_offset(ValueId v, Value* off) {
    if (producer_[v] < 0) return load(v, off);
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

}  // namespace sgraph::jit
