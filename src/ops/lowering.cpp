// The helpers lowerings share, and which ops compile (see lowering.h).
#include "ops/lowering.h"

#include <algorithm>

#include "ops/op.h"

namespace sgraph::ops {

using llvm::Value;

bool is_compilable(OpKind op) {
  const OpDef& d = op_def(op);
  return d.element != nullptr ||
         (d.lowering && (d.lowering->generate != nullptr || d.lowering->materialise != nullptr));
}

std::string why_not_lowered(const Graph& g, const Node& n) {
  const Lowering* l = op_def(n.op).lowering;
  return l && l->why_not ? l->why_not(g, n) : "";
}

std::string node_str(const Node& n) {
  return "node '" + n.name + "' (" + std::string(op_name(n.op)) + ")";
}

std::vector<DType> operand_dtypes(const Graph& g, const Node& n) {
  std::vector<DType> in;
  for (ValueId v : n.inputs) in.push_back(v == kNoValue ? DType::undefined : g.values[v].dtype);
  return in;
}

llvm::Type* memory_type(llvm::LLVMContext& ctx, DType t) {
  return t == DType::boolean ? llvm::Type::getInt8Ty(ctx) : element_type(ctx, t);
}

bool has_input(const Node& n, size_t i) { return i < n.inputs.size() && n.inputs[i] != kNoValue; }

bool is_constant(const Graph& g, const Node& n, size_t i) {
  return has_input(n, i) && g.values[n.inputs[i]].initializer.defined();
}

const Tensor* constant_input(const Graph& g, const Node& n, size_t i) {
  if (!has_input(n, i)) return nullptr;
  SG_ASSERT(is_constant(g, n, i)) << node_str(n) << ": input " << i << " is not a constant";
  return &g.values[n.inputs[i]].initializer;
}

std::string need_constant(const Graph& g, const Node& n, size_t i, const char* what) {
  if (!has_input(n, i) || is_constant(g, n, i)) return "";
  return std::string("its ") + what + " input is not a constant";
}

Index Emitter::broadcast_index(const Node& n, const Index& idx, const Shape& out, const Shape& in) {
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

Index Emitter::channel_index(const Node& n, ValueId v, const Index& idx) {
  if (dynamic()) {  // (no merged dims)
    const SymShape vs = dims(v), out = dims(n.outputs[0]);
    SG_CHECK(is_static(vs)) << node_str(n) << ": a per-channel operand of symbolic shape";
    if (numel(eval_shape(vs, {})) == 1) return Index(vs.size(), i64(0));
    SG_CHECK(vs.size() == 1 && out.size() >= 2 && vs[0] == out[1])
        << node_str(n) << ": a per-channel operand that does not match the output's channels";
    return {idx[1]};
  }
  const Shape& vs = shape(v);
  if (numel(vs) == 1) return Index(vs.size(), i64(0));
  const Shape& out = shape(n.outputs[0]);
  if (merged(v)) return broadcast_index(n, idx, out, vs);  // merged as [.., C, ..]
  SG_CHECK(vs.size() == 1 && out.size() >= 2 && vs[0] == out[1])
      << node_str(n) << ": per-channel operand shape " << shape_str(vs)
      << " does not match the channels of " << shape_str(out);
  return {idx[1]};
}

Value* Emitter::offset_of(const Index& idx, const Shape& s) {
  Value* off = nullptr;
  int64_t stride = 1;
  for (size_t d = s.size(); d-- > 0; stride *= s[d]) {
    if (s[d] == 1) continue;
    Value* t = stride == 1 ? idx[d] : b.CreateMul(idx[d], i64(stride), "", true, true);
    off = off ? b.CreateAdd(off, t, "", true, true) : t;
  }
  return off ? off : i64(0);
}

std::optional<Index> unit_dims_map(Emitter& e, const Index& idx, const Shape& from,
                                   const Shape& to) {
  std::vector<size_t> a, b;
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1) a.push_back(d);
  for (size_t d = 0; d < to.size(); ++d)
    if (to[d] != 1) b.push_back(d);
  if (a.size() != b.size()) return std::nullopt;
  for (size_t k = 0; k < a.size(); ++k)
    if (from[a[k]] != to[b[k]]) return std::nullopt;
  Index r(to.size(), e.i64(0));
  for (size_t k = 0; k < a.size(); ++k) r[b[k]] = idx[a[k]];
  return r;
}

Value* clamp(Emitter& e, Value* i, int64_t lo, int64_t hi) {
  SG_ASSERT(lo <= hi) << "empty clamp range [" << lo << ", " << hi << "]";
  if (lo == hi) return e.i64(lo);
  return e.b.CreateBinaryIntrinsic(llvm::Intrinsic::smax,
                                   e.b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, i, e.i64(hi)),
                                   e.i64(lo));
}

Value* clamp(Emitter& e, Value* i, int64_t lo, Value* hi) {
  return e.b.CreateBinaryIntrinsic(
      llvm::Intrinsic::smax, e.b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, i, hi), e.i64(lo));
}

Value* max_of(llvm::IRBuilderBase& b, Value* a, Value* x, DType t) {
  if (is_float(t))  // NaN propagates; vectorises as a reduction
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a, x);
  const bool u = t == DType::u8;
  return b.CreateSelect(u ? b.CreateICmpULT(a, x) : b.CreateICmpSLT(a, x), x, a);
}

Value* scalar_element(Emitter& e, ValueId v) {
  return e.element(v, Index(e.shape(v).size(), e.i64(0)));
}

Value* min_of(llvm::IRBuilderBase& b, Value* a, Value* x, DType t) {
  if (is_float(t))  // NaN propagates; vectorises as a reduction
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, a, x);
  const bool u = t == DType::u8;
  return b.CreateSelect(u ? b.CreateICmpUGT(a, x) : b.CreateICmpSGT(a, x), x, a);
}

Value* highest(DType t, llvm::Type* type) {
  if (is_float(t)) return llvm::ConstantFP::getInfinity(type, /*Negative=*/false);
  if (t == DType::u8) return llvm::ConstantInt::get(type, 255);
  return llvm::ConstantInt::get(type, llvm::APInt::getSignedMaxValue(type->getIntegerBitWidth()));
}

Value* lowest(DType t, llvm::Type* type) {
  if (is_float(t)) return llvm::ConstantFP::getInfinity(type, /*Negative=*/true);
  if (t == DType::u8) return llvm::ConstantInt::get(type, 0);
  return llvm::ConstantInt::get(type, llvm::APInt::getSignedMinValue(type->getIntegerBitWidth()));
}

Value* reassoc_fadd(llvm::IRBuilderBase& b, Value* a, Value* x) {
  Value* s = b.CreateFAdd(a, x);
  if (auto* i = llvm::dyn_cast<llvm::Instruction>(s)) {
    llvm::FastMathFlags f;
    f.setAllowReassoc();
    i->setFastMathFlags(f);
  }
  return s;
}

bool outer_kept(const Shape& s, const std::vector<bool>& collapsed) {
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1) return !collapsed[d];
  return true;
}

bool outer_kept(const SymShape& s, const std::vector<bool>& collapsed) {
  for (size_t d = 0; d < s.size(); ++d)
    if (!s[d].is_one()) return !collapsed[d];
  return true;
}

// ---- symbolic shapes

SymShape to_sym(const Shape& s) {
  SymShape r;
  r.reserve(s.size());
  for (int64_t d : s) r.push_back(SymDim::constant(d));
  return r;
}

SymShape reduced_shape(const Node& n, const SymShape& in, const std::vector<bool>& reduced) {
  const bool keep = n.attrs.get_int("keepdims", 1) != 0;
  SymShape out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!reduced[d] || keep) out.push_back(reduced[d] ? SymDim::constant(1) : in[d]);
  return out;
}

std::string sym_broadcasts(const SymShape& in, const SymShape& out) {
  if (in.size() > out.size()) return "an operand of higher rank than its output";
  const size_t lead = out.size() - in.size();
  for (size_t j = 0; j < in.size(); ++j)
    if (!(in[j] == out[lead + j]) && !in[j].is_one())
      return "operand dim " + std::to_string(j) + " neither the output's nor 1";
  return "";
}

Value* Emitter::count(const SymShape& s) {
  if (is_static(s)) return i64(numel(eval_shape(s, {})));
  Value* n = nullptr;
  for (const SymDim& d : s) {
    if (d.is_one()) continue;
    Value* x = dim(d);
    n = n ? b.CreateMul(n, x, "", true, true) : x;
  }
  return n ? n : i64(1);
}

Value* Emitter::offset_of(const Index& idx, const SymShape& s) {
  if (is_static(s)) return offset_of(idx, eval_shape(s, {}));
  Value* off = nullptr;
  Value* stride = nullptr;  // nullptr: 1
  for (size_t d = s.size(); d-- > 0;) {
    if (s[d].is_one()) continue;
    Value* t = stride ? b.CreateMul(idx[d], stride, "", true, true) : idx[d];
    off = off ? b.CreateAdd(off, t, "", true, true) : t;
    Value* n = dim(s[d]);
    stride = stride ? b.CreateMul(stride, n, "", true, true) : n;
  }
  return off ? off : i64(0);
}

Index Emitter::broadcast_index(const Node& n, const Index& idx, const SymShape& out,
                               const SymShape& in) {
  if (is_static(out) && is_static(in))
    return broadcast_index(n, idx, eval_shape(out, {}), eval_shape(in, {}));
  SG_ASSERT(sym_broadcasts(in, out).empty())
      << node_str(n) << ": " << sym_broadcasts(in, out) << " in a dynamic region";
  Index r(in.size(), i64(0));
  const size_t lead = out.size() - in.size();
  for (size_t j = 0; j < in.size(); ++j)
    if (in[j] == out[lead + j] && !in[j].is_one()) r[j] = idx[lead + j];
  return r;
}

}  // namespace sgraph::ops
