// LayerNormalization inside regions: row mean and inverse standard deviation materialised, the
// normalisation fused with its producers and consumers; compared with the interpreter.

#include "jit/region_test_util.h"

using namespace sgraph;
using namespace sgraph::test::region;

TEST_CASE("JIT LayerNormalization: axes, scale/bias broadcasts, producers and consumers") {
  struct Case {
    Shape x;
    int64_t axis;
    Shape scale;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{7}, 0, {7}, true},           {{1, 1}, -1, {1}, false},
      {{3, 1023}, -1, {1023}, true}, {{2, 7, 5}, 1, {7, 5}, true},
      {{2, 7, 5}, -1, {1}, true},    {{2, 7, 5}, 0, {2, 7, 5}, false},
      {{4, 1, 3}, 1, {1, 3}, true},  {{64, 1024}, -1, {1024}, true},
      {{2, 3, 4}, -2, {4}, true},
  };
  uint32_t seed = 40;
  for (const Case& c : cases) {
    INFO(shape_str(c.x) << " axis " << c.axis << " scale " << shape_str(c.scale));
    const Tensor x = test::random_f32(c.x, seed++, -3, 5);
    const Tensor scale = test::random_f32(c.scale, seed++, 0.5, 2);
    const Tensor bias = test::random_f32(c.scale, seed++);
    for (bool chain : {false, true}) {
      GraphBuilder b;
      ValueId v = b.input("x", DType::f32, to_dims(c.x));
      if (chain) v = b.add(b.mul(v, b.scalar(2.0f)), b.scalar(1.0f));
      std::vector<ValueId> in = {v, b.constant("scale", scale)};
      if (c.bias) in.push_back(b.constant("bias", bias));
      ValueId y =
          b.node(OpKind::LayerNormalization, in, {{"axis", c.axis}, {"epsilon", 1e-3}}).front();
      if (chain) y = b.tanh(y);
      b.output(y);
      check_region(b.build(), {x}, 1e-4, 1e-5, chain ? 2 : 1);
    }
  }
}

TEST_CASE("JIT LayerNormalization row by row: a region output read back, empty rows, threads") {
  // Rows innermost: the outputs made row by row into the region's output buffer, which a
  // consumer then reads; no rows, and rows of no elements.
  for (int threads : {1, 3})
    for (const Shape& s : {Shape{6, 40}, Shape{3, 0}, Shape{0, 5}, Shape{2, 1, 300}}) {
      INFO(shape_str(s) << ", threads " << threads);
      GraphBuilder b;
      const ValueId x = b.input("x", DType::f32, to_dims(s));
      const Shape row = {s.back()};
      const ValueId y = b.node(OpKind::LayerNormalization,
                               {b.exp(x), b.constant("scale", test::random_f32(row, 2, 0.5, 2)),
                                b.constant("bias", test::random_f32(row, 3))},
                               {{"axis", int64_t{-1}}})
                            .front();
      b.output(y);
      b.output(b.mul(y, b.add(y, b.scalar(1.0f))));
      check_region(b.build(), {test::random_f32(s, 1, -2, 2)}, 1e-4, 1e-5, threads);
    }
}

TEST_CASE("JIT LayerNormalization: f64, and integer input is refused with the reason") {
  {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f64, {5, 33});
    const ValueId y = b.node(OpKind::LayerNormalization,
                             {x, b.constant("s", random_of(DType::f64, {33}, 2, 0.5, 2))}, {})
                          .front();
    b.output(b.add(y, x));
    check_region(b.build(), {random_of(DType::f64, {5, 33}, 1, -2, 2)}, 1e-12, 1e-12);
  }
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {2, 4});
  const ValueId y =
      b.node(OpKind::LayerNormalization, {x, b.constant("s", test::random_f32({4}, 3))}, {}, 3)
          .front();
  b.output(b.relu(y));
  const Graph g = b.build();
  CHECK(test::contains(why_not_compilable(g, whole_graph(g)), "several outputs"));
}

namespace {

// A pre-norm residual stack of `blocks` blocks, x += LayerNorm(x) W_i + b_i, then a last
// LayerNormalization: the shape of a transformer's residual stream.
Graph residual_stack(int blocks) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {2, 5, 16});
  const Tensor scale = test::random_f32({16}, 1, 0.5, 2), bias = test::random_f32({16}, 2);
  const Attributes ln = {{"axis", int64_t{-1}}, {"epsilon", 1e-5}};
  for (int i = 0; i < blocks; ++i) {
    const std::string p = "b" + std::to_string(i) + ".";
    const ValueId h =
        b.layer_normalization(x, b.constant(p + "g", scale), b.constant(p + "b", bias), ln);
    const ValueId w = b.constant(p + "w", test::random_f32({16, 16}, 10 + i, -0.3, 0.3));
    x = b.add(x, b.add(b.matmul(h, w), b.constant(p + "bias", test::random_f32({16}, 30 + i))));
  }
  b.output(b.tanh(b.layer_normalization(x, b.constant("g", scale), ln)));
  return b.build();
}

// The f32 adds in the kernel's IR as emitted (SGRAPH_DUMP_IR, before LLVM's passes).
int64_t emitted_fadds(const Graph& g, const Tensor& x) {
  IrDumpingJit dumping;
  const RegionRun run = run_region(g, {x}, dumping.jit());
  test::check_tensors_close(run.got[0], run.want[0], 1e-4, 1e-5);
  int64_t adds = 0;
  for (const std::string& ir : dumping.emitted()) adds += occurrences(ir, "fadd float");
  return adds;
}

}  // namespace

TEST_CASE("JIT residual stream: each block's sum is computed once, not again in every later nest") {
  // Made inline, block i's residual sum is made again by every later block's LayerNormalization
  // nests (statistics, and the normalised GEMM operand) from the input on: the emitted adds grow
  // with the square of the blocks. Shared (KernelBuilder::shared_values), each sum is stored once
  // and read back: every further block adds the same code.
  const Tensor x = test::random_f32({2, 5, 16}, 7, -2, 2);
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    check_region(residual_stack(4), {x}, 1e-4, 1e-5, threads);
  }
  const int64_t a3 = emitted_fadds(residual_stack(3), x), a5 = emitted_fadds(residual_stack(5), x),
                a7 = emitted_fadds(residual_stack(7), x);
  INFO("f32 adds emitted at 3, 5, 7 blocks: " << a3 << ", " << a5 << ", " << a7);
  // (Identical blocks' nests are one function, KernelBuilder::finish_nest: with the sums shared,
  // every block's code is the same and the count need not grow at all; made inline, each block's
  // code differs and grows with its depth.)
  CHECK(a7 - a5 == a5 - a3);
}
