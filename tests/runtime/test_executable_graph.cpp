// ExecutableGraph: step order with contracted regions, kernel calls under the shape guard, and
// fallback to the interpreter. Kernels here are hand-written C++ functions standing in for JIT
// output, so these tests do not depend on the JIT.
#include "runtime/executable_graph.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

int g_kernel_calls = 0;
// relu(x + c) over 4 floats: buffers {x, c, y}.
void add_relu_4(void* const* b, const int64_t*, void*) {
  ++g_kernel_calls;
  const auto* x = static_cast<const float*>(b[0]);
  const auto* c = static_cast<const float*>(b[1]);
  auto* y = static_cast<float*>(b[2]);
  for (int i = 0; i < 4; ++i) y[i] = std::max(x[i] + c[i], 0.0f);
}

// x[n] -> Add(x, c) -> Relu -> Mul(., 2) -> y; the region is {Add, Relu}.
struct Fixture {
  Graph g;
  Fixture() {
    GraphBuilder b("chain");
    ValueId x = b.input("x", DType::f32, {Dim("n")});
    ValueId c = b.input("c", DType::f32, {Dim("n")});
    ValueId r = b.relu(b.add(x, c));
    b.output(b.mul(r, b.scalar(2.0f)), "y");
    g = b.build();
  }
  RegionPlan plan(jit::KernelFn fn) const {
    RegionPlan p;
    p.region.nodes = {0, 1};
    p.region.inputs = {g.inputs[0], g.inputs[1]};
    p.region.outputs = {g.nodes[1].outputs[0]};
    p.input_shapes = {{4}, {4}};
    p.output_shapes = {{4}};
    p.output_dtypes = {DType::f32};
    p.fn = fn;
    return p;
  }
};

}  // namespace

TEST_CASE("ExecutableGraph: a region step calls its kernel when the guard holds") {
  Fixture f;
  ExecutableGraph eg(f.g, {f.plan(add_relu_4)});
  CHECK(eg.num_steps() == 2);  // the region and the Mul
  g_kernel_calls = 0;
  const Tensor x = f32({4}, {1, -2, 3, -4}), c = f32({4}, {0.5f, 0.5f, 0.5f, 0.5f});
  check_close(eg.run(std::vector<Tensor>{x, c})[0], {4}, {3, 0, 7, 0});
  CHECK(g_kernel_calls == 1);
  CHECK(eg.regions()[0].stats->kernel_calls == 1);
  CHECK(eg.regions()[0].stats->guard_misses == 0);
}

TEST_CASE("ExecutableGraph: a region's output buffer is reused only when nobody holds it") {
  // Mul is replaced by the region's own output: make the region output the graph output.
  Fixture f;
  f.g.outputs = {f.g.nodes[1].outputs[0]};
  ExecutableGraph eg(f.g, {f.plan(add_relu_4)});
  const std::vector<Tensor> in{f32({4}, {1, 2, 3, 4}), f32({4}, {0, 0, 0, 0})};
  Tensor first = eg.run(in)[0];
  const void* buffer = first.raw_data();
  Tensor second = eg.run(in)[0];  // `first` is still held: a new buffer
  CHECK(second.raw_data() != buffer);
  check_close(first, {4}, {1, 2, 3, 4});
  first = Tensor();
  second = Tensor();
  CHECK(eg.run(in)[0].raw_data() != nullptr);  // reuses the last buffer, now unheld
  const void* reused = eg.kept_outputs(0)[0];
  CHECK(eg.run(in)[0].raw_data() == reused);
}

TEST_CASE("ExecutableGraph: a call's state keeps the constants bound, and nothing of the call") {
  // The pooled state holds the graph's constants between calls; the inputs, intermediates and
  // outputs of a call are let go when it returns, also when it throws.
  GraphBuilder b("consts");
  ValueId x = b.input("x", DType::f32, {4});
  // (the Reshapes' outputs are views of x's buffer: intermediates holding the input's data)
  ValueId square = b.node(OpKind::Reshape, {x, b.constant("s", Tensor::from<int64_t>({2}, {2, 2}))},
                          {}, 1, "square")[0];
  ValueId flat = b.node(OpKind::Reshape, {square, b.constant("f", Tensor::from<int64_t>({1}, {4}))},
                        {}, 1, "flat")[0];
  b.output(b.relu(b.add(flat, b.constant("k", f32({4}, {1, 2, 3, 4})))), "y");
  b.output(x, "x_too");  // (an output: not released during the call)
  const Graph g = b.build();
  ExecutableGraph eg(g, {});
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{-3, 0, 1, -9});
  const Tensor x_in = Tensor::wrap(DType::f32, {4}, owner->data(), owner);
  for (int call = 0; call < 3; ++call) {
    Tensor y = eg.run(std::vector<Tensor>{x_in})[0];
    check_close(y, {4}, {0, 2, 4, 0});
    CHECK(owner.use_count() == 2);  // `owner` and `x_in`: the state let the input go
  }
  CHECK_THROWS_AS(eg.run(std::vector<Tensor>{f32({3}, {1, 2, 3})}), Error);  // wrong shape
  CHECK(owner.use_count() == 2);
  check_close(eg.run(std::vector<Tensor>{x_in})[0], {4}, {0, 2, 4, 0});
}

TEST_CASE("ExecutableGraph: other shapes fall back to the interpreter and count a miss") {
  Fixture f;
  ExecutableGraph eg(f.g, {f.plan(add_relu_4)});
  g_kernel_calls = 0;
  const Tensor x = f32({5}, {1, -2, 3, -4, 5}), c = f32({5}, {0, 0, 0, 0, -10});
  check_close(eg.run(std::vector<Tensor>{x, c})[0], {5}, {2, 0, 6, 0, 0});
  CHECK(g_kernel_calls == 0);
  CHECK(eg.regions()[0].stats->guard_misses == 1);
  CHECK(eg.regions()[0].stats->misses_since_plan == 1);
  // Back to the compiled shape: the kernel runs again.
  check_close(eg.run(std::vector<Tensor>{f32({4}, {1, 1, 1, 1}), f32({4}, {0, 0, 0, 0})})[0], {4},
              {2, 2, 2, 2});
  CHECK(g_kernel_calls == 1);
}

TEST_CASE("ExecutableGraph: a region without a kernel is interpreted without counting misses") {
  Fixture f;
  ExecutableGraph eg(f.g, {f.plan(nullptr)});
  check_close(eg.run(std::vector<Tensor>{f32({4}, {1, -2, 3, -4}), f32({4}, {0, 0, 0, 0})})[0], {4},
              {2, 0, 6, 0});
  CHECK(eg.regions()[0].stats->guard_misses == 0);
}

TEST_CASE("ExecutableGraph: steps follow the contracted graph's topological order") {
  // Nodes: 0 a = Neg(x) [region]; 1 e = Exp(x) [outside, listed between the region's nodes];
  // 2 b = Add(a, e) [region]; 3 d = Mul(a, b). The region {0, 2} reads e, produced by node 1,
  // so its step must come after node 1 even though node 0 comes first.
  GraphBuilder b("order");
  ValueId x = b.input("x", DType::f32, {3});
  ValueId a = b.neg(x);
  ValueId e = b.exp(x);
  ValueId s = b.add(a, e);
  b.output(b.mul(a, s), "d");
  Graph g = b.build();
  RegionPlan p;
  p.region.nodes = {0, 2};
  p.region.inputs = {x, e};
  p.region.outputs = {a, s};
  ExecutableGraph eg(g, {p});
  CHECK(eg.num_steps() == 3);
  const Tensor in = f32({3}, {0, 1, -1});
  check_tensors_close(eg.run(std::vector<Tensor>{in})[0],
                      Interpreter(g).run(std::vector<Tensor>{in})[0]);
}
