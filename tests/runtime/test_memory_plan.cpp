// Memory plan: the planner against a brute-force checker, and the executable graph's arena. An
// observer checks from the ops' own pointers that no two values alive at the same time share
// memory (unless one is a view of the other); results equal the interpreter's call after call;
// outputs the caller keeps are never overwritten; buffers are reused across calls; guard misses
// fall back to fresh buffers.
#include <algorithm>
#include <climits>
#include <cstddef>
#include <memory>
#include <random>

#include "ops/op.h"
#include "runtime/executable_graph.h"
#include "runtime/memory_plan.h"
#include "runtime/shape_tracker.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace test_memory_plan {  // this file's own names (the tests build as unity sources)

namespace {

int64_t rounded(int64_t bytes) { return (bytes + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

bool live_together(const BufferUse& a, const BufferUse& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Every property of a plan, by brute force: aligned offsets inside the arena, buffers live at a
// common step disjoint in memory, the arena between the peak of live bytes and their sum.
void check_plan(const std::vector<BufferUse>& uses, const MemoryPlan& p) {
  REQUIRE(p.offsets.size() == uses.size());
  int64_t sum = 0;
  int32_t steps = 0;
  for (size_t i = 0; i < uses.size(); ++i) {
    sum += rounded(uses[i].bytes);
    steps = std::max(steps, uses[i].last + 1);
    CHECK(p.offsets[i] % kArenaAlign == 0);
    CHECK(p.offsets[i] >= 0);
    CHECK(p.offsets[i] + rounded(uses[i].bytes) <= p.arena_bytes);
  }
  CHECK(p.unshared_bytes == sum);
  CHECK(p.arena_bytes <= sum);
  for (size_t i = 0; i < uses.size(); ++i)
    for (size_t j = i + 1; j < uses.size(); ++j) {
      if (uses[i].bytes == 0 || uses[j].bytes == 0 || !live_together(uses[i], uses[j])) continue;
      const bool apart = p.offsets[i] + uses[i].bytes <= p.offsets[j] ||
                         p.offsets[j] + uses[j].bytes <= p.offsets[i];
      CHECK_MESSAGE(apart, "buffers " << i << " and " << j << " overlap");
    }
  int64_t peak = 0;
  for (int32_t s = 0; s < steps; ++s) {
    int64_t live = 0;
    for (const BufferUse& u : uses)
      if (u.first <= s && s <= u.last) live += rounded(u.bytes);
    peak = std::max(peak, live);
  }
  CHECK(p.arena_bytes >= peak);
}

// The executable graph a Session plans after one warm-up run on `feeds`, with every region
// interpreted (no kernel), so observers see every op, including those writing region outputs.
std::unique_ptr<ExecutableGraph> plan_interpreted(const Graph& g,
                                                  const std::vector<Tensor>& feeds) {
  ShapeTracker tracker(g);
  OpObserver* obs[] = {&tracker};
  tracker.begin_run();
  Interpreter(g).run(feeds, obs);
  tracker.end_run();
  WarmupShapes warm{std::vector<Shape>(g.values.size()), tracker.stable()};
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (size_t k = 0; k < g.nodes[i].outputs.size(); ++k)
      warm.values[g.nodes[i].outputs[k]] = tracker.output_shapes(static_cast<int32_t>(i))[k];
  std::vector<RegionPlan> plans;
  for (const Region& r : build_regions(g, warm.stable).regions) {
    RegionPlan p;
    p.region = r;
    for (ValueId v : r.outputs) {
      p.output_shapes.push_back(warm.values[v]);
      p.output_dtypes.push_back(g.values[v].dtype);
    }
    plans.push_back(std::move(p));
  }
  return std::make_unique<ExecutableGraph>(g, std::move(plans), warm);
}

// Watches one run and checks that values alive at the same time never share memory, unless one
// is a view of the other. A value lives from the op making it to the last op reading it (graph
// outputs: to the end); a view chain is one buffer living as long as its members together.
class OverlapChecker final : public OpObserver {
 public:
  explicit OverlapChecker(const Graph& g) : g_(g), uses_(g.values.size()) {}
  void on_op(const OpEvent& e) override {
    ++time_;
    for (ValueId v : e.node.inputs)
      if (v != kNoValue && uses_[v].made) uses_[v].last = time_;
    const bool view = ops::op_def(e.node.op).view;
    for (size_t k = 0; k < e.outputs.size(); ++k) {
      const ValueId v = e.node.outputs[k];
      const auto* lo = static_cast<const std::byte*>(e.outputs[k].raw_data());
      Use& u = uses_[v];
      u = Use{true, lo, lo + e.outputs[k].nbytes(), time_, time_, v};
      if (view) {  // shares the buffer of input 0 (or of the graph input or constant it reads)
        const ValueId in = e.node.inputs[0];
        u.root = uses_[in].made ? uses_[in].root : in;
      }
    }
  }
  void verify() const {
    std::vector<std::pair<int, int>> life(g_.values.size(), {INT_MAX, -1});  // per root
    std::vector<Use> uses = uses_;
    for (ValueId v : g_.outputs) uses[v].last = INT_MAX;
    for (const Use& u : uses)
      if (u.made) {
        life[u.root].first = std::min(life[u.root].first, u.made_at);
        life[u.root].second = std::max(life[u.root].second, u.last);
      }
    for (size_t a = 0; a < uses.size(); ++a)
      for (size_t b = a + 1; b < uses.size(); ++b) {
        const Use &x = uses[a], &y = uses[b];
        if (!x.made || !y.made || x.root == y.root || x.lo == x.hi || y.lo == y.hi) continue;
        const auto [xs, xe] = life[x.root];
        const auto [ys, ye] = life[y.root];
        const bool together = xs <= ye && ys <= xe, shared = x.lo < y.hi && y.lo < x.hi;
        CHECK_MESSAGE(!(together && shared), "values '" << g_.values[a].name << "' and '"
                                                        << g_.values[b].name
                                                        << "' are alive together in one buffer");
      }
  }

 private:
  struct Use {
    bool made = false;
    const std::byte *lo = nullptr, *hi = nullptr;
    int made_at = 0, last = 0;
    ValueId root = kNoValue;
  };
  const Graph& g_;
  std::vector<Use> uses_;
  int time_ = 0;
};

// Records the data pointer of every output of the named ops.
class PointerLog final : public OpObserver {
 public:
  void on_op(const OpEvent& e) override {
    for (const Tensor& t : e.outputs) seen[e.node.name].push_back(t.raw_data());
  }
  std::map<std::string, std::vector<const void*>> seen;
};

bool in_arena(const ExecutableGraph& eg, const void* p) {
  const auto* base = static_cast<const std::byte*>(eg.arena_data());
  const auto* q = static_cast<const std::byte*>(p);
  return base != nullptr && q >= base && q < base + eg.arena_stats().arena_bytes;
}

// An op the JIT does not compile that keeps the shape [n, 4, L]: a 1x1 ConvTranspose.
ValueId opaque(GraphBuilder& b, ValueId x, const std::string& name = "") {
  const ValueId w = b.constant("", random_f32({4, 4, 1}, 11, -0.5f, 0.5f));
  return b.node(OpKind::ConvTranspose, {x, w}, {}, 1, name)[0];
}

// x[n,4,64] -> A{Add(x, c), Relu} -> opaque "p1" -> Reshape "v" (a view) -> opaque "p2"
//   -> B{Tanh, Mul(., 0.5)} -> opaque "p3" -> C{Neg, Sigmoid} -> y, and z = Flatten(p3), a view
// that is a graph output. The opaque op is one the JIT does not compile, so regions A, B, C
// are separate and their outputs, with p1 and p2, are intermediates between steps.
Graph chain() {
  GraphBuilder b("chain");
  ValueId x = b.input("x", DType::f32, {Dim("n"), 4, 64});
  ValueId a = b.relu(b.add(x, b.constant("c", random_f32({4, 64}, 7))));
  ValueId p1 = opaque(b, a, "p1");
  ValueId v = b.node(OpKind::Reshape, {p1, b.ints({0, 4, 64})}, {}, 1, "v")[0];
  ValueId p2 = opaque(b, v, "p2");
  ValueId bb = b.mul(b.tanh(p2), b.scalar(0.5f));
  ValueId p3 = opaque(b, bb, "p3");
  b.output(b.sigmoid(b.neg(p3)), "y");
  b.output(b.flatten(p3, axis(1)), "z");
  return b.build();
}

// A random graph over [2,4,16] tensors: unary and binary elementwise ops, opaque (interpreted),
// views (Reshape, Flatten + Reshape back), and one to three outputs, some of them views.
Graph random_graph(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  GraphBuilder b("random_" + std::to_string(seed));
  std::vector<ValueId> pool{b.input("x0", DType::f32, {2, 4, 16}),
                            b.input("x1", DType::f32, {2, 4, 16})};
  auto recent = [&] { return pool[pool.size() - 1 - pick(std::min<int>(4, pool.size()))]; };
  const OpKind unary[] = {OpKind::Tanh, OpKind::Sigmoid, OpKind::Neg, OpKind::Abs, OpKind::Relu};
  const OpKind binary[] = {OpKind::Add, OpKind::Sub, OpKind::Mul};
  const int n = 4 + pick(16);
  for (int i = 0; i < n; ++i) {
    const ValueId a = recent();
    switch (pick(5)) {
      case 0:
      case 1:
        pool.push_back(b.node(unary[pick(5)], {a})[0]);
        break;
      case 2:
        pool.push_back(b.node(binary[pick(3)], {a, pool[pick(pool.size())]})[0]);
        break;
      case 3:
        pool.push_back(opaque(b, a));
        break;
      default:
        pool.push_back(pick(2) ? b.reshape(a, b.ints({0, 4, 16}))
                               : b.reshape(b.flatten(a, axis(1)), b.ints({2, 4, 16})));
    }
  }
  std::vector<ValueId> outs{pool.back()};
  for (int k = pick(3); k > 0; --k) {
    const ValueId v = pool[2 + pick(pool.size() - 2)];
    if (std::find(outs.begin(), outs.end(), v) == outs.end()) outs.push_back(v);
  }
  for (ValueId v : outs) b.output(v);
  return b.build();
}

std::vector<Tensor> feeds(const Graph& g, uint32_t seed, int64_t n = 2) {
  std::vector<Tensor> f;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    Shape s;
    for (const Dim& d : *g.values[g.inputs[i]].shape) s.push_back(d.is_static() ? d.size : n);
    f.push_back(random_f32(s, seed + static_cast<uint32_t>(i)));
  }
  return f;
}

void check_all_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                     double rtol = 1e-5, double atol = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) check_tensors_close(got[i], want[i], rtol, atol);
}

int g_kernel_calls = 0;
const void* g_kernel_out = nullptr;
// relu(x + c) over 4 floats: buffers {x, c, out}; stands in for a JIT kernel.
void add_relu_4(void* const* b, const int64_t*, void*) {
  ++g_kernel_calls;
  g_kernel_out = b[2];
  const auto* x = static_cast<const float*>(b[0]);
  const auto* c = static_cast<const float*>(b[1]);
  auto* y = static_cast<float*>(b[2]);
  for (int i = 0; i < 4; ++i) y[i] = std::max(x[i] + c[i], 0.0f);
}

}  // namespace

TEST_CASE("plan_memory: disjoint lifetimes share offset 0, overlapping ones stack") {
  const std::vector<BufferUse> apart{{1000, 0, 1}, {1000, 2, 3}, {500, 4, 9}};
  MemoryPlan p = plan_memory(apart);
  CHECK(p.offsets == std::vector<int64_t>{0, 0, 0});
  CHECK(p.arena_bytes == 1024);
  CHECK(p.unshared_bytes == 1024 + 1024 + 512);
  check_plan(apart, p);

  const std::vector<BufferUse> together{{100, 0, 5}, {64, 3, 3}, {1, 5, 9}};
  p = plan_memory(together);
  CHECK(p.arena_bytes == 128 + 64);  // the last two, never live together, share the top 64
  check_plan(together, p);

  // A small buffer fills the gap a freed one left below a long-lived one.
  const std::vector<BufferUse> gap{{4096, 0, 1}, {8192, 0, 9}, {1024, 2, 3}};
  p = plan_memory(gap);
  CHECK(p.arena_bytes == 8192 + 4096);
  CHECK(p.offsets[2] == p.offsets[0]);
  check_plan(gap, p);

  CHECK(plan_memory({}).arena_bytes == 0);
  const std::vector<BufferUse> empty{{0, 0, 3}, {64, 0, 3}};
  p = plan_memory(empty);
  CHECK(p.arena_bytes == 64);
  check_plan(empty, p);
}

TEST_CASE("plan_memory: random interval sets against a brute-force checker") {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<BufferUse> uses(1 + rng() % 40);
    for (BufferUse& u : uses) {
      u.bytes = rng() % 8 == 0 ? 0 : 1 + rng() % 10000;
      u.first = static_cast<int32_t>(rng() % (trial % 2 ? 30 : 300));  // over one or many blocks
      u.last = u.first + static_cast<int32_t>(rng() % (trial % 3 == 0 ? 100 : 6));
    }
    CAPTURE(trial);
    check_plan(uses, plan_memory(uses));
  }
}

TEST_CASE("ExecutableGraph: a chain's intermediates share an arena reused on every call") {
  const Graph g = chain();
  const std::vector<Tensor> warm = feeds(g, 1);
  std::unique_ptr<ExecutableGraph> eg = plan_interpreted(g, warm);
  // Planned: A's output, p1 (with its view v), p2, B's output; p3 is tied by a view to output z.
  // Lifetimes (steps): a [0,1], p1+v [1,3], p2 [3,4], b [4,5]: two buffers suffice.
  const int64_t buffer = 2 * 4 * 64 * 4;
  CHECK(eg->arena_stats().buffers == 4);
  CHECK(eg->arena_stats().unshared_bytes == 4 * buffer);
  CHECK(eg->arena_stats().arena_bytes == 2 * buffer);

  const Interpreter ref(g);
  PointerLog first, later;
  std::vector<Tensor> kept;
  for (uint32_t call = 0; call < 6; ++call) {
    const std::vector<Tensor> in = feeds(g, 100 + call);
    OverlapChecker checker(g);
    OpObserver* obs[] = {&checker, call == 0 ? &first : &later};
    const std::vector<Tensor> out = eg->run(in, obs);
    checker.verify();
    check_all_close(out, ref.run(in), 0, 0);
    if (call == 1) kept = out;
  }
  check_all_close(kept, ref.run(feeds(g, 101)), 0, 0);  // later calls left them alone
  for (const char* name : {"p1", "p2"}) {
    REQUIRE(first.seen[name].size() == 1);
    CHECK(in_arena(*eg, first.seen[name][0]));
    for (const void* p : later.seen[name]) CHECK(p == first.seen[name][0]);
  }
  REQUIRE(later.seen["p3"].size() == 5);  // tied to the output z: fresh memory every call
  for (const void* p : later.seen["p3"]) CHECK_FALSE(in_arena(*eg, p));
  for (const Tensor& t : kept) CHECK_FALSE(in_arena(*eg, t.raw_data()));
}

TEST_CASE("ExecutableGraph: a kernel writes its region output into the arena") {
  // x[n] -> {Add(x, c), Relu} (the kernel) -> Mul(., 2) -> y: the region output is planned.
  GraphBuilder b("kernel_arena");
  ValueId x = b.input("x", DType::f32, {Dim("n")});
  ValueId c = b.input("c", DType::f32, {Dim("n")});
  ValueId r = b.relu(b.add(x, c));
  b.output(b.mul(r, b.scalar(2.0f)), "y");
  const Graph g = b.build();
  RegionPlan p;
  p.region.nodes = {0, 1};
  p.region.inputs = {x, c};
  p.region.outputs = {r};
  p.input_shapes = {{4}, {4}};
  p.output_shapes = {{4}};
  p.output_dtypes = {DType::f32};
  p.fn = add_relu_4;
  ExecutableGraph eg(g, {p});
  CHECK(eg.arena_stats().buffers == 1);
  g_kernel_calls = 0;
  std::vector<const void*> outs;
  for (float k : {1.0f, 2.0f, 3.0f}) {
    const std::vector<Tensor> in{f32({4}, {k, -k, 2 * k, 0}), f32({4}, {1, 1, 1, 1})};
    const Tensor y = eg.run(in)[0];
    check_close(y, {4}, {2 * (k + 1), std::max(2 * (1 - k), 0.0f), 2 * (2 * k + 1), 2});
    CHECK(in_arena(eg, g_kernel_out));
    CHECK(g_kernel_out == eg.arena_data());
    CHECK_FALSE(in_arena(eg, y.raw_data()));
  }
  CHECK(g_kernel_calls == 3);
  // Another shape misses the guard: the region's ops run interpreted into fresh memory.
  check_close(eg.run(std::vector<Tensor>{f32({2}, {1, -3}), f32({2}, {0, 0})})[0], {2}, {2, 0});
  CHECK(g_kernel_calls == 3);
}

TEST_CASE("ExecutableGraph: random graphs never keep two live values in one buffer") {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    CAPTURE(seed);
    const Graph g = random_graph(seed);
    std::unique_ptr<ExecutableGraph> eg = plan_interpreted(g, feeds(g, seed));
    const Interpreter ref(g);
    std::vector<Tensor> kept;
    for (uint32_t call = 0; call < 3; ++call) {
      const std::vector<Tensor> in = feeds(g, seed * 10 + call);
      OverlapChecker checker(g);
      OpObserver* obs[] = {&checker};
      const std::vector<Tensor> out = eg->run(in, obs);
      checker.verify();
      check_all_close(out, ref.run(in), 0, 0);
      if (call == 0) kept = out;
    }
    check_all_close(kept, ref.run(feeds(g, seed * 10)), 0, 0);
  }
}

TEST_CASE("Session: serving through the arena matches the interpreter, call after call") {
  const Graph g = chain();
  Session s(g, SessionOptions{.warmup_runs = 2});
  Session ref(g, SessionOptions{.interpret_only = true});
  for (uint32_t i = 0; i < 2; ++i) s.run(feeds(g, i));
  REQUIRE(s.planned());
  const Report rep = s.report();
  CHECK(rep.arena_buffers >= 3);
  CHECK(rep.arena_bytes < rep.arena_unshared_bytes);  // buffers are shared
  CHECK(rep.arena_bytes >= 2 * 4 * 64 * 4);
  CHECK(contains(rep.to_text(), "memory plan: "));
  CHECK(contains(rep.to_json(), "\"arena_bytes\": " + std::to_string(rep.arena_bytes)));
  std::vector<Tensor> kept, kept_want;
  for (uint32_t call = 0; call < 20; ++call) {
    const std::vector<Tensor> in = feeds(g, 50 + call);
    const std::vector<Tensor> out = s.run(in), want = ref.run(in);
    check_all_close(out, want, 1e-4, 1e-5);
    if (call == 3) kept = out, kept_want = want;
  }
  check_all_close(kept, kept_want, 1e-4, 1e-5);
  CHECK(s.report().kernel_calls > 0);
  CHECK(s.report().guard_misses == 0);
}

TEST_CASE("Session: guard misses and re-plans keep results right with the arena") {
  const Graph g = chain();
  Session s(g, SessionOptions{.warmup_runs = 2, .max_guard_misses = 2});
  Session ref(g, SessionOptions{.interpret_only = true});
  for (uint32_t i = 0; i < 2; ++i) s.run(feeds(g, i, 2));
  std::vector<Tensor> kept, kept_want;
  for (uint32_t call = 0; call < 12; ++call) {
    const int64_t n = call % 3 == 0 ? 2 : 3;  // mostly another batch: misses, then a re-plan
    const std::vector<Tensor> in = feeds(g, 70 + call, n);
    const std::vector<Tensor> out = s.run(in), want = ref.run(in);
    check_all_close(out, want, 1e-4, 1e-5);
    if (call == 1) kept = out, kept_want = want;
  }
  check_all_close(kept, kept_want, 1e-4, 1e-5);
  CHECK(s.report().guard_misses > 0);
  CHECK(s.report().replans >= 1);
}

TEST_CASE("Session: random graphs compiled and served through the arena") {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    CAPTURE(seed);
    const Graph g = random_graph(seed);
    Session s(g, SessionOptions{.warmup_runs = 1, .min_region_ops = 1});
    Session ref(g, SessionOptions{.interpret_only = true});
    s.run(feeds(g, seed));
    std::vector<Tensor> kept, kept_want;
    for (uint32_t call = 0; call < 3; ++call) {
      const std::vector<Tensor> in = feeds(g, seed * 10 + call);
      const std::vector<Tensor> out = s.run(in), want = ref.run(in);
      check_all_close(out, want, 1e-4, 1e-5);
      if (call == 0) kept = out, kept_want = want;
    }
    check_all_close(kept, kept_want, 1e-4, 1e-5);
  }
}

}  // namespace test_memory_plan
