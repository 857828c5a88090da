// Reverse-mode differentiation: every gradient rule against central finite differences in f64,
// on static and symbolic shapes (broadcast operands, scalars, size-1 dims, several axes), the
// backward graph compiled by the JIT against the interpreter, and the user errors.
#include "grad_check.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// f = one node of `op` over all inputs.
Build op(OpKind kind, Attributes attrs = {}) {
  return [kind, attrs](GraphBuilder& b, const std::vector<ValueId>& in) {
    return b.node(kind, in, attrs).front();
  };
}

Attributes reduce_attrs(Ints axes, int64_t keepdims) {
  Attributes a{{"keepdims", keepdims}};
  if (!axes.empty()) a.set("axes", std::move(axes));
  return a;
}

}  // namespace

TEST_CASE("autodiff: Add, Sub, Mul, Div with broadcasting, scalars and size-1 dims") {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 1, 4}, {2, 3, 5, 4}}, {{2, 3}, {}},     {{}, {2, 3}},
      {{2, 1}, {1, 3}},          {{2, 3}, {2, 3}}, {{1}, {4}}};
  uint32_t seed = 1;
  for (OpKind kind : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div}) {
    for (const auto& [a, b] : shapes) {
      CAPTURE(op_name(kind));
      CAPTURE(shape_str(a));
      CAPTURE(shape_str(b));
      const bool div = kind == OpKind::Div;
      check_gradients({uniform(a, seed++), uniform(b, seed++, div ? 0.5 : -1, 1.5, div)}, op(kind));
    }
  }
}

TEST_CASE("autodiff: Sum, Mean (variadic) and Where") {
  check_gradients({uniform({2, 3}, 1), uniform({3}, 2), uniform({2, 1}, 3)}, op(OpKind::Sum));
  check_gradients({uniform({2, 3}, 4), uniform({1, 3}, 5)}, op(OpKind::Mean));
  const Tensor cond = Tensor::from<bool>(
      {3, 4}, {true, false, true, true, false, false, true, false, true, true, false, true});
  check_gradients({cond, uniform({3, 1}, 6), uniform({1, 4}, 7)}, op(OpKind::Where));
  check_gradients({cond, uniform({3, 4}, 8), uniform({}, 9)}, op(OpKind::Where));
}

TEST_CASE("autodiff: unary ops") {
  check_gradients({uniform({2, 3}, 1)}, op(OpKind::Neg));
  check_gradients({uniform({3, 4}, 2, 0.1, 1, true)}, op(OpKind::Relu));
  check_gradients({uniform({3, 4}, 3, -3, 3)}, op(OpKind::Sigmoid));
  check_gradients({uniform({3, 4}, 4, -2, 2)}, op(OpKind::Tanh));
  check_gradients({uniform({3, 4}, 5)}, op(OpKind::Exp));
  check_gradients({uniform({3, 4}, 6, 0.5, 2)}, op(OpKind::Log));
  check_gradients({uniform({3, 4}, 7, 0.5, 2)}, op(OpKind::Sqrt));
  check_gradients({uniform({2, 3}, 8)}, op(OpKind::Identity));
  check_gradients({uniform({2, 3}, 9)}, op(OpKind::Cast, {{"to", int64_t{11}}}));  // f64 -> f64
  // f64 -> f32 -> f64: the f32 rounding limits the differences' precision.
  const Build round_trip = [](GraphBuilder& b, const std::vector<ValueId>& in) {
    const ValueId x32 = b.cast(in[0], Attributes{{"to", int64_t{1}}});
    return b.cast(b.mul(x32, x32), Attributes{{"to", int64_t{11}}});
  };
  check_gradients({uniform({2, 3}, 10)}, round_trip, {.h = 1e-2, .tol = 1e-3});
}

TEST_CASE("autodiff: Softmax and LogSoftmax along every axis") {
  for (OpKind kind : {OpKind::Softmax, OpKind::LogSoftmax})
    for (int64_t axis : {0, 1, 2, -1}) {
      CAPTURE(op_name(kind));
      CAPTURE(axis);
      check_gradients({uniform({2, 3, 4}, 1 + static_cast<uint32_t>(axis + 1), -2, 2)},
                      op(kind, {{"axis", axis}}));
    }
}

TEST_CASE("autodiff: ReduceSum and ReduceMean over axes, keepdims or not, axes as input") {
  const std::vector<Ints> axes = {{1}, {0, 2}, {-1}, {}};
  uint32_t seed = 1;
  for (OpKind kind : {OpKind::ReduceSum, OpKind::ReduceMean})
    for (const Ints& a : axes)
      for (int64_t keep : {0, 1}) {
        CAPTURE(op_name(kind));
        CAPTURE(shape_str(a));
        CAPTURE(keep);
        check_gradients({uniform({2, 3, 4}, seed++)}, op(kind, reduce_attrs(a, keep)));
      }
  const Build axes_input = [](GraphBuilder& b, const std::vector<ValueId>& in) {
    return b.reduce_mean(in[0], b.ints({0}), Attributes{{"keepdims", int64_t{0}}});
  };
  check_gradients({uniform({3, 2}, 50)}, axes_input);
  const Build noop = [](GraphBuilder& b, const std::vector<ValueId>& in) {
    return b.reduce_sum(in[0], Attributes{{"noop_with_empty_axes", int64_t{1}}});
  };
  check_gradients({uniform({3, 2}, 51)}, noop);
}

TEST_CASE("autodiff: views and Transpose") {
  const Build reshape = [](GraphBuilder& b, const std::vector<ValueId>& in) {
    return b.reshape(in[0], b.ints({-1, 4}));
  };
  // Merged symbolic dims are unknown to shape inference: these two are checked with static dims.
  check_gradients({uniform({2, 3, 4}, 1)}, reshape, {.symbolic = false});
  check_gradients({uniform({2, 3, 4}, 2)}, op(OpKind::Flatten, {{"axis", int64_t{2}}}),
                  {.symbolic = false});
  const Build squeeze = [](GraphBuilder& b, const std::vector<ValueId>& in) {
    return b.squeeze(in[0], b.ints({1}));
  };
  check_gradients({uniform({2, 1, 3}, 3)}, squeeze);
  check_gradients({uniform({2, 1, 3, 1}, 4)}, op(OpKind::Squeeze));
  const Build unsqueeze = [](GraphBuilder& b, const std::vector<ValueId>& in) {
    return b.unsqueeze(in[0], b.ints({0, 3}));
  };
  check_gradients({uniform({2, 3}, 5)}, unsqueeze);
  check_gradients({uniform({2, 3, 4}, 6)}, op(OpKind::Transpose, {{"perm", Ints{2, 0, 1}}}));
  check_gradients({uniform({2, 3}, 7)}, op(OpKind::Transpose));
}

TEST_CASE("autodiff: MatMul, 2-D, batched, broadcast and 1-D operands") {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4}, {4, 5}},   {{2, 3, 4}, {4, 5}}, {{4}, {4, 5}},    {{3, 4}, {4}},
      {{4}, {4}},         {{4}, {2, 4, 5}},    {{2, 3, 4}, {4}}, {{2, 1, 3, 4}, {3, 4, 5}},
      {{1, 4}, {2, 4, 3}}};
  uint32_t seed = 1;
  for (const auto& [a, b] : shapes) {
    CAPTURE(shape_str(a));
    CAPTURE(shape_str(b));
    check_gradients({uniform(a, seed++), uniform(b, seed++)}, op(OpKind::MatMul));
  }
}

TEST_CASE("autodiff: Gemm with every transA/transB, alpha, beta and C shapes") {
  uint32_t seed = 1;
  for (int64_t ta : {0, 1})
    for (int64_t tb : {0, 1}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const Shape a = ta ? Shape{4, 3} : Shape{3, 4}, b = tb ? Shape{5, 4} : Shape{4, 5};
      const Attributes attrs{{"transA", ta}, {"transB", tb}, {"alpha", 0.5}, {"beta", 2.0}};
      for (const Shape& c : {Shape{5}, Shape{3, 1}, Shape{3, 5}, Shape{}}) {
        CAPTURE(shape_str(c));
        check_gradients({uniform(a, seed++), uniform(b, seed++), uniform(c, seed++)},
                        op(OpKind::Gemm, attrs));
      }
      check_gradients({uniform(a, seed++), uniform(b, seed++)},
                      op(OpKind::Gemm, {{"transA", ta}, {"transB", tb}}));
    }
}

TEST_CASE("autodiff: a value read by several nodes sums its gradients, and an MLP compiles") {
  // x feeds Mul, Exp and the second Add: three contributions.
  const Build shared = [](GraphBuilder& b, const std::vector<ValueId>& in) {
    const ValueId x = in[0];
    return b.add(b.mul(x, b.exp(x)), x);
  };
  check_gradients({uniform({3, 4}, 1)}, shared, {.jit = true});
  // A two-layer MLP with a mean loss over the batch: its backward graph through the JIT.
  const Build mlp = [](GraphBuilder& b, const std::vector<ValueId>& in) {
    const ValueId h = b.tanh(b.add(b.matmul(in[0], in[1]), in[2]));
    return b.softmax(b.gemm(h, in[3], in[4], Attributes{{"transB", int64_t{1}}}));
  };
  check_gradients({uniform({6, 4}, 2), uniform({4, 8}, 3), uniform({8}, 4), uniform({3, 8}, 5),
                   uniform({3}, 6)},
                  mlp, {.jit = true});
}

TEST_CASE("autodiff: only nodes between the parameters and the loss are differentiated") {
  // ArgMax (no rule) feeds only an integer path; Erf (no rule) is not on the way to w.
  GraphBuilder b("paths");
  const ValueId x = b.input("x", DType::f64, {2, 3});
  const ValueId w = b.input("w", DType::f64, {3});
  const ValueId y = b.mul(b.erf(x), w);
  const ValueId idx = b.arg_max(y, Attributes{{"axis", int64_t{1}}});
  const ValueId picked = b.cast(idx, Attributes{{"to", int64_t{11}}});
  const ValueId loss = b.reduce_sum(b.add(y, picked), Attributes{{"keepdims", int64_t{0}}});
  const std::vector<ValueId> g = append_gradients(b, loss, {w});
  b.output(g[0], "dw");
  Session s(b.build(), SessionOptions{.interpret_only = true});
  const Tensor xv = uniform({2, 3}, 1), wv = uniform({3}, 2);
  const Tensor dw = s.run(std::vector<Tensor>{xv, wv})[0];
  for (int64_t j = 0; j < 3; ++j)  // d/dw_j sum_i erf(x_ij) w_j = sum_i erf(x_ij)
    CHECK(
        dw.at_double(j) ==
        doctest::Approx(std::erf(xv.at_double(j)) + std::erf(xv.at_double(3 + j))).epsilon(1e-12));
}

TEST_CASE("autodiff: user errors") {
  GraphBuilder b("errors");
  const ValueId x = b.input("x", DType::f32, {2, 3});
  const ValueId w = b.constant("w", random_f32({2, 3}, 1));
  const ValueId unused = b.constant("unused", random_f32({3}, 2));
  const ValueId y = b.node(OpKind::Erf, {b.mul(x, w)}, {}, 1, "gate")[0];
  const ValueId loss = b.reduce_sum(y, Attributes{{"keepdims", int64_t{0}}});
  CHECK(error_of([&] { append_gradients(b, loss, {w}); }) ==
        "node 'gate' (Erf): cannot differentiate: Erf has no gradient rule (it lies between the "
        "parameters and loss 'reducesum_0')");
  const ValueId loss2 = b.reduce_sum(b.mul(x, w), Attributes{{"keepdims", int64_t{0}}});
  CHECK(contains(error_of([&] { append_gradients(b, loss2, {unused}); }),
                 "does not depend on 'unused'"));
  CHECK(contains(error_of([&] { append_gradients(b, b.mul(x, w), {w}); }),
                 "must have one element, but its shape is [2,3]"));
  const ValueId labels = b.input("labels", DType::i64, {2});
  CHECK(contains(error_of([&] { append_gradients(b, loss2, {labels}); }),
                 "cannot differentiate with respect to 'labels': it is i64, not float"));
  CHECK(contains(error_of([&] { append_gradients(b, labels, {w}); }), "must be a float value"));
  // A reduction whose axes are computed cannot be differentiated.
  const ValueId axes =
      b.cast(b.constant("axes_f", Tensor::from<float>({1}, {1})), Attributes{{"to", int64_t{7}}});
  const ValueId r = b.reduce_sum(b.mul(x, w), axes, Attributes{{"keepdims", int64_t{0}}});
  const ValueId loss3 = b.reduce_sum(r, Attributes{{"keepdims", int64_t{0}}});
  b.graph().values[loss3].shape = DimList{};  // a scalar, which inference cannot tell here
  CHECK(contains(
      error_of([&] { append_gradients(b, loss3, {w}); }),
      "cannot differentiate: the rank of value '" + b.graph().values[r].name + "' is unknown"));
  b.graph().values[r].shape = DimList{2};
  CHECK(contains(error_of([&] { append_gradients(b, loss3, {w}); }),
                 "cannot differentiate: the axes input is not a constant"));
}

TEST_CASE("GraphBuilder continues a graph: generated names skip the names it has") {
  GraphBuilder first("g");
  const ValueId x = first.input("x", DType::f32, {2});
  first.output(first.add(x, first.scalar(1.0f)));  // node and value "add_0", constant "const_0"
  GraphBuilder more(first.build());
  const ValueId y = more.add(x, more.scalar(2.0f));
  CHECK(more.graph().values[y].name == "add_1");
  CHECK(more.graph().values[more.graph().nodes[1].inputs[1]].name == "const_1");
  more.name_prefix("p/");
  CHECK(more.graph().values[more.neg(y)].name == "p/neg_0");
  more.output(y);
  CHECK(more.build().nodes.size() == 3);
}
