// Per-node type and shape inference, shared by Graph::infer_and_verify and GraphBuilder.
#pragma once

#include <optional>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph {

struct NodeTypes {
  std::vector<DType> dtypes;
  // Per output when inferable: static dims, symbolic dims carried through (batch), or unknown.
  std::optional<std::vector<DimList>> shapes;
};

// Throws (without node context) when `n` has a wrong number of inputs or outputs.
void check_arity(const Node& n);
// Output types of `n` from its inputs' recorded dtypes/shapes (and constant values). Throws
// sgraph::Error without node context.
NodeTypes infer_node_types(const Graph& g, const Node& n);
// Writes the inferred types into the node's output values; errors name the node.
void infer_node(Graph& g, int32_t index);

}  // namespace sgraph
