// The lowering of Softmax and LogSoftmax: two nests materialise the row max and the row sum of
// exp(x - max) into kernel-local buffers; the element is then exp(x - max) / sum, or
// (x - max) - log(sum), generated in its consumers' nests.
#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/row_stats.h"

namespace sgraph::ops {
namespace {

struct SoftmaxPlan {
  LocalBuffer max, sum;  // per row
};

std::string why_not_softmax(const Graph& g, const Node& n) {
  const DType in = g.values[n.inputs[0]].dtype;
  return is_float(in) ? "" : "softmax of " + std::string(dtype_name(in));
}

std::string why_not_dynamic_softmax(const Graph&, const Node&, const std::vector<const SymShape*>&,
                                    const SymShape&) {
  return "";
}

void allocate_softmax(Emitter& e, const Node& n) {
  const SymShape rs = row_shape(e, n, /*through_last=*/false);
  llvm::Type* t = element_type(e.context(), e.dtype(n.inputs[0]));
  e.state(n) = SoftmaxPlan{e.local_buffer(t, rs), e.local_buffer(e.b.getDoubleTy(), rs)};
}

// x - max, raised to the smallest argument whose exp is a normal number (it is <= 0): below it
// exp underflows to denormals or 0, a difference no softmax output can show, while libmvec's
// vector exp leaves its fast path for such arguments (masked attention scores of -1e9 made a
// kernel 2x slower). NaN stays NaN.
llvm::Value* exp_arg(llvm::IRBuilderBase& b, llvm::Value* d) {
  const bool f32 = d->getType()->isFloatTy();
  llvm::Value* lo = llvm::ConstantFP::get(d->getType(), f32 ? -87.0 : -708.0);
  return b.CreateSelect(b.CreateFCmpOLT(d, lo), lo, d);
}

void materialise_softmax(Emitter& e, const Node& n) {
  const ValueId x = n.inputs[0];
  const DType t = e.dtype(x);
  const SymShape in = e.dims(x);
  const SymShape rs = row_shape(e, n, false);
  const auto& [mx, sum] = e.state_of<SoftmaxPlan>(n);
  llvm::IRBuilderBase& b = e.b;
  std::vector<bool> collapsed(rs.size());
  for (size_t d = 0; d < rs.size(); ++d) collapsed[d] = rs[d].is_one();
  const bool parallel = outer_kept(in, collapsed);
  const auto row = [&](const Index& ii) { return row_offset(e, ii, rs); };
  e.loop_nest(rs, true, [&](const Index& ri) {
    llvm::Value* off = e.offset_of(ri, rs);
    b.CreateStore(lowest(t, mx.type), e.at(mx, off));
    b.CreateStore(llvm::ConstantFP::get(sum.type, 0.0), e.at(sum, off));
  });
  e.loop_nest(in, parallel, [&](const Index& ii) {
    llvm::Value* p = e.at(mx, row(ii));
    llvm::Value* a = b.CreateLoad(mx.type, p);
    b.CreateStore(max_of(b, a, e.element(x, ii), t), p);
  });
  const std::vector<DType> dts = {t};
  ElementCtx c{b, n, dts, t};
  e.loop_nest(in, parallel, [&](const Index& ii) {
    llvm::Value* off = row(ii);
    llvm::Value* m = b.CreateLoad(mx.type, e.at(mx, off));
    llvm::Value* ex = c.math("exp", exp_arg(b, b.CreateFSub(e.element(x, ii), m)));
    llvm::Value* p = e.at(sum, off);
    b.CreateStore(reassoc_fadd(b, b.CreateLoad(sum.type, p), b.CreateFPCast(ex, sum.type)), p);
  });
}

// exp(x - max) * (1 / sum), or (x - max) - log(sum), at `idx` (in the unmerged shape).
llvm::Value* generate_softmax(Emitter& e, const Node& n, const Index& idx) {
  const ValueId x = n.inputs[0];
  const DType t = e.dtype(x);
  const SymShape rs = row_shape(e, n, false);
  const auto& [mx, sum] = e.state_of<SoftmaxPlan>(n);
  llvm::IRBuilderBase& b = e.b;
  llvm::Value* off = row_offset(e, idx, rs);
  llvm::Value* m = b.CreateLoad(mx.type, e.at(mx, off));
  llvm::Value* s = b.CreateLoad(sum.type, e.at(sum, off));
  const std::vector<DType> dts = {t};
  ElementCtx c{b, n, dts, t};
  llvm::Value* d = b.CreateFSub(e.element(x, idx), m);
  llvm::Type* et = mx.type;
  if (n.op == OpKind::LogSoftmax) return b.CreateFSub(d, b.CreateFPCast(c.math("log", s), et));
  llvm::Value* inv = b.CreateFPCast(b.CreateFDiv(llvm::ConstantFP::get(sum.type, 1.0), s), et);
  return b.CreateFMul(c.math("exp", exp_arg(b, d)), inv);
}

}  // namespace

extern const Lowering kSoftmaxLowering;
const Lowering kSoftmaxLowering{.why_not = why_not_softmax,
                                .why_not_dynamic = why_not_dynamic_softmax,
                                .generate = generate_softmax,
                                .allocate = allocate_softmax,
                                .materialise = materialise_softmax};

}  // namespace sgraph::ops
