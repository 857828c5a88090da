// Soundness of compiled regions: each case is a minimal graph, made by hand after what the JIT
// fuzzers (test_jit_fuzz.cpp, test_jit_fuzz_serving.cpp) found, on which a Session that compiles
// regions must return what the interpreter returns, shapes and values, on every call: regions
// alike but for their constants must not share a kernel, and a kernel must not serve a call whose
// output shapes differ from the ones it was compiled for because a shape operand's values did.
#include <string>
#include <vector>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// Runs `g` through a Session (by default: one warm-up run, every op a region) on each feed in
// turn, checking every call's outputs against the interpreter's, shapes and values.
void check_like_interpreter(const Graph& g, const std::vector<std::vector<Tensor>>& feeds,
                            SessionOptions options = {.warmup_runs = 1, .min_region_ops = 1}) {
  Session jit(g, options);
  Session ref(g, SessionOptions{.interpret_only = true});
  for (size_t call = 0; call < feeds.size(); ++call) {
    INFO("call " << call);
    const std::vector<Tensor> got = jit.run(feeds[call]), want = ref.run(feeds[call]);
    REQUIRE(got.size() == want.size());
    for (size_t o = 0; o < got.size(); ++o) {
      INFO("output " << o);
      check_tensors_close(got[o], want[o]);
    }
  }
}

}  // namespace

// ---- The kernel cache ----

// A Pad's pads are baked into its kernel, but a region's kernel cache key records only the values
// of one-element constants: two regions alike but for their (two-element) pads share one kernel.
// The same for Slice's parameters and a reduction's axes.
TEST_CASE("JIT soundness: regions differing only in Pad's pads get kernels of their own") {
  GraphBuilder b("pads");
  const ValueId x = b.input("x", DType::f32, {4});
  b.output(b.neg(b.pad(x, b.ints({1, 0}))), "left");
  b.output(b.neg(b.pad(x, b.ints({0, 1}))), "right");
  check_like_interpreter(b.build(), {{iota<float>({4}, 1)}, {iota<float>({4}, 1)}});
}

TEST_CASE("JIT soundness: regions differing only in Slice's starts get kernels of their own") {
  GraphBuilder b("slices");
  const ValueId x = b.input("x", DType::f32, {4, 4});
  b.output(b.neg(b.slice(x, b.ints({0, 0}), b.ints({2, 2}))), "top_left");
  b.output(b.neg(b.slice(x, b.ints({1, 2}), b.ints({3, 4}))), "middle_right");
  check_like_interpreter(b.build(), {{iota<float>({4, 4})}, {iota<float>({4, 4})}});
}

TEST_CASE("JIT soundness: regions differing only in a reduction's axes get kernels of their own") {
  GraphBuilder b("axes");
  const ValueId x = b.input("x", DType::f32, {3, 3, 3});
  const Attributes drop = {{"keepdims", int64_t{0}}};
  b.output(b.neg(b.reduce_sum(x, b.ints({0, 1}), drop)), "over_01");
  b.output(b.neg(b.reduce_sum(x, b.ints({1, 2}), drop)), "over_12");
  check_like_interpreter(b.build(), {{iota<float>({3, 3, 3})}, {iota<float>({3, 3, 3})}});
}

// A B operand of at least 64x64 that is a graph constant is packed once per kernel context,
// keyed by its address. A region alike but for its B being computed shares that kernel; its B,
// an interpreted CumSum's output, lives at the same arena address on every call, so the kernel
// keeps multiplying by the first call's B.
TEST_CASE("JIT soundness: a MatMul kernel packing a constant B is not shared with a computed B") {
  GraphBuilder b("packed_b");
  const ValueId x = b.input("x", DType::f32, {2, 64});
  const ValueId z = b.input("z", DType::f32, {64, 64});
  b.output(b.neg(b.matmul(x, b.constant("w", random_f32({64, 64}, 7)))), "xw");
  b.output(b.neg(b.matmul(x, b.node(OpKind::CumSum, {z, b.scalar<int64_t>(0)}).front())), "xz");
  std::vector<std::vector<Tensor>> feeds;
  for (uint32_t i = 0; i < 3; ++i)
    feeds.push_back({random_f32({2, 64}, i), random_f32({64, 64}, 10 + i)});
  check_like_interpreter(b.build(), feeds);
}

// Multi-element constant indices are loaded from their buffer, not folded: sharing is harmless.
TEST_CASE("JIT soundness: regions differing only in Gather's constant indices") {
  GraphBuilder b("gathers");
  const ValueId x = b.input("x", DType::f32, {4});
  b.output(b.neg(b.gather(x, b.ints({0, 1}))), "first");
  b.output(b.neg(b.gather(x, b.ints({3, 2}))), "last");
  check_like_interpreter(b.build(), {{iota<float>({4}, 1)}, {iota<float>({4}, 1)}});
}

// ---- Value-dependent shapes ----

// An Expand whose shape is computed from Shape(x): the region reads Shape's output (always [1])
// and a constant, so its guard holds when x's length changes, and the kernel returns a tensor of
// the warm-up's shape.
TEST_CASE("JIT soundness: Expand to a shape computed from an input's length") {
  GraphBuilder b("expand_to_shape");
  const ValueId x = b.input("x", DType::f32, {Dim("n")});
  const ValueId n = b.shape(x);
  const ValueId target = b.node(OpKind::Concat, {n, b.ints({2})}, {{"axis", int64_t{0}}}).front();
  b.output(b.neg(b.expand(b.constant("", f32({1, 1}, {5})), target)), "y");
  check_like_interpreter(b.build(), {{iota<float>({2})}, {iota<float>({3})}});
}

TEST_CASE("JIT soundness: Reshape to a shape computed from an input's length") {
  GraphBuilder b("reshape_to_shape");
  const ValueId x = b.input("x", DType::f32, {Dim("n")});
  const ValueId y = b.input("y", DType::f32, {6});
  const ValueId n = b.shape(x);
  const ValueId target = b.node(OpKind::Concat, {n, b.ints({-1})}, {{"axis", int64_t{0}}}).front();
  b.output(b.neg(b.reshape(y, target)), "z");
  check_like_interpreter(
      b.build(), {{iota<float>({2}), iota<float>({6})}, {iota<float>({3}), iota<float>({6})}});
}

// The same with the shape operand a graph input: its values change, its shape does not.
TEST_CASE("JIT soundness: Reshape to a shape given as an input's values") {
  GraphBuilder b("reshape_to_values");
  const ValueId x = b.input("x", DType::f32, {6});
  const ValueId s = b.input("s", DType::i64, {2});
  b.output(b.neg(b.reshape(x, s)), "y");
  const Graph g = b.build();
  const std::vector<std::vector<Tensor>> feeds = {{iota<float>({6}), ints({2, 3})},
                                                  {iota<float>({6}), ints({3, 2})}};
  SUBCASE("profile-guided") { check_like_interpreter(g, feeds); }
  SUBCASE("per signature") {
    check_like_interpreter(g, feeds, SessionOptions{.mode = CompileMode::per_signature});
  }
}
