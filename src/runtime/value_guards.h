// Value guards: which of a region's inputs its shapes depend on by value, not just by shape.
//
// A region kernel is specialised on every shape inside the region. Most ops' output shapes follow
// from their inputs' shapes, so the region's shape guard (its inputs' shapes) covers them; a few
// read an input's *values* (Reshape's and Expand's shape operand, Squeeze/Unsqueeze axes, Slice
// and Pad parameters, reduction axes, Range, ...). When such an operand is a constant, its values
// are in the emitted code (and so in the kernel's key, see jit.h); when it is not, the region's
// guard must also check its values, or a call whose shape vector changed (Shape(x) -> Reshape)
// would run the kernel of the old shapes and return a tensor of the wrong shape.
//
// Which inputs a shape rule reads is the rule's own answer (ops::ShapeCtx::values_read), so no
// list of "shape operands" has to be kept in step with the ops. A value made inside the region
// is followed back to the region inputs it is computed from; each of those is guarded by value.
// The walk stops at a value made from shapes alone (Shape(x) in the region): the shape guard
// covers it.
//
//   ValueGuards vg = value_guards(g, region, shapes, tracker.small_values());
//   if (!vg.why_not.empty()) -> leave the region interpreted (a value that cannot be guarded)
//   plan.value_guards = vg.guards;
//
// A dynamic region cannot guard a value as the one recorded (it changes with the symbols): the
// Session follows the operands it knows (a Reshape's, Expand's or ConstantOfShape's shape, a
// Slice's ends, a Range's scalars) as forms of the symbols instead, guarding a region input's
// elements as such forms (RegionPlan::value_sym_guards) and deriving those of a value the region
// computes from its shapes (ops::symbolic_value), from `reads`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/region_builder.h"
#include "sgraph/graph.h"

namespace sgraph {

struct ValueGuards {
  // (index into Region::inputs, the values planned with): the input must hold exactly these.
  std::vector<std::pair<size_t, Tensor>> guards;
  // Non-empty when the region's shapes depend on values that cannot be guarded (not recorded, or
  // too large to compare on every call): then the region must not be compiled.
  std::string why_not;
  // Every (node index, input slot) of the region whose value a shape rule reads.
  std::vector<std::pair<int32_t, size_t>> reads;
  // Whether such a value is computed in the region from its shapes (Shape, Size: OpDef::
  // value_of_shapes), which the shape guard fixes (a static region) or gives as forms of the
  // symbols (a dynamic one: the planner follows it, ops::symbolic_value).
  bool of_shapes = false;
};

// `shapes` per value id (as planned), `values` per value id (the recorded small values; undefined
// when not recorded).
ValueGuards value_guards(const Graph& g, const Region& r, const std::vector<Shape>& shapes,
                         const std::vector<Tensor>& values);

}  // namespace sgraph
