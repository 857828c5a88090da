// Expand's lowering: the output index broadcast to the input's, as numpy broadcasts; the dims it
// spans merge with those of the ops around it.
#include "ops/lowering.h"

namespace sgraph::ops {
namespace {

llvm::Value* generate_expand(Emitter& e, const Node& n, const Index& idx) {
  return e.element(n.inputs[0],
                   e.broadcast_index(n, idx, e.shape(n.outputs[0]), e.shape(n.inputs[0])));
}

std::optional<std::vector<ValueId>> merge_expand(Emitter&, const Node& n) {
  return std::vector<ValueId>{n.inputs[0]};
}

}  // namespace

extern const Lowering kExpandLowering;
const Lowering kExpandLowering{.generate = generate_expand, .merge = merge_expand};

}  // namespace sgraph::ops
