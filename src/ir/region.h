// Region: a set of a graph's nodes compiled into one kernel (built by src/runtime/region_builder,
// compiled by src/jit/region_compiler).
#pragma once

#include <cstdint>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph {

struct Region {
  std::vector<int32_t> nodes;  // node indices, sorted
  // Boundary values, sorted and deduplicated. Inputs: read by a member, not produced by one
  // (graph inputs, constants, other nodes' outputs). Outputs: produced by a member and read by a
  // non-member or a graph output.
  std::vector<ValueId> inputs, outputs;
  // Its nodes changed shapes during warm-up: compiled with their changing dims as symbols the
  // kernel takes at run time (see ir/sym_shape.h); else every shape is static.
  bool dynamic = false;
};

}  // namespace sgraph
