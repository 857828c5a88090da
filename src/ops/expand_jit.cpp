// Expand's lowering: the output index broadcast to the input's, as numpy broadcasts; the dims it
// spans merge with those of the ops around it.
#include "ops/lowering.h"

namespace sgraph::ops {
namespace {

llvm::Value* generate_expand(Emitter& e, const Node& n, const Index& idx) {
  // (In a static region dims() are the current shapes, and this is the static broadcast.)
  return e.element(n.inputs[0],
                   e.broadcast_index(n, idx, e.dims(n.outputs[0]), e.dims(n.inputs[0])));
}

// The input broadcasts to the output: every symbolic output dim is the input's, or made from the
// shape operand where the input's dim is 1 (or absent). Such a dim comes from a shape operand
// whose elements follow the symbols (Shape(x) -> ... -> Expand): the planner then guards those
// elements as forms of the symbols and checks that the planned output is what the rule makes of
// them (a constant operand makes no symbolic dim where the input's is 1).
std::string why_not_dynamic_expand(const Graph&, const Node&,
                                   const std::vector<const SymShape*>& in, const SymShape& out) {
  if (in.empty() || !in[0]) return "no input";
  if (std::string why = sym_broadcasts(*in[0], out); !why.empty()) return why;
  const size_t lead = out.size() - in[0]->size();
  for (size_t d = 0; d < out.size(); ++d)
    if (out[d].symbolic() && d >= lead && !((*in[0])[d - lead] == out[d]) &&
        !(*in[0])[d - lead].is_one())
      return "output dim " + std::to_string(d) + " is not its input's";
  return "";
}

std::optional<std::vector<ValueId>> merge_expand(Emitter&, const Node& n) {
  return std::vector<ValueId>{n.inputs[0]};
}

}  // namespace

extern const Lowering kExpandLowering;
const Lowering kExpandLowering{
    .why_not_dynamic = why_not_dynamic_expand, .generate = generate_expand, .merge = merge_expand};

}  // namespace sgraph::ops
