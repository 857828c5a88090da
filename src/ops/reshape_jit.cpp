// The lowering of the view ops (Identity, Reshape, Flatten, Squeeze, Unsqueeze): an output element
// is the input's element at the same row-major offset, so a view costs no memory traffic. When
// the shapes differ only in size-1 dims the index maps dim by dim (affine loads); otherwise the
// offset is split back into the input's index (div/mod), or loaded in place from a region input.
#include "ops/lowering.h"

namespace sgraph::ops {
namespace {

llvm::Value* generate_view(Emitter& e, const Node& n, const Index& idx) {
  const ValueId in = n.inputs[0];
  const Shape& out = e.shape(n.outputs[0]);
  SG_CHECK(numel(e.shape(in)) == numel(out))
      << node_str(n) << ": input shape " << shape_str(e.shape(in)) << " and output shape "
      << shape_str(out) << " differ in size";
  if (std::optional<Index> same = unit_dims_map(e, idx, out, e.shape(in)))
    return e.element(in, *same);
  return e.element_at_offset(in, e.offset_of(idx, out));
}

}  // namespace

extern const Lowering kViewLowering;
const Lowering kViewLowering{.generate = generate_view};

}  // namespace sgraph::ops
