// The lowering of Softmax and LogSoftmax, two ways.
// - Over the innermost axis (every dim after it 1), row by row: one nest over the rows, and in it
//   three loops over the row while it stays in the L1 cache: its max (of integer keys ordered as
//   the floats); exp(x - max) (Softmax) or
//   x - max (LogSoftmax) stored to the output and the sum of exp added up (in the element type
//   within chunks of 256, so the loop runs at full vector width, and the chunks in f64); then the
//   stored row times 1 / sum, or less log(sum). The input is read from memory once and exp
//   computed once per element; the output is written into the region's output buffer when it is
//   one (no copy), else into a local buffer its consumers read (a GEMM reads it in place).
// - Over another axis: two nests materialise the row max and the row sum of exp(x - max) into
//   kernel-local buffers; the element is then exp(x - max) / sum, or (x - max) - log(sum),
//   generated in its consumers' nests.
#include <limits>

#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"
#include "ops/row_stats.h"

namespace sgraph::ops {
namespace {

struct SoftmaxPlan {
  LocalBuffer max, sum;  // per row (another axis than the innermost)
  LocalBuffer out;       // the output, made row by row (the innermost axis)
};

// Whether the rows are innermost: every dim after the axis is a static 1.
bool softmax_rows_innermost(Emitter& e, const Node& n) {
  const SymShape in = e.dims(n.inputs[0]);
  const auto axis = static_cast<size_t>(op_axis(n, in.size()));
  for (size_t d = axis + 1; d < in.size(); ++d)
    if (!in[d].is_one()) return false;
  return true;
}

std::string why_not_softmax(const Graph& g, const Node& n) {
  const DType in = g.values[n.inputs[0]].dtype;
  return is_float(in) ? "" : "softmax of " + std::string(dtype_name(in));
}

std::string why_not_dynamic_softmax(const Graph&, const Node&, const std::vector<const SymShape*>&,
                                    const SymShape&) {
  return "";
}

void allocate_softmax(Emitter& e, const Node& n) {
  llvm::Type* t = element_type(e.context(), e.dtype(n.inputs[0]));
  if (softmax_rows_innermost(e, n)) {
    const ValueId y = n.outputs[0];
    LocalBuffer out = e.output_buffer(y);
    if (!out.defined()) out = e.local_buffer(t, e.dims(y));
    e.hold(y, out, nullptr);
    e.state(n) = SoftmaxPlan{{}, {}, out};
    return;
  }
  const SymShape rs = row_shape(e, n, /*through_last=*/false);
  e.state(n) = SoftmaxPlan{e.local_buffer(t, rs), e.local_buffer(e.b.getDoubleTy(), rs), {}};
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

// exp(x - max) * (1 / sum) with `ex` = exp(x - max), `inv` = 1 / sum (the element type) and `sum`
// (f64): 0 where the quotient is below twice the smallest normal number, so that no output is a
// denormal, an error of at most that in an output that sums to 1 with its row. Intel's cores take
// a microcode assist of ~100 cycles for every vector operation with a denormal operand or result,
// and masked attention scores make many: the products of probabilities and values after a causal
// or padding mask ran 6.7x slower (tiny_causal_block 1x64x32 on a Sapphire Rapids). The term is
// zeroed before the multiply, which would otherwise be the operation that makes the denormal.
// NaN stays NaN.
llvm::Value* normal_quotient(llvm::IRBuilderBase& b, llvm::Value* ex, llvm::Value* inv,
                             llvm::Value* sum) {
  llvm::Type* et = ex->getType();
  const double least = 2 * (et->isFloatTy() ? static_cast<double>(std::numeric_limits<float>::min())
                                            : std::numeric_limits<double>::min());
  llvm::Value* bound =
      b.CreateFPCast(b.CreateFMul(llvm::ConstantFP::get(sum->getType(), least), sum), et);
  llvm::Value* kept =
      b.CreateSelect(b.CreateFCmpOLT(ex, bound), llvm::ConstantFP::get(et, 0.0), ex);
  return b.CreateFMul(kept, inv);
}

// The row-by-row form (see the top of the file).
void materialise_rows(Emitter& e, const Node& n, const LocalBuffer& out) {
  const ValueId x = n.inputs[0];
  const DType t = e.dtype(x);
  const SymShape in = e.dims(x);
  const SymShape rs = row_shape(e, n, false);
  const auto axis = static_cast<size_t>(op_axis(n, in.size()));
  llvm::IRBuilderBase& b = e.b;
  const std::vector<DType> dts = {t};
  ElementCtx c{b, n, dts, t};
  llvm::Type* et = out.type;
  llvm::Type* f64 = b.getDoubleTy();
  e.loop_nest(rs, /*parallel=*/true, [&](const Index& ri) {
    llvm::Value* len = e.dim(in[axis]);
    const auto at = [&](llvm::Value* j) {
      Index ii = ri;
      ii[axis] = j;
      return ii;
    };
    llvm::Value* row = e.offset_of(ri, in);  // (its element 0; the row is contiguous)
    const auto out_at = [&](llvm::Value* j) {
      return e.at(out, b.CreateAdd(row, j, "", /*HasNUW=*/true, /*HasNSW=*/true));
    };
    // The row's max as the max of integer keys ordered as the floats are (sign_key): a vector
    // loop of integer max instructions, where the floats' NaN-propagating max takes five
    // instructions a vector and a long reduction. A NaN of either sign still makes every output
    // NaN: one of positive sign is the greatest key, so the max; one of negative sign the least,
    // but exp(NaN - max) then makes the sum NaN.
    llvm::Type* kt = b.getIntNTy(et->getPrimitiveSizeInBits());
    const auto sign_key = [&](llvm::Value* bits) {  // an involution: it also undoes itself
      const unsigned top = kt->getIntegerBitWidth() - 1;
      return b.CreateXor(bits, b.CreateLShr(b.CreateAShr(bits, top), 1));
    };
    llvm::Value* start = sign_key(b.CreateBitCast(lowest(t, et), kt));
    llvm::Value* mkey = e.inner_loop(len, {start}, [&](llvm::Value* j, const auto& acc) {
      llvm::Value* k = sign_key(b.CreateBitCast(e.element(x, at(j)), kt));
      return std::vector<llvm::Value*>{b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, acc[0], k)};
    })[0];
    llvm::Value* m = b.CreateBitCast(sign_key(mkey), et);
    const bool log = n.op == OpKind::LogSoftmax;
    // The sum in chunks of kChunk elements: within one, in the element type (a full-width vector
    // loop, each lane adding kChunk / lanes terms), the chunks' sums in f64.
    constexpr int64_t kChunk = 256;
    llvm::Value* chunks = b.CreateSDiv(b.CreateAdd(len, e.i64(kChunk - 1)), e.i64(kChunk));
    llvm::Value* sum = e.inner_loop(
        chunks, {llvm::ConstantFP::get(f64, 0.0)}, [&](llvm::Value* ci, const auto& total) {
          llvm::Value* base = b.CreateMul(ci, e.i64(kChunk), "", true, true);
          llvm::Value* left = b.CreateSub(len, base, "", true, true);
          llvm::Value* count =
              b.CreateSelect(b.CreateICmpSLT(left, e.i64(kChunk)), left, e.i64(kChunk));
          llvm::Value* part = e.inner_loop(
              count, {llvm::ConstantFP::get(et, 0.0)}, [&](llvm::Value* jj, const auto& acc) {
                llvm::Value* j = b.CreateAdd(base, jj, "", true, true);
                llvm::Value* d = b.CreateFSub(e.element(x, at(j)), m);
                // (x - max is at most 0, or NaN: the shorter exp)
                llvm::Value* ex = et->isFloatTy() ? c.exp_f32_nonpositive(exp_arg(b, d))
                                                  : c.math("exp", exp_arg(b, d));
                b.CreateStore(log ? d : ex, out_at(j));
                return std::vector<llvm::Value*>{reassoc_fadd(b, acc[0], ex)};
              })[0];
          return std::vector<llvm::Value*>{b.CreateFAdd(total[0], b.CreateFPCast(part, f64))};
        })[0];
    llvm::Value* k = log ? b.CreateFPCast(c.math("log", sum), et)
                         : b.CreateFPCast(b.CreateFDiv(llvm::ConstantFP::get(f64, 1.0), sum), et);
    e.inner_loop(len, {}, [&](llvm::Value* j, const auto&) {
      llvm::Value* p = out_at(j);
      llvm::Value* y = b.CreateLoad(et, p);
      b.CreateStore(log ? b.CreateFSub(y, k) : normal_quotient(b, y, k, sum), p);
      return std::vector<llvm::Value*>{};
    });
  });
}

void materialise_softmax(Emitter& e, const Node& n) {
  const auto& [mx, sum, out] = e.state_of<SoftmaxPlan>(n);
  if (out.defined()) return materialise_rows(e, n, out);
  const ValueId x = n.inputs[0];
  const DType t = e.dtype(x);
  const SymShape in = e.dims(x);
  const SymShape rs = row_shape(e, n, false);
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
  const auto& [mx, sum, out] = e.state_of<SoftmaxPlan>(n);
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
  return normal_quotient(b, c.math("exp", exp_arg(b, d)), inv, s);
}

// Made row by row, the output is held whole; otherwise its consumers' loops read the input.
std::vector<ValueId> inline_reads_softmax(Emitter& e, const Node& n) {
  if (softmax_rows_innermost(e, n)) return {};
  return {n.inputs[0]};
}

}  // namespace

extern const Lowering kSoftmaxLowering;
const Lowering kSoftmaxLowering{.why_not = why_not_softmax,
                                .why_not_dynamic = why_not_dynamic_softmax,
                                .generate = generate_softmax,
                                .allocate = allocate_softmax,
                                .materialise = materialise_softmax,
                                .inline_reads = inline_reads_softmax};

}  // namespace sgraph::ops
