// The lowering of CumSum: a nest over the operand in memory order keeps, per position off the
// axis, the running sum in a kernel-local buffer of the element type and writes each output
// element (the sum before adding the element with `exclusive`, after without) into the buffer
// holding the op's value: the region's output buffer when it is one, else a local buffer. With
// `reverse` the nest's step s along the axis reads and writes position dim - 1 - s. The additions
// are the reference's, in its order (no reassociation), so float sums round as in the
// interpreter; integer sums wrap.
#include "ops/lowering.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

std::string why_not_cumsum(const Graph& g, const Node& n) {
  const DType t = g.values[n.inputs[0]].dtype;
  if (t != DType::f32 && t != DType::f64 && t != DType::i32 && t != DType::i64)
    return "running sums of " + std::string(dtype_name(t));
  return need_constant(g, n, 1, "axis");
}

int64_t cumsum_axis(const Graph& g, const Node& n, size_t rank) {
  return normalize_axis(constant_input(g, n, 1)->to_int64()[0], static_cast<int64_t>(rank));
}

std::string why_not_dynamic_cumsum(const Graph&, const Node&,
                                   const std::vector<const SymShape*>& in, const SymShape& out) {
  if (in.empty() || !in[0] || in[0]->empty()) return "no input";
  return *in[0] == out ? "" : "its output is not its input's shape";
}

struct CumSumBuffers {
  LocalBuffer sums, out;
};

void allocate_cumsum(Emitter& e, const Node& n) {
  const ValueId x = n.inputs[0], y = n.outputs[0];
  const SymShape in = e.dims(x);
  SymShape rows = in;  // the running sums: one per position off the axis
  rows[static_cast<size_t>(cumsum_axis(e.graph, n, in.size()))] = SymDim::constant(1);
  llvm::Type* t = memory_type(e.context(), e.dtype(x));
  // Written straight into the region's output when y is one (no nest copying it there).
  LocalBuffer out = e.output_buffer(y);
  if (!out.defined()) out = e.local_buffer(t, e.dims(y));
  e.hold(y, out, nullptr);
  e.state(n) = CumSumBuffers{e.local_buffer(t, rows), out};
}

void materialise_cumsum(Emitter& e, const Node& n) {
  const ValueId x = n.inputs[0], y = n.outputs[0];
  const DType t = e.dtype(x);
  const SymShape in = e.dims(x);
  SG_CHECK(e.dims(y) == in) << node_str(n) << ": output shape " << sym_shape_str(e.dims(y), {})
                            << " is not its input's " << sym_shape_str(in, {});
  const size_t axis = static_cast<size_t>(cumsum_axis(e.graph, n, in.size()));
  const bool exclusive = n.attrs.get_int("exclusive", 0) != 0;
  const bool reverse = n.attrs.get_int("reverse", 0) != 0;
  const auto [sums, out] = e.state_of<CumSumBuffers>(n);
  SymShape rows = in;
  rows[axis] = SymDim::constant(1);
  std::vector<bool> along(in.size(), false);
  along[axis] = true;
  llvm::IRBuilderBase& b = e.b;
  e.loop_nest(rows, true, [&](const Index& ri) {
    b.CreateStore(llvm::Constant::getNullValue(sums.type), e.at(sums, e.offset_of(ri, rows)));
  });
  e.loop_nest(in, outer_kept(in, along), [&](const Index& ii) {
    Index at = ii, ri = ii;
    if (reverse) at[axis] = b.CreateSub(b.CreateSub(e.dim(in[axis]), e.i64(1)), ii[axis]);
    ri[axis] = e.i64(0);
    llvm::Value* ps = e.at(sums, e.offset_of(ri, rows));
    llvm::Value* before = b.CreateLoad(sums.type, ps);
    llvm::Value* v = e.element(x, at);
    llvm::Value* after = is_float(t) ? b.CreateFAdd(before, v) : b.CreateAdd(before, v);
    b.CreateStore(after, ps);
    b.CreateStore(exclusive ? before : after, e.at(out, e.offset_of(at, in)));
  });
}

}  // namespace

extern const Lowering kCumSumLowering;
const Lowering kCumSumLowering{.why_not = why_not_cumsum,
                               .why_not_dynamic = why_not_dynamic_cumsum,
                               .allocate = allocate_cumsum,
                               .materialise = materialise_cumsum};

}  // namespace sgraph::ops
