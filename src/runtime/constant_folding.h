// Constant folding: nodes whose inputs are all constants become constants before a Session
// warms up.
//
// Exporters write shape arithmetic and small tables as chains over constants (a PyTorch F.pad's
// pads: ConstantOfShape -> Concat -> Reshape -> Slice -> Transpose -> Reshape -> Cast), which a
// Session would otherwise recompute on every call, as an extra region or interpreted; and the
// op reading the result sees a computed operand where its lowering wants a constant (Pad's pads),
// so it is left out of its region. Folded, the chain is gone and its reader compiles.
//
// A node is folded when every input it has is a constant (or it has none), it is not control
// flow, none of its outputs is a graph output (a caller could write into a returned constant),
// and its outputs take at most kMaxFoldedBytes more than the constants only it reads (which the
// fold drops): so folding never grows a graph's constants by more than that per node (a weight's
// Transpose is folded in place of the weight; a large ConstantOfShape is not expanded). Each fold
// runs the op's interpreter kernel once, so its result is what every call would compute. A node
// whose kernel raises an error is left as it is, and raises it when a call runs it.
#pragma once

#include <cstdint>

#include "sgraph/graph.h"

namespace sgraph {

inline constexpr int64_t kMaxFoldedBytes = int64_t{64} << 10;

// Folds g's constant nodes in place (g must have had infer_and_verify() run) and drops the
// constants left unread (a branch reads outer values through its If node's inputs, so none is
// read otherwise). Returns the number of nodes folded; g is verified again when any was.
int fold_constants(Graph& g);

}  // namespace sgraph
