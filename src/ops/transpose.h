// Transpose's parameter, decoded once for its shape rule, kernel, gradient and lowering.
#pragma once

#include "sgraph/graph.h"

namespace sgraph::ops {

// The `perm` attribute for an input of rank `rank` (default: the dims reversed); throws
// sgraph::Error (no node context) when it is not a permutation of 0..rank-1.
Ints transpose_perm(const Attributes& attrs, int64_t rank);

}  // namespace sgraph::ops
