// The lowering of the reductions but ReduceLogSumExp, and of GlobalAveragePool and GlobalMaxPool
// (a mean or maximum over the spatial dims): before the nests that read it, a nest over the
// operand accumulates into a kernel-local buffer (f64 for float sums and products, i64 for integer
// ones, the element type for max and min) which its consumers then read like a region input, each
// element finished (a mean divided by its count, ReduceL2's square root, ReduceLogSum's log), as
// the reference does. ReduceMax and ReduceMin propagate NaN from -inf and +inf; GlobalMaxPool, as
// MaxPool, keeps the largest value that compares greater, from the lowest finite value (a NaN
// never wins, an empty or all-NaN plane gives that lowest value).
#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

bool is_max(const Node& n) { return n.op == OpKind::ReduceMax; }
bool is_pool_max(const Node& n) { return n.op == OpKind::GlobalMaxPool; }
bool is_extreme(const Node& n) {
  return n.op == OpKind::ReduceMax || n.op == OpKind::ReduceMin || is_pool_max(n);
}
bool is_global_pool(const Node& n) {
  return n.op == OpKind::GlobalAveragePool || n.op == OpKind::GlobalMaxPool;
}
bool is_mean(const Node& n) {
  return n.op == OpKind::ReduceMean || n.op == OpKind::GlobalAveragePool;
}

std::string why_not_reduce(const Graph& g, const Node& n) {
  const DType in = g.values[n.inputs[0]].dtype, out = g.values[n.outputs[0]].dtype;
  const bool ok = in == DType::f32 || in == DType::f64 ||
                  (!is_global_pool(n) && (in == DType::i32 || in == DType::i64 ||
                                          (is_extreme(n) && (in == DType::u8 || in == DType::i8))));
  if (!ok || in != out) return "reduction of " + std::string(dtype_name(in));
  if (n.inputs.size() > 1 && n.inputs[1] != kNoValue &&
      !g.values[n.inputs[1]].initializer.defined())
    return "axes input is not a constant";
  return "";
}

std::vector<bool> reduced_mask(const Graph& g, const Node& n, size_t rank) {
  if (is_global_pool(n)) {  // the spatial dims
    std::vector<bool> spatial(rank, true);
    spatial[0] = false;
    if (rank > 1) spatial[1] = false;
    return spatial;
  }
  return reduced_dims(n, rank, constant_input(g, n, 1));
}

// The accumulator type: f64 for float sums and products, i64 for integer ones, the element type
// for max and min.
llvm::Type* acc_type(Emitter& e, const Node& n) {
  const DType t = e.dtype(n.inputs[0]);
  if (is_extreme(n)) return memory_type(e.context(), t);
  return is_float(t) ? e.b.getDoubleTy() : e.b.getInt64Ty();
}

std::string why_not_dynamic_reduce(const Graph& g, const Node& n,
                                   const std::vector<const SymShape*>& in, const SymShape& out) {
  if (in.empty() || !in[0]) return "no input";
  const std::vector<bool> reduced = reduced_mask(g, n, in[0]->size());
  return reduced_shape(n, *in[0], reduced) == out ? "" : "its output is not the reduction";
}

void allocate_reduce(Emitter& e, const Node& n) {
  const ValueId y = n.outputs[0];
  const LocalBuffer l = e.local_buffer(acc_type(e, n), e.dims(y));
  const DType t = e.dtype(y);
  SymShape count;  // the dims whose product is a mean's divisor
  if (is_mean(n)) {
    const SymShape in = e.dims(n.inputs[0]);
    const std::vector<bool> reduced = reduced_mask(e.graph, n, in.size());
    for (size_t d = 0; d < in.size(); ++d)
      if (reduced[d]) count.push_back(in[d]);
  }
  e.hold(y, l, [&e, l, t, count, mean = is_mean(n), op = n.op](llvm::Value* a) {
    llvm::IRBuilderBase& b = e.b;
    if (op == OpKind::ReduceL2)  // (floats: f64 accumulators)
      a = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a);
    else if (op == OpKind::ReduceLogSum)
      a = b.CreateUnaryIntrinsic(llvm::Intrinsic::log, a);
    if (mean && is_static(count)) {
      const int64_t c = numel(eval_shape(count, {}));
      a = is_float(t) ? b.CreateFDiv(a, llvm::ConstantFP::get(l.type, static_cast<double>(c)))
                      : b.CreateSDiv(a, e.i64(c));
    } else if (mean) {  // (in the consumer's nest: the symbols it loaded)
      llvm::Value* c = e.count(count);
      a = is_float(t) ? b.CreateFDiv(a, b.CreateUIToFP(c, l.type)) : b.CreateSDiv(a, c);
    }
    llvm::Type* et = element_type(e.context(), t);
    return is_float(t) ? b.CreateFPCast(a, et) : b.CreateIntCast(a, et, true);
  });
  e.state(n) = l;
}

void materialise_reduce(Emitter& e, const Node& n) {
  const ValueId x = n.inputs[0], y = n.outputs[0];
  const DType t = e.dtype(x);
  const SymShape in = e.dims(x);
  const SymShape out = e.dims(y);
  const std::vector<bool> reduced = reduced_mask(e.graph, n, in.size());
  const bool keep = n.attrs.get_int("keepdims", 1) != 0;
  SG_CHECK(reduced_shape(n, in, reduced) == out)
      << node_str(n) << ": output shape " << sym_shape_str(out, {})
      << " does not match the reduction of " << sym_shape_str(in, {});
  const LocalBuffer l = e.state_of<LocalBuffer>(n);
  llvm::IRBuilderBase& b = e.b;
  llvm::Value* identity =
      is_pool_max(n) ? llvm::ConstantFP::get(
                           l.type, llvm::APFloat::getLargest(l.type->getFltSemantics(), true))
      : is_max(n)                 ? lowest(t, l.type)
      : n.op == OpKind::ReduceMin ? highest(t, l.type)
      : n.op == OpKind::ReduceProd
          ? (is_float(t) ? llvm::ConstantFP::get(l.type, 1.0) : llvm::ConstantInt::get(l.type, 1))
          : llvm::Constant::getNullValue(l.type);
  e.loop_nest(out, true,
              [&](const Index& oi) { b.CreateStore(identity, e.at(l, e.offset_of(oi, out))); });
  e.loop_nest(in, outer_kept(in, reduced), [&](const Index& ii) {
    Index oi;
    for (size_t d = 0; d < in.size(); ++d)
      if (!reduced[d])
        oi.push_back(ii[d]);
      else if (keep)
        oi.push_back(e.i64(0));
    llvm::Value* p = e.at(l, e.offset_of(oi, out));
    llvm::Value* a = b.CreateLoad(l.type, p);
    llvm::Value* x_i = e.element(x, ii);
    llvm::Value* r = nullptr;
    if (is_pool_max(n)) {
      r = b.CreateSelect(b.CreateFCmpOGT(x_i, a), x_i, a);
    } else if (is_max(n)) {
      r = max_of(b, a, x_i, t);
    } else if (n.op == OpKind::ReduceMin) {
      r = min_of(b, a, x_i, t);
    } else {
      const bool f = is_float(t);
      llvm::Value* v = f ? b.CreateFPCast(x_i, l.type) : b.CreateIntCast(x_i, l.type, true);
      if (n.op == OpKind::ReduceL1)
        v = f ? b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v)
              : b.CreateSelect(b.CreateICmpSLT(v, e.i64(0)), b.CreateNeg(v), v);
      if (n.op == OpKind::ReduceL2 || n.op == OpKind::ReduceSumSquare)
        v = f ? b.CreateFMul(v, v) : b.CreateMul(v, v);
      if (n.op == OpKind::ReduceProd)
        r = f ? b.CreateFMul(a, v) : b.CreateMul(a, v);
      else
        r = f ? reassoc_fadd(b, a, v) : b.CreateAdd(a, v);
    }
    b.CreateStore(r, p);
  });
}

}  // namespace

extern const Lowering kReduceLowering;
const Lowering kReduceLowering{.why_not = why_not_reduce,
                               .why_not_dynamic = why_not_dynamic_reduce,
                               .allocate = allocate_reduce,
                               .materialise = materialise_reduce};

}  // namespace sgraph::ops
