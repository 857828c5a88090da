// Trilu's lowering: the input's element where its column less its row is on the kept side of k
// (read at run time when k is not a constant: the output's shape does not depend on it), else 0.
#include "ops/lowering.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

llvm::Value* generate_trilu(Emitter& e, const Node& n, const Index& idx) {
  llvm::IRBuilderBase& b = e.b;
  const size_t r = idx.size();
  llvm::Value* x = e.element(n.inputs[0], idx);
  llvm::Value* k = has_input(n, 1) ? scalar_element(e, n.inputs[1]) : e.i64(0);
  // (j - i is small: comparing it with k cannot overflow whatever k is)
  llvm::Value* d = b.CreateSub(idx[r - 1], idx[r - 2]);
  const bool upper = n.attrs.get_int("upper", 1) != 0;
  llvm::Value* keep = upper ? b.CreateICmpSGE(d, k) : b.CreateICmpSLE(d, k);
  return b.CreateSelect(keep, x, llvm::Constant::getNullValue(x->getType()));
}

// Its output has its input's shape, whatever the symbols.
std::string why_not_dynamic_trilu(const Graph&, const Node&, const std::vector<const SymShape*>& in,
                                  const SymShape& out) {
  return !in.empty() && in[0] && *in[0] == out ? "" : "its output is not its input's shape";
}

}  // namespace

extern const Lowering kTriluLowering;
const Lowering kTriluLowering{.why_not_dynamic = why_not_dynamic_trilu, .generate = generate_trilu};

}  // namespace sgraph::ops
