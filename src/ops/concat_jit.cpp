// Concat's lowering: the element selects among its operands' elements, each made at its index
// clamped into the operand's range, so every load is in bounds and the loop stays straight-line
// (vectorisable). In a dynamic region the operands' sizes along the axis may be symbolic when
// they add up to one dim (multiples of one symbol and constants).
#include <optional>

#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

// The sum of the operands' dims along the axis, when it is one dim (constants, and multiples of
// one symbol); nullopt otherwise.
std::optional<SymDim> axis_sum(const std::vector<SymShape>& ins, size_t axis) {
  SymDim sum = SymDim::constant(0);
  for (const SymShape& s : ins) {
    const SymDim& d = s[axis];
    if (!d.affine() || (d.symbolic() && sum.symbolic() && d.sym != sum.sym)) return std::nullopt;
    if (d.symbolic())
      sum = SymDim{d.sym, (sum.symbolic() ? sum.scale : 0) + d.scale, sum.offset + d.offset};
    else
      sum.offset += d.offset;
  }
  return sum;
}

// "" when the operands `ins` concatenate along `axis` to `out`.
std::string check_concat(const std::vector<SymShape>& ins, size_t axis, const SymShape& out) {
  for (const SymShape& s : ins) {
    bool fits = s.size() == out.size();
    for (size_t d = 0; fits && d < s.size(); ++d) fits = d == axis || s[d] == out[d];
    if (!fits) return "an operand does not fit its output along the axis";
  }
  const std::optional<SymDim> sum = axis_sum(ins, axis);
  if (!sum || !(*sum == out[axis]))
    return "its operands do not add up to its output along the axis";
  return "";
}

llvm::Value* generate_concat(Emitter& e, const Node& n, const Index& idx) {
  const SymShape out = e.dims(n.outputs[0]);
  const auto axis = static_cast<size_t>(op_axis(n, out.size()));
  std::vector<SymShape> ins;
  for (ValueId v : n.inputs) ins.push_back(e.dims(v));
  const std::string why = check_concat(ins, axis, out);
  SG_CHECK(why.empty()) << node_str(n) << ": " << why << " " << axis;
  llvm::IRBuilderBase& b = e.b;
  llvm::Value* const i = idx[axis];
  llvm::Value* r = nullptr;
  SymDim off = SymDim::constant(0);  // where the operand starts along the axis
  for (size_t k = 0; k < ins.size(); ++k) {
    const SymDim len = ins[k][axis];
    if (!len.symbolic() && len.offset == 0) continue;
    Index j = idx;
    llvm::Value* start = e.dim(off);
    llvm::Value* rel = off == SymDim::constant(0) ? i : b.CreateSub(i, start, "", false, true);
    j[axis] = len.symbolic() ? clamp(e, rel, 0, b.CreateSub(e.dim(len), e.i64(1)))
                             : clamp(e, rel, 0, len.offset - 1);
    llvm::Value* x = e.element(n.inputs[k], j);
    r = r ? b.CreateSelect(b.CreateICmpSLT(i, start), r, x) : x;
    off = *axis_sum({SymShape{off}, SymShape{len}}, 0);
  }
  SG_ASSERT(r) << node_str(n) << ": an element of an empty output";
  return r;
}

std::string why_not_dynamic_concat(const Graph&, const Node& n,
                                   const std::vector<const SymShape*>& in, const SymShape& out) {
  std::vector<SymShape> ins;
  for (const SymShape* s : in) {
    if (!s) return "an absent operand";
    ins.push_back(*s);
  }
  return check_concat(ins, static_cast<size_t>(op_axis(n, out.size())), out);
}

}  // namespace

extern const Lowering kConcatLowering;
const Lowering kConcatLowering{.why_not_dynamic = why_not_dynamic_concat,
                               .generate = generate_concat};

}  // namespace sgraph::ops
