// The small graphs the Session tests share: an MLP whose weight branch is kept apart from the
// batch-dependent ops by an op the JIT does not compile, and three regions of different code.
#pragma once

#include "test_util.h"

namespace sgraph::test {

// x[batch,4] -> MatMul(x, ReduceLogSumExp(Mul(Transpose(w), 2))) -> Add(b) -> Relu -> y. The weight
// branch (Transpose, Mul) only ever sees constant shapes; the ReduceLogSumExp (over no axes with
// noop_with_empty_axes, so an identity) is not compilable and keeps it apart from the
// batch-dependent region {fc, bias, y}.
inline Graph split_mlp() {
  GraphBuilder b("mlp");
  ValueId x = b.input("x", DType::f32, {Dim("batch"), 4});
  ValueId w = b.constant("w", random_f32({3, 4}, 1));
  ValueId wt = b.node(OpKind::Transpose, {w}, {}, 1, "w_t")[0];
  ValueId w2 = b.node(OpKind::Mul, {wt, b.scalar(2.0f)}, {}, 1, "w_scaled")[0];
  ValueId wr = b.node(OpKind::ReduceLogSumExp, {w2}, {{"noop_with_empty_axes", int64_t{1}}}, 1,
                      "w_opaque")[0];
  ValueId h = b.node(OpKind::MatMul, {x, wr}, {}, 1, "fc")[0];
  ValueId y = b.node(OpKind::Add, {h, b.constant("b", random_f32({3}, 2))}, {}, 1, "bias")[0];
  b.output(b.node(OpKind::Relu, {y}, {}, 1, "act")[0], "y");
  return b.build();
}

// `o` without constant folding: split_mlp's weight branch (over constants only) then stays ops of
// their own, the stable region the tests watch, instead of becoming a constant.
inline SessionOptions unfolded(SessionOptions o) {
  o.fold_constants = false;
  return o;
}

// An op the JIT does not compile (ReduceLogSumExp over no axes with noop_with_empty_axes: an
// identity),
// which keeps the regions on either side of it apart.
inline ValueId opaque(GraphBuilder& b, ValueId x, const std::string& name) {
  return b.node(OpKind::ReduceLogSumExp, {x}, {{"noop_with_empty_axes", int64_t{1}}}, 1, name)[0];
}

// Three regions of different code: Add+Relu | Mul+Tanh | Sub+Exp, with opaque ops between.
inline Graph three_regions() {
  GraphBuilder b("three");
  ValueId x = b.input("x", DType::f32, {4, 8});
  ValueId a = b.relu(b.add(x, b.constant("c1", random_f32({8}, 1))));
  ValueId m = b.tanh(b.mul(opaque(b, a, "cut1"), b.constant("c2", random_f32({8}, 2))));
  ValueId e = b.exp(b.sub(opaque(b, m, "cut2"), b.constant("c3", random_f32({8}, 3))));
  b.output(e, "y");
  return b.build();
}

// Runs `in` through `s` and through an interpreting Session of `g`, and checks the outputs agree.
inline void check_like_interpreter(Session& s, const Graph& g, const std::vector<Tensor>& in) {
  Session ref(g, SessionOptions{.interpret_only = true});
  const std::vector<Tensor> got = s.run(in), want = ref.run(in);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) check_tensors_close(got[i], want[i]);
}

}  // namespace sgraph::test
