// The lowering of LayerNormalization: the row mean and inverse standard deviation are
// materialised in f64, in two passes as the reference kernel computes them (the mean, then the
// squared deviations); the element (x - mean) * inv_std * scale + bias is generated in the
// consumers' nests. When a row is the innermost dim, one nest makes both statistics row by row,
// and the outputs too when they are a region output (layer_norm_rows_innermost).
#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"
#include "ops/row_stats.h"

namespace sgraph::ops {

SymShape row_shape(Emitter& e, const Node& n, bool through_last) {
  SymShape s = e.dims(n.inputs[0]);
  const auto axis = static_cast<size_t>(op_axis(n, s.size()));
  for (size_t d = axis; d < (through_last ? s.size() : axis + 1); ++d) s[d] = SymDim::constant(1);
  return s;
}

llvm::Value* row_offset(Emitter& e, const Index& idx, const SymShape& rs) {
  Index ri = idx;
  for (size_t d = 0; d < rs.size(); ++d)
    if (rs[d].is_one()) ri[d] = e.i64(0);
  return e.offset_of(ri, rs);
}

namespace {

struct LayerNormPlan {
  LocalBuffer mean, inv_std;  // per row, f64 (unless `out`)
  LocalBuffer out;            // the region output, made row by row (layer_norm_rows_innermost)
};

// Whether a row is the innermost dim alone (every other dim from the axis on a static 1): then
// one nest makes each row's statistics in two loops over the row while it is in the L1 cache
// (the input read from memory once for both, not twice), and, when the output is a region
// output, the row's outputs in a third, into the output buffer (no output nest reads the input
// again).
bool layer_norm_rows_innermost(Emitter& e, const Node& n) {
  const SymShape in = e.dims(n.inputs[0]);
  for (auto d = static_cast<size_t>(op_axis(n, in.size())); d + 1 < in.size(); ++d)
    if (!in[d].is_one()) return false;
  return true;
}

std::string why_not_layer_norm(const Graph& g, const Node& n) {
  const DType in = g.values[n.inputs[0]].dtype;
  return is_float(in) ? "" : "layer normalization of " + std::string(dtype_name(in));
}

std::string why_not_dynamic_layer_norm(const Graph&, const Node&,
                                       const std::vector<const SymShape*>& in,
                                       const SymShape& out) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i])
      if (std::string why = sym_broadcasts(*in[i], out); !why.empty()) return why;
  return "";
}

void allocate_layer_norm(Emitter& e, const Node& n) {
  const ValueId y = n.outputs[0];
  if (layer_norm_rows_innermost(e, n))
    if (const LocalBuffer out = e.output_buffer(y); out.defined()) {
      e.hold(y, out, nullptr);
      e.state(n) = LayerNormPlan{{}, {}, out};
      return;
    }
  const SymShape rows = row_shape(e, n, true);
  e.state(n) = LayerNormPlan{
      e.local_buffer(e.b.getDoubleTy(), rows), e.local_buffer(e.b.getDoubleTy(), rows), {}};
}

// (x - mean) * inv_std * scale + bias at `idx`, m and k the row's mean and inv_std in the
// output's type.
llvm::Value* normalised(Emitter& e, const Node& n, const Index& idx, llvm::Value* m,
                        llvm::Value* k) {
  llvm::IRBuilderBase& b = e.b;
  const SymShape out = e.dims(n.outputs[0]);
  const auto operand = [&](size_t i) {
    return e.element(n.inputs[i], e.broadcast_index(n, idx, out, e.dims(n.inputs[i])));
  };
  llvm::Value* y =
      b.CreateFMul(b.CreateFMul(b.CreateFSub(e.element(n.inputs[0], idx), m), k), operand(1));
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) y = b.CreateFAdd(y, operand(2));
  return y;
}

// The row-by-row form (layer_norm_rows_innermost): the statistics into the plan's buffers, or the
// outputs into the region's output buffer.
void materialise_rows(Emitter& e, const Node& n) {
  const ValueId x = n.inputs[0];
  const SymShape in = e.dims(x);
  const SymShape rs = row_shape(e, n, true);
  const auto& [mu, acc, out] = e.state_of<LayerNormPlan>(n);
  llvm::IRBuilderBase& b = e.b;
  llvm::Type* f64 = b.getDoubleTy();
  llvm::Type* t = element_type(e.context(), e.dtype(n.outputs[0]));
  const size_t last = in.size() - 1;
  const double eps = n.attrs.get_float("epsilon", 1e-5);
  const std::vector<DType> dts = {DType::f64};
  ElementCtx c{b, n, dts, DType::f64};
  e.loop_nest(rs, /*parallel=*/true, [&](const Index& ri) {
    llvm::Value* len = e.dim(in[last]);
    llvm::Value* count = b.CreateSIToFP(len, f64);
    const auto at = [&](llvm::Value* j) {
      Index ii = ri;
      ii[last] = j;
      return ii;
    };
    const auto x_at = [&](llvm::Value* j) { return b.CreateFPCast(e.element(x, at(j)), f64); };
    llvm::Value* zero = llvm::ConstantFP::get(f64, 0.0);
    llvm::Value* sum = e.inner_loop(len, {zero}, [&](llvm::Value* j, const auto& a) {
      return std::vector<llvm::Value*>{reassoc_fadd(b, a[0], x_at(j))};
    })[0];
    llvm::Value* mean = b.CreateFDiv(sum, count);
    llvm::Value* sq = e.inner_loop(len, {zero}, [&](llvm::Value* j, const auto& a) {
      llvm::Value* d = b.CreateFSub(x_at(j), mean);
      return std::vector<llvm::Value*>{reassoc_fadd(b, a[0], b.CreateFMul(d, d))};
    })[0];
    llvm::Value* sd =
        c.intrinsic(llvm::Intrinsic::sqrt,
                    b.CreateFAdd(b.CreateFDiv(sq, count), llvm::ConstantFP::get(f64, eps)));
    llvm::Value* inv = b.CreateFDiv(llvm::ConstantFP::get(f64, 1.0), sd);
    if (!out.defined()) {
      llvm::Value* off = e.offset_of(ri, rs);
      b.CreateStore(mean, e.at(mu, off));
      b.CreateStore(inv, e.at(acc, off));
      return;
    }
    llvm::Value* m = b.CreateFPCast(mean, t);
    llvm::Value* k = b.CreateFPCast(inv, t);
    llvm::Value* row = e.offset_of(ri, in);  // (its element 0; the row is contiguous)
    e.inner_loop(len, {}, [&](llvm::Value* j, const auto&) {
      b.CreateStore(normalised(e, n, at(j), m, k),
                    e.at(out, b.CreateAdd(row, j, "", /*HasNUW=*/true, /*HasNSW=*/true)));
      return std::vector<llvm::Value*>{};
    });
  });
}

void materialise_layer_norm(Emitter& e, const Node& n) {
  if (layer_norm_rows_innermost(e, n)) return materialise_rows(e, n);
  const ValueId x = n.inputs[0];
  const SymShape in = e.dims(x);
  const SymShape rs = row_shape(e, n, true);
  const auto& [mu, acc, out] = e.state_of<LayerNormPlan>(n);
  llvm::IRBuilderBase& b = e.b;
  std::vector<bool> collapsed(rs.size());
  for (size_t d = 0; d < rs.size(); ++d) collapsed[d] = rs[d].is_one() && !in[d].is_one();
  const bool parallel = outer_kept(in, collapsed);
  llvm::Type* f64 = b.getDoubleTy();
  // The row length: a constant, or the product of its symbolic dims (read in each nest).
  const SymShape row(in.begin() + op_axis(n, in.size()), in.end());
  const auto count = [&]() -> llvm::Value* {
    if (is_static(row))
      return llvm::ConstantFP::get(f64, static_cast<double>(numel(eval_shape(row, {}))));
    return b.CreateUIToFP(e.count(row), f64);
  };
  const double eps = n.attrs.get_float("epsilon", 1e-5);
  e.loop_nest(rs, true, [&](const Index& ri) {
    b.CreateStore(llvm::ConstantFP::get(f64, 0.0), e.at(mu, e.offset_of(ri, rs)));
  });
  e.loop_nest(in, parallel, [&](const Index& ii) {
    llvm::Value* p = e.at(mu, row_offset(e, ii, rs));
    b.CreateStore(reassoc_fadd(b, b.CreateLoad(f64, p), b.CreateFPCast(e.element(x, ii), f64)), p);
  });
  e.loop_nest(rs, true, [&](const Index& ri) {
    llvm::Value* off = e.offset_of(ri, rs);
    llvm::Value* p = e.at(mu, off);
    b.CreateStore(b.CreateFDiv(b.CreateLoad(f64, p), count()), p);
    b.CreateStore(llvm::ConstantFP::get(f64, 0.0), e.at(acc, off));
  });
  e.loop_nest(in, parallel, [&](const Index& ii) {
    llvm::Value* off = row_offset(e, ii, rs);
    llvm::Value* d =
        b.CreateFSub(b.CreateFPCast(e.element(x, ii), f64), b.CreateLoad(f64, e.at(mu, off)));
    llvm::Value* p = e.at(acc, off);
    b.CreateStore(reassoc_fadd(b, b.CreateLoad(f64, p), b.CreateFMul(d, d)), p);
  });
  const std::vector<DType> dts = {DType::f64};
  ElementCtx c{b, n, dts, DType::f64};
  e.loop_nest(rs, true, [&](const Index& ri) {
    llvm::Value* p = e.at(acc, e.offset_of(ri, rs));
    llvm::Value* var = b.CreateFDiv(b.CreateLoad(f64, p), count());
    llvm::Value* sd =
        c.intrinsic(llvm::Intrinsic::sqrt, b.CreateFAdd(var, llvm::ConstantFP::get(f64, eps)));
    b.CreateStore(b.CreateFDiv(llvm::ConstantFP::get(f64, 1.0), sd), p);
  });
}

// (x - mean) * inv_std * scale + bias, in the input's type, at `idx`.
llvm::Value* generate_layer_norm(Emitter& e, const Node& n, const Index& idx) {
  const auto& [mu, acc, out] = e.state_of<LayerNormPlan>(n);
  llvm::IRBuilderBase& b = e.b;
  llvm::Value* off = row_offset(e, idx, row_shape(e, n, true));
  llvm::Type* t = element_type(e.context(), e.dtype(n.outputs[0]));
  llvm::Value* m = b.CreateFPCast(b.CreateLoad(mu.type, e.at(mu, off)), t);
  llvm::Value* k = b.CreateFPCast(b.CreateLoad(acc.type, e.at(acc, off)), t);
  return normalised(e, n, idx, m, k);
}

// Its consumers' loops read the input, the scale and the bias (the output held whole, as a region
// output made row by row, reads none, but is a region output: never shared).
std::vector<ValueId> inline_reads_layer_norm(Emitter&, const Node& n) {
  std::vector<ValueId> in;
  for (ValueId v : n.inputs)
    if (v != kNoValue) in.push_back(v);
  return in;
}

}  // namespace

extern const Lowering kLayerNormLowering;
const Lowering kLayerNormLowering{.why_not = why_not_layer_norm,
                                  .why_not_dynamic = why_not_dynamic_layer_norm,
                                  .generate = generate_layer_norm,
                                  .allocate = allocate_layer_norm,
                                  .materialise = materialise_layer_norm,
                                  .inline_reads = inline_reads_layer_norm};

}  // namespace sgraph::ops
