// Which ops a region may hold: those the JIT can generate elements of — an op with an element
// emitter (OpDef::element, in the op's own file) or an index op the region compiler maps itself
// (views, Transpose, Expand), or a reduction it materialises into a kernel-local buffer
// (ReduceSum/Mean/Max, Softmax, LogSoftmax). Nothing else decides it.
#include "jit/region_compiler.h"
#include "ops/op.h"

namespace sgraph::ops {

bool is_compilable(OpKind op) {
  return op_def(op).element != nullptr || jit::maps_indices(op) || jit::materialises(op);
}

}  // namespace sgraph::ops
