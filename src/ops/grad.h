// src/ops/grad.h — what a gradient rule (OpDef::grad) sees, and the helpers rules share.
//
// Reverse-mode differentiation (src/runtime/autodiff.cpp) calls an op's rule once for each node
// between the parameters and the loss, last node first. The rule appends ops computing the
// gradient of each wanted input from the gradients flowing into the node's outputs, and sets it:
//
//   void grad_tanh(GradCtx& c) {  // dx = dy * (1 - y * y)
//     const ValueId y = c.out(0);
//     c.set(0, c.b.mul(c.dout(0), c.b.sub(c.scalar(1, y), c.b.mul(y, y))));
//   }
//
// Backward graphs are made of the same primitive ops as forward ones (no opaque "XGrad" kernels),
// so the JIT fuses them alike. Shapes may be symbolic (a batch dim): a rule decides from ranks and
// static dims only, and uses shape-agnostic ops (Shape, Size, Squeeze/Unsqueeze with axes) for
// the rest, so the backward graph accepts every batch size the forward one does.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph::ops {

struct GradCtx {
  GraphBuilder& b;                  // appends the backward ops to the graph being differentiated
  const Node& node;                 // the forward node (not a reference into the growing graph)
  std::span<const ValueId> douts;   // per output: the gradient flowing in, kNoValue when none
  const std::vector<bool>& wanted;  // per input: whether the loss needs its gradient
  std::vector<ValueId>& dins;       // per input: what the rule sets (kNoValue: no gradient)

  ValueId in(size_t i) const { return node.inputs[i]; }
  ValueId out(size_t i) const { return node.outputs[i]; }
  bool has_in(size_t i) const { return i < node.inputs.size() && node.inputs[i] != kNoValue; }
  // The gradient flowing into output i; kNoValue when none does (only a multi-output op can see
  // that for some output: its rule then skips that output's term).
  ValueId dout(size_t i) const { return douts[i]; }
  bool has_dout(size_t i) const { return i < douts.size() && douts[i] != kNoValue; }
  bool wants(size_t i) const { return i < wanted.size() && wanted[i]; }
  // Sets input i's gradient (dropped when the loss does not need it).
  void set(size_t i, ValueId grad) {
    if (wants(i)) dins[i] = grad;
  }
  const Attributes& attrs() const { return node.attrs; }

  DType dtype(ValueId v) const { return b.graph().values.at(v).dtype; }
  // The declared or inferred dims of v (static, symbolic or unknown sizes); throws naming the
  // value when its rank is unknown, which no rule can work with.
  DimList dims(ValueId v) const;
  int64_t rank(ValueId v) const { return static_cast<int64_t>(dims(v).size()); }
  // v's shape when every dim is static.
  std::optional<Shape> static_shape(ValueId v) const;

  // A scalar constant of value `like`'s dtype.
  ValueId scalar(double x, ValueId like) { return scalar(x, dtype(like)); }
  ValueId scalar(double x, DType t);
  ValueId ints(const Ints& v) { return b.ints(v); }
  // v's shape as a 1-D i64 value: a constant when static, else Shape(v).
  ValueId shape_of(ValueId v);
  // `v`, recorded to have x's dims where inference could not tell (an op shaped by Shape(x)).
  ValueId with_dims_of(ValueId v, ValueId x);
  // numel(big) / numel(small) as a scalar of `big`'s dtype: a constant when both are static,
  // else computed from Size at run time.
  ValueId count_ratio(ValueId big, ValueId small);
  // `grad` (the gradient of a broadcast result) summed back to the shape of operand `like`:
  // ReduceSum over the leading dims `like` lacks and over the dims where `like` has a static 1
  // and the result does not, then Squeeze of the leading ones. A symbolic or unknown dim of
  // `like` is taken not to be broadcast.
  ValueId sum_to(ValueId grad, ValueId like);
  // `grad` (the gradient of a reduction over `axes`, normalised, with the reduced dims kept or
  // not) broadcast back to the shape of the reduction's input `x`.
  ValueId expand_to(ValueId grad, ValueId x, const Ints& axes, bool keepdims);
};

}  // namespace sgraph::ops
