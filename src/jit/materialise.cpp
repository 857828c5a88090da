// Materialised values: ops whose element needs a whole row or slice of their operand (reductions,
// GlobalAveragePool, Softmax/LogSoftmax, LayerNormalization) are computed into kernel-local
// buffers by loop nests of their own before the nests that read them; their consumers then read
// those buffers like region inputs. Contractions (contraction.cpp) and windowed ops (conv.cpp)
// are dispatched from here too.
#include <algorithm>

#include "jit/element.h"
#include "jit/kernel_builder.h"
#include "jit/region_compiler.h"
#include "ops/op.h"

namespace sgraph::jit {

using llvm::Value;

bool materialises(OpKind op) {
  return op == OpKind::ReduceSum || op == OpKind::ReduceMean || op == OpKind::ReduceMax ||
         op == OpKind::GlobalAveragePool || op == OpKind::Softmax || op == OpKind::LogSoftmax ||
         op == OpKind::LayerNormalization || contracts(op) || windowed(op);
}

std::string why_not_materialised(const Graph& g, const Node& n) {
  if (contracts(n.op)) return why_not_contracted(g, n);
  if (windowed(n.op)) return why_not_windowed(g, n);
  const DType in = g.values[n.inputs[0]].dtype, out = g.values[n.outputs[0]].dtype;
  if (n.op == OpKind::Softmax || n.op == OpKind::LogSoftmax)
    return is_float(in) ? "" : "softmax of " + std::string(dtype_name(in));
  if (n.op == OpKind::LayerNormalization)
    return is_float(in) ? "" : "layer normalization of " + std::string(dtype_name(in));
  const bool ok = in == DType::f32 || in == DType::f64 || in == DType::i32 || in == DType::i64 ||
                  (n.op == OpKind::ReduceMax && (in == DType::u8 || in == DType::i8));
  if (!ok || in != out) return "reduction of " + std::string(dtype_name(in));
  if (n.inputs.size() > 1 && n.inputs[1] != kNoValue &&
      !g.values[n.inputs[1]].initializer.defined())
    return "axes input is not a constant";
  return "";
}

// A kernel-local buffer of `count` elements of `t`: on the kernel's stack when small, else a
// part of the one scratch block the caller passes after the outputs (allocate_heap). The caller
// allocates it, so an allocation failure is an sgraph::Error before the kernel runs, never a
// null pointer inside it, and a plan can keep its block from call to call (freeing many large
// blocks made glibc give their pages back on every call and the next call fault them in again: a
// CNN region's ~20 buffers, ~1500 page faults per call, its time doubled).
KernelBuilder::Local KernelBuilder::local_buffer(llvm::Type* t, int64_t count) {
  const int64_t bytes =
      std::max<int64_t>(1, count) * static_cast<int64_t>(m_.getDataLayout().getTypeAllocSize(t));
  Local l{add_slot(t, false, false), t};
  if (bytes <= 64 * 1024) {
    local_alloc_[l.slot] = b_.CreateAlloca(t, i64(std::max<int64_t>(1, count)));
  } else {
    heap_parts_.emplace_back(l.slot, heap_bytes_);
    heap_bytes_ += (bytes + 63) / 64 * 64;
  }
  return l;
}

void KernelBuilder::allocate_heap() {
  if (heap_bytes_ == 0) return;
  const auto slot = static_cast<uint64_t>(r_.inputs.size() + r_.outputs.size());
  heap_ = b_.CreateLoad(b_.getPtrTy(),
                        b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), kernel_->getArg(0), slot));
  for (const auto& [slot, offset] : heap_parts_)
    local_alloc_[slot] = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), heap_, offset);
}

Value* KernelBuilder::local_ptr(const Local& l, Value* off) {
  return b_.CreateInBoundsGEP(l.type, ptr(l.slot), off);
}

// The accumulator type of a reduction node: f64 for float sums, i64 for integer sums, the
// element type for max.
llvm::Type* KernelBuilder::acc_type(const Node& n) {
  const DType t = g_.values[n.inputs[0]].dtype;
  if (n.op == OpKind::ReduceMax) return memory_type(ctx_, t);
  return is_float(t) ? b_.getDoubleTy() : b_.getInt64Ty();
}

// The shape of a row statistic: the input shape with the axis dim 1 (Softmax), or with the dims
// from the axis on 1 (LayerNormalization).
Shape KernelBuilder::row_shape(const Node& n) {
  Shape s = shapes_.at(n.inputs[0]);
  const size_t axis =
      ops::normalize_axis(n.attrs.get_int("axis", -1), static_cast<int64_t>(s.size()));
  for (size_t d = axis; d < (n.op == OpKind::LayerNormalization ? s.size() : axis + 1); ++d)
    s[d] = 1;
  return s;
}

Value* KernelBuilder::row_offset(const Index& idx, const Shape& rs) {
  Index ri = idx;
  for (size_t d = 0; d < rs.size(); ++d)
    if (rs[d] == 1) ri[d] = i64(0);
  return offset_of(ri, rs);
}

void KernelBuilder::allocate(const Node& n) {
  if (contracts(n.op)) {
    allocate_contraction(n);
  } else if (windowed(n.op)) {
    allocate_window(n);
  } else if (n.op == OpKind::LayerNormalization) {
    const int64_t rows = numel(row_shape(n));
    softmax_[&n] = {local_buffer(b_.getDoubleTy(), rows), local_buffer(b_.getDoubleTy(), rows)};
  } else if (is_softmax(n.op)) {
    const Shape rs = row_shape(n);
    llvm::Type* t = ops::element_type(ctx_, g_.values[n.inputs[0]].dtype);
    softmax_[&n] = {local_buffer(t, numel(rs)), local_buffer(b_.getDoubleTy(), numel(rs))};
  } else {
    local_[n.outputs[0]] = local_buffer(acc_type(n), numel(shapes_.at(n.outputs[0])));
  }
}

void KernelBuilder::materialise(const Node& n) {
  coalesced_.clear();
  if (contracts(n.op))
    materialise_contraction(n);
  else if (windowed(n.op))
    materialise_window(n);
  else if (n.op == OpKind::LayerNormalization)
    materialise_layer_norm(n);
  else if (is_softmax(n.op))
    materialise_softmax(n);
  else
    materialise_reduce(n);
}

std::vector<bool> KernelBuilder::reduced_mask(const Node& n, size_t rank) {
  if (n.op == OpKind::GlobalAveragePool) {  // the spatial dims
    std::vector<bool> spatial(rank, true);
    spatial[0] = false;
    if (rank > 1) spatial[1] = false;
    return spatial;
  }
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

Value* KernelBuilder::max_of(Value* a, Value* x, DType t) {
  if (is_float(t))  // NaN propagates; vectorises as a reduction
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a, x);
  const bool u = t == DType::u8;
  return b_.CreateSelect(u ? b_.CreateICmpULT(a, x) : b_.CreateICmpSLT(a, x), x, a);
}

Value* KernelBuilder::lowest(DType t, llvm::Type* type) {
  if (is_float(t)) return llvm::ConstantFP::getInfinity(type, /*Negative=*/true);
  if (t == DType::u8) return llvm::ConstantInt::get(type, 0);
  return llvm::ConstantInt::get(type, llvm::APInt::getSignedMinValue(type->getIntegerBitWidth()));
}

Value* KernelBuilder::reassoc_fadd(Value* a, Value* x) {
  Value* s = b_.CreateFAdd(a, x);
  if (auto* i = llvm::dyn_cast<llvm::Instruction>(s)) {
    llvm::FastMathFlags f;
    f.setAllowReassoc();
    i->setFastMathFlags(f);
  }
  return s;
}

namespace {
// Whether a nest over `s` may split its outermost loop over threads when it accumulates into a
// buffer indexed without the dims in `collapsed`: only if that loop's dim is not collapsed.
bool outer_kept(const Shape& s, const std::vector<bool>& collapsed) {
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1) return !collapsed[d];
  return true;
}
}  // namespace

void KernelBuilder::materialise_reduce(const Node& n) {
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
  loop_nest(out, true,
            [&](const Index& oi) { b_.CreateStore(identity, local_ptr(l, offset_of(oi, out))); });
  loop_nest(in, outer_kept(in, reduced), [&](const Index& ii) {
    Index oi;
    for (size_t d = 0; d < in.size(); ++d)
      if (!reduced[d])
        oi.push_back(ii[d]);
      else if (keep)
        oi.push_back(i64(0));
    Value* p = local_ptr(l, offset_of(oi, out));
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
Value* KernelBuilder::load_reduced(const Node& n, const Local& l, Value* off) {
  Value* a = b_.CreateLoad(l.type, local_ptr(l, off));
  const DType t = g_.values[n.outputs[0]].dtype;
  if (n.op == OpKind::ReduceMax) return a;
  if (n.op == OpKind::ReduceMean || n.op == OpKind::GlobalAveragePool) {
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

void KernelBuilder::materialise_softmax(const Node& n) {
  const ValueId x = n.inputs[0];
  const DType t = g_.values[x].dtype;
  const Shape& in = shapes_.at(x);
  const Shape rs = row_shape(n);
  const auto& [mx, sum] = softmax_.at(&n);
  std::vector<bool> collapsed(rs.size());
  for (size_t d = 0; d < rs.size(); ++d) collapsed[d] = rs[d] == 1;
  const bool parallel = outer_kept(in, collapsed);
  const auto row = [&](const Index& ii) { return row_offset(ii, rs); };
  loop_nest(rs, true, [&](const Index& ri) {
    Value* off = offset_of(ri, rs);
    b_.CreateStore(lowest(t, mx.type), local_ptr(mx, off));
    b_.CreateStore(llvm::ConstantFP::get(sum.type, 0.0), local_ptr(sum, off));
  });
  loop_nest(in, parallel, [&](const Index& ii) {
    Value* p = local_ptr(mx, row(ii));
    Value* a = b_.CreateLoad(mx.type, p);
    Value* e = element(x, ii);
    b_.CreateStore(max_of(a, e, t), p);
  });
  const std::vector<DType> dts = {t};
  ops::ElementCtx c{b_, n, dts, t};
  loop_nest(in, parallel, [&](const Index& ii) {
    Value* off = row(ii);
    Value* m = b_.CreateLoad(mx.type, local_ptr(mx, off));
    Value* e = c.math("exp", exp_arg(b_.CreateFSub(element(x, ii), m)));
    Value* p = local_ptr(sum, off);
    b_.CreateStore(reassoc_fadd(b_.CreateLoad(sum.type, p), b_.CreateFPCast(e, sum.type)), p);
  });
}

// x - max, raised to the smallest argument whose exp is a normal number (it is <= 0): below it
// exp underflows to denormals or 0, a difference no softmax output can show, while libmvec's
// vector exp leaves its fast path for such arguments (masked attention scores of -1e9 made a
// kernel 2x slower). NaN stays NaN.
Value* KernelBuilder::exp_arg(Value* d) {
  const bool f32 = d->getType()->isFloatTy();
  Value* lo = llvm::ConstantFP::get(d->getType(), f32 ? -87.0 : -708.0);
  return b_.CreateSelect(b_.CreateFCmpOLT(d, lo), lo, d);
}

// exp(x - max) * (1 / sum), or (x - max) - log(sum), at `idx` (in the uncoalesced shape).
Value* KernelBuilder::softmax_element(const Node& n, const Index& idx) {
  const ValueId x = n.inputs[0];
  const DType t = g_.values[x].dtype;
  const Shape rs = row_shape(n);
  const auto& [mx, sum] = softmax_.at(&n);
  Value* off = row_offset(idx, rs);
  Value* m = b_.CreateLoad(mx.type, local_ptr(mx, off));
  Value* s = b_.CreateLoad(sum.type, local_ptr(sum, off));
  const std::vector<DType> dts = {t};
  ops::ElementCtx c{b_, n, dts, t};
  Value* d = b_.CreateFSub(element(x, idx), m);
  llvm::Type* et = mx.type;
  if (n.op == OpKind::LogSoftmax) return b_.CreateFSub(d, b_.CreateFPCast(c.math("log", s), et));
  Value* inv = b_.CreateFPCast(b_.CreateFDiv(llvm::ConstantFP::get(sum.type, 1.0), s), et);
  return b_.CreateFMul(c.math("exp", exp_arg(d)), inv);
}

// LayerNormalization's row statistics, in f64 and in two passes as the interpreter computes them:
// the mean, then the inverse standard deviation from the squared deviations.
void KernelBuilder::materialise_layer_norm(const Node& n) {
  const ValueId x = n.inputs[0];
  const Shape& in = shapes_.at(x);
  const Shape rs = row_shape(n);
  const auto& [mu, acc] = softmax_.at(&n);
  std::vector<bool> collapsed(rs.size());
  for (size_t d = 0; d < rs.size(); ++d) collapsed[d] = rs[d] == 1 && in[d] != 1;
  const bool parallel = outer_kept(in, collapsed);
  const double count = static_cast<double>(numel(in) / std::max<int64_t>(1, numel(rs)));
  llvm::Type* f64 = b_.getDoubleTy();
  const double eps = n.attrs.get_float("epsilon", 1e-5);
  loop_nest(rs, true, [&](const Index& ri) {
    b_.CreateStore(llvm::ConstantFP::get(f64, 0.0), local_ptr(mu, offset_of(ri, rs)));
  });
  loop_nest(in, parallel, [&](const Index& ii) {
    Value* p = local_ptr(mu, row_offset(ii, rs));
    b_.CreateStore(reassoc_fadd(b_.CreateLoad(f64, p), b_.CreateFPCast(element(x, ii), f64)), p);
  });
  loop_nest(rs, true, [&](const Index& ri) {
    Value* off = offset_of(ri, rs);
    Value* p = local_ptr(mu, off);
    b_.CreateStore(b_.CreateFDiv(b_.CreateLoad(f64, p), llvm::ConstantFP::get(f64, count)), p);
    b_.CreateStore(llvm::ConstantFP::get(f64, 0.0), local_ptr(acc, off));
  });
  loop_nest(in, parallel, [&](const Index& ii) {
    Value* off = row_offset(ii, rs);
    Value* d =
        b_.CreateFSub(b_.CreateFPCast(element(x, ii), f64), b_.CreateLoad(f64, local_ptr(mu, off)));
    Value* p = local_ptr(acc, off);
    b_.CreateStore(reassoc_fadd(b_.CreateLoad(f64, p), b_.CreateFMul(d, d)), p);
  });
  const std::vector<DType> dts = {DType::f64};
  ops::ElementCtx c{b_, n, dts, DType::f64};
  loop_nest(rs, true, [&](const Index& ri) {
    Value* p = local_ptr(acc, offset_of(ri, rs));
    Value* var = b_.CreateFDiv(b_.CreateLoad(f64, p), llvm::ConstantFP::get(f64, count));
    Value* sd =
        c.intrinsic(llvm::Intrinsic::sqrt, b_.CreateFAdd(var, llvm::ConstantFP::get(f64, eps)));
    b_.CreateStore(b_.CreateFDiv(llvm::ConstantFP::get(f64, 1.0), sd), p);
  });
}

// (x - mean) * inv_std * scale + bias, in the input's type, at `idx`.
Value* KernelBuilder::layer_norm_element(const Node& n, const Index& idx) {
  const auto& [mu, acc] = softmax_.at(&n);
  const Shape& out = shape(n.outputs[0]);
  Value* off = row_offset(idx, row_shape(n));
  llvm::Type* t = ops::element_type(ctx_, g_.values[n.outputs[0]].dtype);
  Value* m = b_.CreateFPCast(b_.CreateLoad(mu.type, local_ptr(mu, off)), t);
  Value* k = b_.CreateFPCast(b_.CreateLoad(acc.type, local_ptr(acc, off)), t);
  const auto operand = [&](size_t i) {
    return element(n.inputs[i], broadcast_index(n, idx, out, shape(n.inputs[i])));
  };
  Value* y =
      b_.CreateFMul(b_.CreateFMul(b_.CreateFSub(element(n.inputs[0], idx), m), k), operand(1));
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) y = b_.CreateFAdd(y, operand(2));
  return y;
}

}  // namespace sgraph::jit
