// The lowering of ArgMax and ArgMin: a nest over the operand in memory order keeps, per output
// element, the best value so far and its index in two kernel-local buffers; the index buffer holds
// the op's value. An element replaces the best as in the reference kernel (arg_reduce.cpp): when
// it is strictly better, or equal with select_last_index; a NaN beats every number (a NaN best is
// replaced only by a later NaN with select_last_index). The best starts as the dtype's worst value
// (-inf for ArgMax over floats) at index 0, which picks what the reference picks: an element equal
// to that start is at index 0 unless select_last_index moves it on.
#include <llvm/IR/MDBuilder.h>

#include <algorithm>
#include <utility>

#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

bool is_argmax(const Node& n) { return n.op == OpKind::ArgMax; }

std::string why_not_arg(const Graph& g, const Node& n) {
  const DType in = g.values[n.inputs[0]].dtype;
  const bool ok = in == DType::f32 || in == DType::f64 || in == DType::i32 || in == DType::i64 ||
                  in == DType::u8 || in == DType::i8;
  return ok ? "" : "the index of " + std::string(dtype_name(in)) + " elements";
}

// Only the axis is reduced.
std::vector<bool> arg_mask(const Node& n, size_t rank) {
  std::vector<bool> mask(rank, false);
  mask[static_cast<size_t>(op_axis(n, rank))] = true;
  return mask;
}

std::string why_not_dynamic_arg(const Graph&, const Node& n, const std::vector<const SymShape*>& in,
                                const SymShape& out) {
  if (in.empty() || !in[0] || in[0]->empty()) return "no input";
  return reduced_shape(n, *in[0], arg_mask(n, in[0]->size())) == out
             ? ""
             : "its output is not the index";
}

struct ArgBuffers {
  LocalBuffer best, index;
};

void allocate_arg(Emitter& e, const Node& n) {
  const ValueId y = n.outputs[0];
  const LocalBuffer best =
      e.local_buffer(memory_type(e.context(), e.dtype(n.inputs[0])), e.dims(y));
  const LocalBuffer index = e.local_buffer(e.b.getInt64Ty(), e.dims(y));
  e.hold(y, index, nullptr);
  e.state(n) = ArgBuffers{best, index};
}

// Whether v replaces the best b (see the file comment).
llvm::Value* replaces(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* best, DType t, bool max,
                      bool last) {
  if (is_float(t)) {
    llvm::Value* better = max ? b.CreateFCmpOGT(v, best) : b.CreateFCmpOLT(v, best);
    if (last) better = b.CreateOr(better, b.CreateFCmpOEQ(v, best));
    llvm::Value* v_nan = b.CreateFCmpUNO(v, v);
    llvm::Value* best_nan = b.CreateFCmpUNO(best, best);
    // best NaN: only a later NaN with select_last_index; else a NaN v always, or a better number
    llvm::Value* number = b.CreateOr(v_nan, better);
    llvm::Value* after_nan = last ? v_nan : b.getFalse();
    return b.CreateSelect(best_nan, after_nan, number);
  }
  const bool u = t == DType::u8;
  llvm::Value* better = max ? (u ? b.CreateICmpUGT(v, best) : b.CreateICmpSGT(v, best))
                            : (u ? b.CreateICmpULT(v, best) : b.CreateICmpSLT(v, best));
  return last ? b.CreateOr(better, b.CreateICmpEQ(v, best)) : better;
}

void materialise_arg(Emitter& e, const Node& n) {
  const ValueId x = n.inputs[0], y = n.outputs[0];
  const DType t = e.dtype(x);
  const SymShape in = e.dims(x);
  const SymShape out = e.dims(y);
  const std::vector<bool> reduced = arg_mask(n, in.size());
  SG_CHECK(reduced_shape(n, in, reduced) == out)
      << node_str(n) << ": output shape " << sym_shape_str(out, {})
      << " does not match the index of " << sym_shape_str(in, {});
  const bool keep = n.attrs.get_int("keepdims", 1) != 0;
  const bool max = is_argmax(n), last = n.attrs.get_int("select_last_index", 0) != 0;
  const auto [best, index] = e.state_of<ArgBuffers>(n);
  llvm::IRBuilderBase& b = e.b;
  llvm::Value* start = max ? lowest(t, best.type) : highest(t, best.type);
  // Whether the nest's innermost loop runs along the axis (every dim after it is 1).
  const auto axis = std::find(reduced.begin(), reduced.end(), true) - reduced.begin();
  const bool along_row =
      std::all_of(in.begin() + axis + 1, in.end(), [](const SymDim& d) { return d.is_one(); });
  e.loop_nest(out, true, [&](const Index& oi) {
    llvm::Value* o = e.offset_of(oi, out);
    b.CreateStore(start, e.at(best, o));
    b.CreateStore(e.i64(0), e.at(index, o));
  });
  e.loop_nest(in, outer_kept(in, reduced), [&](const Index& ii) {
    Index oi;
    llvm::Value* j = nullptr;
    for (size_t d = 0; d < in.size(); ++d)
      if (!reduced[d]) {
        oi.push_back(ii[d]);
      } else {
        j = ii[d];
        if (keep) oi.push_back(e.i64(0));
      }
    llvm::Value* o = e.offset_of(oi, out);
    llvm::Value* pb = e.at(best, o);
    llvm::Value* pi = e.at(index, o);
    llvm::Value* cur = b.CreateLoad(best.type, pb);
    llvm::Value* v = e.element(x, ii);
    llvm::Value* take = replaces(b, v, cur, t, max, last);
    if (!along_row) {  // selects: the loop over the kept dims inside vectorises
      b.CreateStore(b.CreateSelect(take, v, cur), pb);
      b.CreateStore(b.CreateSelect(take, j, b.CreateLoad(index.type, pi)), pi);
      return;
    }
    // Along a row, a select chain makes every element wait for the one before (~5 ns each); a
    // branch, rarely taken once the row's best is met, lets the loads run ahead (3x faster on
    // 1024-element rows). The weights keep it a branch (SimplifyCFG folds an unweighted one).
    llvm::Function* f = b.GetInsertBlock()->getParent();
    llvm::BasicBlock* better = llvm::BasicBlock::Create(e.context(), "arg.better", f);
    llvm::BasicBlock* next = llvm::BasicBlock::Create(e.context(), "arg.next", f);
    b.CreateCondBr(take, better, next, llvm::MDBuilder(e.context()).createBranchWeights(1, 64));
    b.SetInsertPoint(better);
    b.CreateStore(v, pb);
    b.CreateStore(j, pi);
    b.CreateBr(next);
    b.SetInsertPoint(next);
  });
}

}  // namespace

extern const Lowering kArgReduceLowering;
const Lowering kArgReduceLowering{.why_not = why_not_arg,
                                  .why_not_dynamic = why_not_dynamic_arg,
                                  .allocate = allocate_arg,
                                  .materialise = materialise_arg};

}  // namespace sgraph::ops
