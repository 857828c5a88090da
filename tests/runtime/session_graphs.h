// The small graph the Session tests share: an MLP whose weight branch is kept apart from the
// batch-dependent ops by an op the JIT does not compile.
#pragma once

#include "test_util.h"

namespace sgraph::test {

// x[batch,4] -> MatMul(x, ReduceMin(Mul(Transpose(w), 2))) -> Add(b) -> Relu -> y. The weight
// branch (Transpose, Mul) only ever sees constant shapes; the ReduceMin (over no axes with
// noop_with_empty_axes, so an identity) is not compilable and keeps it apart from the
// batch-dependent region {fc, bias, y}.
inline Graph split_mlp() {
  GraphBuilder b("mlp");
  ValueId x = b.input("x", DType::f32, {Dim("batch"), 4});
  ValueId w = b.constant("w", random_f32({3, 4}, 1));
  ValueId wt = b.node(OpKind::Transpose, {w}, {}, 1, "w_t")[0];
  ValueId w2 = b.node(OpKind::Mul, {wt, b.scalar(2.0f)}, {}, 1, "w_scaled")[0];
  ValueId wr =
      b.node(OpKind::ReduceMin, {w2}, {{"noop_with_empty_axes", int64_t{1}}}, 1, "w_opaque")[0];
  ValueId h = b.node(OpKind::MatMul, {x, wr}, {}, 1, "fc")[0];
  ValueId y = b.node(OpKind::Add, {h, b.constant("b", random_f32({3}, 2))}, {}, 1, "bias")[0];
  b.output(b.node(OpKind::Relu, {y}, {}, 1, "act")[0], "y");
  return b.build();
}

}  // namespace sgraph::test
