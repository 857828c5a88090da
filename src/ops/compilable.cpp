// Which ops a region may hold: those the JIT can generate elements of — an op with an element
// emitter (OpDef::element, in the op's own file), an index op the region compiler maps itself
// (views, Transpose, Expand, Slice, Pad, Concat, Gather), or an op it prepares with nests of its
// own (reductions, GlobalAveragePool, Softmax, LayerNormalization, MatMul/Gemm, Conv and pools).
// A Session also asks the JIT about each node (dtypes, constant parameters) before putting it in a
// region.
#include "jit/region_compiler.h"
#include "ops/op.h"

namespace sgraph::ops {

bool is_compilable(OpKind op) {
  return op_def(op).element != nullptr || jit::maps_indices(op) || jit::materialises(op);
}

}  // namespace sgraph::ops
