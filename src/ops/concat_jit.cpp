// Concat's lowering: the element selects among its operands' elements, each made at its index
// clamped into the operand's range, so every load is in bounds and the loop stays straight-line
// (vectorisable).
#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

llvm::Value* generate_concat(Emitter& e, const Node& n, const Index& idx) {
  const Shape& out = e.shape(n.outputs[0]);
  const auto axis = static_cast<size_t>(op_axis(n, out.size()));
  llvm::IRBuilderBase& b = e.b;
  llvm::Value* const i = idx[axis];
  llvm::Value* r = nullptr;
  int64_t off = 0;  // where the operand starts along the axis
  for (ValueId v : n.inputs) {
    const Shape& s = e.shape(v);
    bool fits = s.size() == out.size();
    for (size_t d = 0; fits && d < s.size(); ++d) fits = d == axis || s[d] == out[d];
    SG_CHECK(fits) << node_str(n) << ": operand shape " << shape_str(s)
                   << " does not fit output shape " << shape_str(out) << " along axis " << axis;
    const int64_t len = s[axis];
    if (len == 0) continue;
    Index j = idx;
    j[axis] = clamp(e, off == 0 ? i : b.CreateSub(i, e.i64(off), "", false, true), 0, len - 1);
    llvm::Value* x = e.element(v, j);
    r = r ? b.CreateSelect(b.CreateICmpSLT(i, e.i64(off)), r, x) : x;
    off += len;
  }
  SG_CHECK(off == out[axis]) << node_str(n) << ": operands add up to " << off << " along axis "
                             << axis << ", the output has " << out[axis];
  SG_ASSERT(r) << node_str(n) << ": an element of an empty output";
  return r;
}

}  // namespace

extern const Lowering kConcatLowering;
const Lowering kConcatLowering{.generate = generate_concat};

}  // namespace sgraph::ops
