// Gradient rules of the window ops (src/ops/window_grad.cpp): Conv (1-D, 2-D, 3-D; strides,
// pads, dilations, auto_pad, groups, bias), MaxPool, AveragePool and GlobalAveragePool against
// central finite differences in f64, with a symbolic batch; MaxPool's ties against a plain-loop
// "first maximum wins" gradient; the backward ops compiled by the JIT; and the cases a rule
// rejects.
#include <cmath>

#include "grad_check.h"

using namespace sgraph;
using namespace sgraph::test;

namespace test_autodiff_conv {  // this file's own names (the tests build as unity sources)

namespace {

constexpr int64_t kBatch = 5;  // the symbolic dim: no other dim of these tests has this size

Build op(OpKind kind, Attributes attrs = {}) {
  return [kind, attrs](GraphBuilder& b, const std::vector<ValueId>& in) {
    return b.node(kind, in, attrs).front();
  };
}

Check batch_symbolic(bool jit = false) { return {.symbolic_only = kBatch, .jit = jit}; }

struct ConvCase {
  Shape x, w;
  Attributes attrs;
  bool bias = false;
};

// The gradient of sum(MaxPool(x) * dy) with respect to x, by plain loops over 2-D windows: each
// window's first maximum in row-major tap order (positions outside x are skipped) gets dy.
Tensor max_pool_grad_2d(const Tensor& x, const Tensor& dy, const Ints& kernel, const Ints& strides,
                        const Ints& pads, const Ints& dilations) {
  const Shape& xs = x.shape();
  const Shape& ys = dy.shape();
  Tensor dx(DType::f64, xs);
  for (int64_t i = 0; i < dx.numel(); ++i) dx.data<double>()[i] = 0;
  const int64_t H = xs[2], W = xs[3];
  for (int64_t plane = 0; plane < xs[0] * xs[1]; ++plane)
    for (int64_t oh = 0; oh < ys[2]; ++oh)
      for (int64_t ow = 0; ow < ys[3]; ++ow) {
        int64_t arg = -1;
        double best = 0;
        for (int64_t kh = 0; kh < kernel[0]; ++kh)
          for (int64_t kw = 0; kw < kernel[1]; ++kw) {
            const int64_t h = oh * strides[0] - pads[0] + kh * dilations[0];
            const int64_t w = ow * strides[1] - pads[1] + kw * dilations[1];
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const double v = x.data<double>()[(plane * H + h) * W + w];
            if (arg < 0 || v > best) {
              best = v;
              arg = (plane * H + h) * W + w;
            }
          }
        if (arg >= 0)
          dx.data<double>()[arg] += dy.data<double>()[(plane * ys[2] + oh) * ys[3] + ow];
      }
  return dx;
}

// Integers in 0..2 with a third of them 0: many ties in every window.
Tensor ties(Shape shape, uint32_t seed) {
  Tensor t = uniform(std::move(shape), seed, 0, 3);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double& v = t.data<double>()[i];
    v = std::floor(v);
  }
  return t;
}

}  // namespace

TEST_CASE("autodiff: Conv 1-D and 2-D with strides, pads, dilations, auto_pad and bias") {
  const std::vector<ConvCase> cases = {
      {{kBatch, 2, 9}, {3, 2, 3}, {}, true},
      {{kBatch, 2, 8}, {3, 2, 3}, {{"strides", Ints{2}}}},  // the last input is never read
      {{kBatch, 3, 9}, {2, 3, 2}, {{"pads", Ints{1, 2}}, {"dilations", Ints{3}}}, true},
      {{kBatch, 1, 6}, {2, 1, 2}, {{"pads", Ints{4, 0}}}},  // pads wider than the kernel
      {{kBatch, 2, 6, 7}, {3, 2, 3, 3}, {{"pads", Ints{1, 1, 1, 1}}}, true},
      {{kBatch, 2, 7, 6},
       {4, 2, 3, 2},
       {{"strides", Ints{2, 3}}, {"pads", Ints{0, 1, 2, 0}}, {"dilations", Ints{1, 2}}},
       true},
      {{kBatch, 2, 6, 7}, {3, 2, 3, 3}, {{"auto_pad", "SAME_UPPER"}, {"strides", Ints{2, 2}}}},
      {{kBatch, 2, 6, 7}, {3, 2, 2, 2}, {{"auto_pad", "SAME_LOWER"}}, true},
      {{kBatch, 2, 6, 7}, {3, 2, 3, 2}, {{"auto_pad", "VALID"}, {"strides", Ints{3, 2}}}},
      {{kBatch, 1, 4, 3, 4}, {2, 1, 2, 2, 3}, {{"pads", Ints{1, 0, 1, 0, 1, 1}}}, true},  // 3-D
  };
  uint32_t seed = 1;
  for (const ConvCase& k : cases) {
    CAPTURE(shape_str(k.x));
    CAPTURE(shape_str(k.w));
    std::vector<Tensor> in = {uniform(k.x, seed++), uniform(k.w, seed++)};
    if (k.bias) in.push_back(uniform({k.w[0]}, seed++));
    check_gradients(in, op(OpKind::Conv, k.attrs), batch_symbolic());
  }
}

TEST_CASE("autodiff: grouped and depthwise Conv") {
  check_gradients({uniform({kBatch, 4, 7}, 1), uniform({6, 2, 3}, 2), uniform({6}, 3)},
                  op(OpKind::Conv, {{"group", int64_t{2}}, {"pads", Ints{1, 1}}}),
                  batch_symbolic());
  check_gradients({uniform({kBatch, 3, 6, 7}, 4), uniform({6, 1, 3, 3}, 5)},
                  op(OpKind::Conv, {{"group", int64_t{3}},
                                    {"strides", Ints{2, 1}},
                                    {"dilations", Ints{1, 2}},
                                    {"pads", Ints{1, 0, 0, 1}}}),
                  batch_symbolic());
}

TEST_CASE("autodiff: Conv's backward pass compiles, the dW and dX Convs in regions") {
  check_gradients({uniform({kBatch, 2, 6, 7}, 1), uniform({3, 2, 3, 3}, 2), uniform({3}, 3)},
                  op(OpKind::Conv, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 1}}}),
                  batch_symbolic(/*jit=*/true));
  // The same step compiled: every Conv the rule made lands in a compiled region.
  const std::vector<Tensor> in = {uniform({kBatch, 2, 6, 7}, 1), uniform({3, 2, 3, 3}, 2)};
  const Tensor r = uniform({kBatch, 3, 6, 7}, 4);
  Session s(loss_graph(in, op(OpKind::Conv, {{"pads", Ints{1, 1, 1, 1}}}), r, false, {true, true}),
            SessionOptions{.warmup_runs = 1});
  std::vector<Tensor> feed = in;
  feed.push_back(r);
  s.run(feed);
  s.run(feed);
  const Report rep = s.report();
  int convs = 0;
  for (const OpReport& o : rep.ops)
    if (o.op == OpKind::Conv) {
      CAPTURE(o.node);
      CHECK(o.region >= 0);
      ++convs;
    }
  CHECK(convs == 3);  // the forward one, dX and dW
  for (const RegionReport& reg : rep.regions) CHECK_MESSAGE(reg.compiled, reg.why_interpreted);
}

TEST_CASE("autodiff: MaxPool with overlapping windows, strides, pads, dilations, ceil_mode") {
  const std::vector<std::pair<Shape, Attributes>> cases = {
      {{kBatch, 2, 9}, {{"kernel_shape", Ints{3}}, {"strides", Ints{2}}}},
      {{kBatch, 2, 8}, {{"kernel_shape", Ints{3}}, {"pads", Ints{1, 2}}, {"dilations", Ints{2}}}},
      {{kBatch, 2, 6, 7}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}},
      {{kBatch, 2, 6, 7},
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}},
      {{kBatch, 1, 7, 6},
       {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}}},
      {{kBatch, 1, 6, 7}, {{"kernel_shape", Ints{2, 3}}, {"auto_pad", "SAME_UPPER"}}},
  };
  uint32_t seed = 1;
  for (const auto& [x, attrs] : cases) {
    CAPTURE(shape_str(x));
    check_gradients({uniform(x, seed++)}, op(OpKind::MaxPool, attrs), batch_symbolic());
  }
  // Compiled, with the Indices output present (it gets no gradient).
  const Build with_indices = [](GraphBuilder& b, const std::vector<ValueId>& in) {
    return b.node(
        OpKind::MaxPool, in,
        {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}, 2)[0];
  };
  check_gradients({uniform({kBatch, 2, 6, 7}, 9)}, with_indices, batch_symbolic(/*jit=*/true));
}

TEST_CASE("autodiff: MaxPool with ties gives each window's first maximum the gradient") {
  struct Case {
    Shape x;
    Ints kernel, strides, pads, dilations;  // pads: begin only, ends follow
    Ints end_pads;
  };
  const std::vector<Case> cases = {
      {{2, 2, 6, 7}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, {0, 0}},
      {{2, 2, 6, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},  // every input in 9 windows
      {{2, 1, 7, 6}, {3, 2}, {2, 1}, {1, 0}, {1, 2}, {0, 1}},
  };
  uint32_t seed = 1;
  for (const Case& k : cases) {
    CAPTURE(shape_str(k.x));
    Ints pads = k.pads;
    pads.insert(pads.end(), k.end_pads.begin(), k.end_pads.end());
    const Attributes attrs{{"kernel_shape", k.kernel},
                           {"strides", k.strides},
                           {"pads", pads},
                           {"dilations", k.dilations}};
    const Tensor x = ties(k.x, seed++);
    GraphBuilder fb("forward");
    fb.output(fb.max_pool(fb.input("x", DType::f64, to_dims(k.x)), attrs));
    const Shape ys = Session(fb.build()).run({x})[0].shape();
    const Tensor dy = uniform(ys, seed++);
    const Tensor want = max_pool_grad_2d(x, dy, k.kernel, k.strides, k.pads, k.dilations);
    for (bool jit : {false, true}) {
      CAPTURE(jit);
      Session s(loss_graph({x}, op(OpKind::MaxPool, attrs), dy, false, {true}),
                jit ? SessionOptions{.warmup_runs = 1} : SessionOptions{.interpret_only = true});
      const std::vector<Tensor> feed = {x, dy};
      s.run(feed);
      check_close(s.run(feed)[1], k.x, values(want), 1e-12, 1e-12);  // up to summation order
      if (jit) {
        const Report rep = s.report();
        CHECK(std::all_of(rep.regions.begin(), rep.regions.end(),
                          [](const RegionReport& reg) { return reg.compiled; }));
        CHECK(!rep.regions.empty());
      }
    }
  }
}

TEST_CASE("autodiff: AveragePool with and without count_include_pad, GlobalAveragePool") {
  for (int64_t include : {0, 1}) {
    CAPTURE(include);
    check_gradients(
        {uniform({kBatch, 2, 8}, 1)},
        op(OpKind::AveragePool,
           {{"kernel_shape", Ints{3}}, {"pads", Ints{2, 1}}, {"count_include_pad", include}}),
        batch_symbolic());
    check_gradients({uniform({kBatch, 2, 6, 7}, 2)},
                    op(OpKind::AveragePool, {{"kernel_shape", Ints{3, 2}},
                                             {"strides", Ints{2, 2}},
                                             {"pads", Ints{1, 0, 1, 1}},
                                             {"ceil_mode", int64_t{1}},
                                             {"count_include_pad", include}}),
                    batch_symbolic(/*jit=*/include == 1));
  }
  check_gradients({uniform({kBatch, 3, 4, 6}, 3)}, op(OpKind::GlobalAveragePool));  // all symbolic
  check_gradients({uniform({kBatch, 2, 7}, 4)}, op(OpKind::GlobalAveragePool), {.jit = true});
}

TEST_CASE("autodiff: a small CNN (Conv, Relu, MaxPool, Conv, GlobalAveragePool) end to end") {
  const Build cnn = [](GraphBuilder& b, const std::vector<ValueId>& in) {
    const ValueId h = b.relu(b.conv(in[0], in[1], in[2], Attributes{{"pads", Ints{1, 1, 1, 1}}}));
    const ValueId p =
        b.max_pool(h, Attributes{{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
    return b.global_average_pool(b.conv(p, in[3], Attributes{{"group", int64_t{2}}}));
  };
  check_gradients({uniform({kBatch, 1, 6, 8}, 1), uniform({4, 1, 3, 3}, 2), uniform({4}, 3),
                   uniform({2, 2, 2, 2}, 4)},
                  cnn, batch_symbolic(/*jit=*/true));
}

TEST_CASE("autodiff: window ops whose spatial dims are not static cannot be differentiated") {
  GraphBuilder b("errors");
  const ValueId x = b.input("x", DType::f32, {Dim("n"), 2, Dim("h"), 6});
  const ValueId w = b.constant("w", Tensor(DType::f32, {3, 2, 3, 3}));
  const ValueId y = b.node(OpKind::Conv, {x, w}, {}, 1, "conv1")[0];
  const ValueId p = b.node(OpKind::MaxPool, {x}, {{"kernel_shape", Ints{2, 2}}}, 1, "pool1")[0];
  const Attributes all{{"keepdims", int64_t{0}}};
  CHECK(contains(error_of([&] { append_gradients(b, b.reduce_sum(y, all), {w}); }),
                 "node 'conv1' (Conv): cannot differentiate: the spatial dims of X [n,2,h,6] "
                 "must be static"));
  CHECK(contains(error_of([&] { append_gradients(b, b.reduce_sum(p, all), {x}); }),
                 "node 'pool1' (MaxPool): cannot differentiate: the spatial dims of X"));
  // A batch that varies is fine.
  const ValueId xb = b.input("xb", DType::f32, {Dim("n"), 2, 6, 6});
  const ValueId yb = b.conv(xb, w);
  CHECK(append_gradients(b, b.reduce_sum(yb, all), {w, xb}).size() == 2);
}

}  // namespace test_autodiff_conv
