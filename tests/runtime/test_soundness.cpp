// Soundness of compiled regions: a kernel is shared only by regions of the same code, a guard
// covers every value the plan's shapes were derived from, a call that throws changes nothing, and
// a runtime helper's failure inside a kernel becomes an sgraph::Error.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "jit/parallel.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// A chain from `x` made with one baked-in parameter; `which` picks one of two variants that give
// the same output shape.
using Chain = std::function<ValueId(GraphBuilder&, ValueId x, int which)>;

struct Kind {
  const char* what;
  Shape shape;  // of x and y
  Chain chain;
  bool baked = true;  // false: the kernel reads the parameter from its buffer, so one kernel
};                    // serves both variants

// Two unconnected regions: the chain from x with variant `a` and the chain from y with `b`.
Graph twins(const Kind& k, int a, int b) {
  GraphBuilder g("twins");
  const ValueId x = g.input("x", DType::f32, to_dims(k.shape));
  const ValueId y = g.input("y", DType::f32, to_dims(k.shape));
  g.output(g.relu(k.chain(g, x, a)), "p");
  g.output(g.relu(k.chain(g, y, b)), "q");
  return g.build();
}

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {
      {"a folded scalar constant",
       {6},
       [](GraphBuilder& g, ValueId x, int w) { return g.add(x, g.scalar(w ? 0.25f : 0.5f)); }},
      {"Slice starts (same length)",
       {8},
       [](GraphBuilder& g, ValueId x, int w) { return g.slice(x, g.ints({w}), g.ints({w + 4})); }},
      {"Slice steps and axes",
       {4, 4},
       [](GraphBuilder& g, ValueId x, int w) {
         return g.slice(x, g.ints({w}), g.ints({4}), g.ints({w ? 1 : 0}), g.ints({w ? 1 : 2}));
       }},
      {"Pad pads",
       {5},
       [](GraphBuilder& g, ValueId x, int w) {
         return g.pad(x, g.ints(w ? Ints{2, 0} : Ints{0, 2}));
       }},
      {"Pad mode",
       {5},
       [](GraphBuilder& g, ValueId x, int w) {
         return g.pad(x, g.ints({2, 1}), Attributes{{"mode", std::string(w ? "edge" : "reflect")}});
       }},
      {"Gather indices",
       {6},
       [](GraphBuilder& g, ValueId x, int w) {
         return g.gather(x, g.ints(w ? Ints{5, 0, 1} : Ints{1, 2, 3}));
       },
       false},
      {"Transpose perm",
       {3, 3},
       [](GraphBuilder& g, ValueId x, int w) {
         return g.transpose(x, Attributes{{"perm", w ? Ints{1, 0} : Ints{0, 1}}});
       }},
      {"reduction axes",
       {4, 4},
       [](GraphBuilder& g, ValueId x, int w) {
         return g.reduce_sum(x, g.ints({w}), Attributes{{"keepdims", int64_t{0}}});
       }},
      {"Softmax axis",
       {3, 5},
       [](GraphBuilder& g, ValueId x, int w) {
         return g.softmax(x, Attributes{{"axis", int64_t{w}}});
       }},
      {"an activation's attribute",
       {7},
       [](GraphBuilder& g, ValueId x, int w) {
         return g.leaky_relu(g.neg(x), Attributes{{"alpha", w ? 0.5 : 0.1}});
       }},
      {"MatMul weights packed or read",
       {64, 64},
       [](GraphBuilder& g, ValueId x, int w) {  // a constant B is packed; x @ x is not
         return w ? g.matmul(x, x) : g.matmul(x, g.constant("", random_f32({64, 64}, 9)));
       }},
  };
  return k;
}

std::vector<Tensor> run_both(const Graph& g, const std::vector<Tensor>& in, Report* rep) {
  // One thread: a region's thread count comes from its measured warm-up time and is part of its
  // code, so two twin regions timed either side of a step (ASan, a loaded machine) would
  // rightly get two kernels.
  Session s(g, SessionOptions{.warmup_runs = 1, .threads = 1});
  s.run(in);
  std::vector<Tensor> got = s.run(in);
  *rep = s.report();
  return got;
}

}  // namespace

TEST_CASE("Soundness: regions that differ in one baked-in value get different kernels") {
  for (const Kind& k : kinds()) {
    const std::string what = k.what;
    CAPTURE(what);
    const std::vector<Tensor> in = {random_f32(k.shape, 1), random_f32(k.shape, 2)};
    for (auto [a, b] : {std::pair{0, 1}, std::pair{1, 0}, std::pair{0, 0}}) {
      CAPTURE(a);
      CAPTURE(b);
      const Graph g = twins(k, a, b);
      Report rep;
      const std::vector<Tensor> got = run_both(g, in, &rep);
      const std::vector<Tensor> want = Session(g, {.interpret_only = true}).run(in);
      REQUIRE(rep.regions.size() == 2);
      for (const RegionReport& r : rep.regions) CHECK_MESSAGE(r.compiled, r.why_interpreted);
      CHECK(rep.kernel_calls == 2);
      // Different parameters: two kernels; the same: one, shared.
      const bool same_code = a == b || !k.baked;
      // (Compiled at once: either region may be the one compiling.)
      CHECK(rep.regions[0].cache_hit + rep.regions[1].cache_hit == (same_code ? 1 : 0));
      CHECK(rep.compilations == (same_code ? 1 : 2));
      check_tensors_close(got[0], want[0]);
      check_tensors_close(got[1], want[1]);
    }
  }
}

TEST_CASE("Soundness: a shape computed from Shape(x) in a static region follows x's shape guard") {
  // Expand(c, Shape(x)) + 1: Shape(x)'s output keeps its shape ([2]) while its values change. It is
  // made in the region, from x's shape, which the region's guard fixes: no value guard is needed,
  // and a call of another n misses.
  GraphBuilder b("expand_to_x");
  const ValueId x = b.input("x", DType::f32, {Dim("n"), 3});
  const ValueId c = b.constant("c", random_f32({1, 3}, 3));
  const ValueId e = b.expand(c, b.shape(x));
  b.output(b.add(e, x), "y");
  b.output(b.relu(b.neg(e)), "z");
  const Graph g = b.build();
  Session s(g, SessionOptions{.warmup_runs = 1, .min_region_ops = 1});
  Session ref(g, SessionOptions{.interpret_only = true});
  s.run({random_f32({2, 3}, 1)});
  REQUIRE(s.planned());
  for (int64_t n : {2, 4, 1, 2}) {
    CAPTURE(n);
    const std::vector<Tensor> in = {random_f32({n, 3}, static_cast<uint32_t>(n))};
    const std::vector<Tensor> got = s.run(in), want = ref.run(in);
    check_tensors_close(got[0], want[0]);
    check_tensors_close(got[1], want[1]);
  }
  const Report rep = s.report();
  CHECK(rep.guard_misses >= 2);
  CHECK(rep.kernel_calls >= 2);
  bool shape_compiled = false, guarded = false;
  for (const OpReport& o : rep.ops)
    shape_compiled |= o.op == OpKind::Shape && o.region >= 0 &&
                      rep.regions.at(static_cast<size_t>(o.region)).compiled;
  for (const RegionReport& r : rep.regions) guarded |= !r.value_guarded.empty();
  CHECK(shape_compiled);
  CHECK_FALSE(guarded);
}

TEST_CASE("Soundness: a Reshape whose shape is a graph input is guarded by value") {
  GraphBuilder b("reshape_by_input");
  const ValueId x = b.input("x", DType::f32, {12});
  const ValueId shape = b.input("shape", DType::i64, {2});
  // The shape vector goes through an op inside the region (Concat of its parts).
  const ValueId s0 = b.slice(shape, b.ints({0}), b.ints({1}));
  const ValueId s1 = b.slice(shape, b.ints({1}), b.ints({2}));
  const ValueId spec = b.node(OpKind::Concat, {s1, s0}, {{"axis", int64_t{0}}}).front();
  b.output(b.relu(b.reshape(b.add(x, b.scalar(1.0f)), spec)), "y");
  const Graph g = b.build();
  Session s(g, SessionOptions{.warmup_runs = 1, .min_region_ops = 1});
  Session ref(g, SessionOptions{.interpret_only = true});
  const Tensor data = random_f32({12}, 5);
  s.run(std::vector<Tensor>{data, ints({2, 6})});
  const Report planned = s.report();
  bool reshape_compiled = false;
  for (const OpReport& o : planned.ops)
    reshape_compiled |= o.op == OpKind::Reshape && o.region >= 0 &&
                        planned.regions.at(static_cast<size_t>(o.region)).compiled;
  CHECK(reshape_compiled);
  for (const Ints& sh : {Ints{2, 6}, Ints{3, 4}, Ints{6, 2}, Ints{4, 3}, Ints{2, 6}}) {
    CAPTURE(shape_str(sh));
    const std::vector<Tensor> in = {data, ints(sh)};
    const std::vector<Tensor> got = s.run(in), want = ref.run(in);
    check_tensors_close(got[0], want[0]);
  }
}

namespace {
// Over the dynamic regions of `rep`, each checked compiled: kernel calls, value guards, misses.
struct DynamicTally {
  int64_t calls = 0, guarded = 0, misses = 0;
};
DynamicTally dynamic_tally(const Report& rep) {
  DynamicTally t;
  for (const RegionReport& r : rep.regions) {
    if (!r.dynamic) continue;
    CHECK_MESSAGE(r.compiled, r.why_interpreted);
    t.calls += r.kernel_calls;
    t.guarded += static_cast<int64_t>(r.value_guarded.size());
    t.misses += r.guard_misses;
  }
  return t;
}

// The dynamic region of `rep` whose ops include a Reshape.
const RegionReport* reshape_region(const Report& rep) {
  for (const OpReport& o : rep.ops)
    if (o.op == OpKind::Reshape && o.region >= 0)
      return &rep.regions.at(static_cast<size_t>(o.region));
  return nullptr;
}
}  // namespace

TEST_CASE("Soundness: a dynamic Reshape to Shape(x)'s batch and a constant, guarded as forms") {
  // x.view(x.size(0), -1) as exporters write it: Shape -> Gather -> Unsqueeze -> Concat. The shape
  // ops keep their shapes (stable) while their values follow the batch. Made in the region, the
  // operand is known from the symbols (ops::symbolic_value): one region, no value guard. Given
  // by the caller (`given`), it is a region input whose elements the guard checks as forms.
  for (const bool given : {false, true})
    for (const int64_t tail : {12, -1}) {
      CAPTURE(given);
      CAPTURE(tail);
      GraphBuilder b("flatten_by_shape");
      const ValueId x = b.input("x", DType::f32, {Dim("n"), 4, 3});
      ValueId spec = kNoValue;
      if (given) {
        spec = b.input("spec", DType::i64, {2});
      } else {
        const ValueId n = b.unsqueeze(
            b.gather(b.shape(x), b.constant("zero", Tensor::scalar<int64_t>(0))), b.ints({0}));
        spec = b.concat(n, b.ints({tail}), Attributes{{"axis", int64_t{0}}});
      }
      b.output(b.relu(b.reshape(b.mul(x, b.scalar(2.0f)), spec)), "y");
      const Graph g = b.build();
      Session s(g, SessionOptions{.warmup_runs = 3, .min_region_ops = 1});
      Session ref(g, SessionOptions{.interpret_only = true});
      for (int64_t batch : {2, 3, 5, 1, 7, 2, 16}) {
        CAPTURE(batch);
        std::vector<Tensor> in = {random_f32({batch, 4, 3}, static_cast<uint32_t>(batch))};
        if (given) in.push_back(ints({batch, tail}));
        const std::vector<Tensor> got = s.run(in), want = ref.run(in);
        check_tensors_close(got[0], want[0]);
      }
      const Report rep = s.report();
      const RegionReport* r = reshape_region(rep);
      REQUIRE(r != nullptr);
      CHECK(r->dynamic);
      CHECK_MESSAGE(r->compiled, r->why_interpreted);
      CHECK(r->kernel_calls == 4);
      CHECK(r->guard_misses == 0);
      if (given) {
        REQUIRE(r->value_guarded.size() == 1);
        CHECK(contains(r->value_guarded[0], tail == 12 ? "= [n,12]" : "= [n,-1]"));
        CHECK(contains(rep.to_text(), "guarded by value: "));
      } else {
        CHECK(r->value_guarded.empty());
        CHECK(rep.regions.size() == 1);  // (the shape ops in it)
        for (const OpReport& o : rep.ops) CHECK_MESSAGE(o.region == 0, o.node);
      }
    }
}

TEST_CASE("Soundness: a dynamic Expand to a shape made from Shape(x), guarded as forms") {
  // A mask-like operand [1, 4] expanded to x's [n, 4] by Shape(x) -> Gather -> Unsqueeze ->
  // Concat, and x [n, 1, 4] itself expanded to [n, 3, 4]: one output dim the operand's symbol
  // where the input's is 1, one where the input's is the same symbol.
  GraphBuilder b("expand_by_shape");
  const ValueId x = b.input("x", DType::f32, {Dim("n"), 1, 4});
  const ValueId m = b.input("m", DType::f32, {1, 4});
  const ValueId zero = b.constant("zero", Tensor::scalar<int64_t>(0));
  const ValueId n = b.unsqueeze(b.gather(b.shape(x), zero), b.ints({0}));
  const ValueId to_x = b.concat(n, b.ints({4}), Attributes{{"axis", int64_t{0}}});
  const ValueId to_3 = b.concat(n, b.ints({3, 4}), Attributes{{"axis", int64_t{0}}});
  const ValueId masked = b.expand(b.mul(m, b.scalar(2.0f)), to_x);  // [n, 4]
  const ValueId wide = b.expand(b.relu(x), to_3);                   // [n, 3, 4]
  b.output(b.add(wide, b.unsqueeze(masked, b.ints({1}))), "y");
  const Graph g = b.build();
  Session s(g, SessionOptions{.warmup_runs = 3, .min_region_ops = 1});
  Session ref(g, SessionOptions{.interpret_only = true});
  const Tensor mask = random_f32({1, 4}, 3);
  for (int64_t batch : {2, 3, 5, 1, 7, 2}) {
    CAPTURE(batch);
    const std::vector<Tensor> in = {random_f32({batch, 1, 4}, static_cast<uint32_t>(batch)), mask};
    const std::vector<Tensor> got = s.run(in), want = ref.run(in);
    REQUIRE(got[0].shape() == want[0].shape());
    check_tensors_close(got[0], want[0]);
  }
  const Report rep = s.report();
  const auto [calls, guarded, misses] = dynamic_tally(rep);
  CHECK(calls >= 3);
  CHECK(guarded == 0);  // (the operands are made in the region, from x's shape)
  CHECK(misses == 0);
  CHECK(rep.guard_misses == 0);
  std::set<int32_t> shaping;  // (the regions of the shape ops and the Expands: one)
  for (const OpReport& o : rep.ops)
    if (o.op != OpKind::Mul) shaping.insert(o.region);
  CHECK(shaping.size() == 1);
  CHECK(*shaping.begin() >= 0);
}

TEST_CASE("Soundness: a dynamic Slice to computed ends: a position table cut to the length") {
  // pos = P[:, :s] with s = Shape(x)[1], as exporters write a position table's slice.
  GraphBuilder b("slice_by_shape");
  const ValueId x = b.input("x", DType::f32, {1, Dim("s"), 8});
  const ValueId table = b.constant("P", random_f32({1, 16, 8}, 2));
  const ValueId one = b.constant("one", Tensor::scalar<int64_t>(1));
  const ValueId len = b.unsqueeze(b.gather(b.shape(x), one), b.ints({0}));
  const ValueId pos = b.slice(table, b.ints({0}), len, b.ints({1}));
  b.output(b.relu(b.add(x, pos)), "y");
  const Graph g = b.build();
  Session s(g, SessionOptions{.warmup_runs = 3, .min_region_ops = 1});
  Session ref(g, SessionOptions{.interpret_only = true});
  for (int64_t n : {3, 5, 7, 2, 16, 9, 1}) {
    CAPTURE(n);
    const std::vector<Tensor> in = {random_f32({1, n, 8}, static_cast<uint32_t>(n))};
    const std::vector<Tensor> got = s.run(in), want = ref.run(in);
    REQUIRE(got[0].shape() == want[0].shape());
    check_tensors_close(got[0], want[0]);
  }
  // Longer than the table: the interpreter's broadcast error, not a read past the table.
  const std::vector<Tensor> long_in = {random_f32({1, 20, 8}, 20)};
  const std::string want_error = error_of([&] { ref.run(long_in); });
  CHECK_FALSE(want_error.empty());
  CHECK(error_of([&] { s.run(long_in); }) == want_error);
  const Report rep = s.report();
  const auto [calls, guarded, misses] = dynamic_tally(rep);
  CHECK(calls == 4);
  CHECK(guarded == 0);  // (the ends are made in the region; the guard checks 16 - s >= 0)
  CHECK(misses == 0);
  CHECK(rep.regions.size() == 1);
}

TEST_CASE("Soundness: a dynamic Range to a computed length: positions made in the kernel") {
  // y = x + P[arange(Shape(x)[1])], the positions of a text encoder, written with Range: its
  // count is the length the guard binds, checked by the planner against its limit's form. With
  // the limit given by the caller instead, the guard checks it as a form of the length: a call
  // whose limit is not the length (a valid broadcast of one row) must miss.
  for (const bool given : {false, true}) {
    CAPTURE(given);
    GraphBuilder b("positions");
    const ValueId x = b.input("x", DType::f32, {1, Dim("s"), 8});
    const ValueId table = b.constant("P", random_f32({16, 8}, 2));
    const ValueId len =
        given ? b.input("len", DType::i64, {}) : b.gather(b.shape(x), b.scalar<int64_t>(1));
    const ValueId pos = b.range(b.scalar<int64_t>(0), len, b.scalar<int64_t>(1));
    b.output(b.relu(b.add(x, b.unsqueeze(b.gather(table, pos), b.ints({0})))), "y");
    const Graph g = b.build();
    Session s(g, SessionOptions{.warmup_runs = 3, .min_region_ops = 1});
    Session ref(g, SessionOptions{.interpret_only = true});
    const auto call = [&](int64_t n, int64_t l) {
      CAPTURE(n);
      CAPTURE(l);
      std::vector<Tensor> in = {random_f32({1, n, 8}, static_cast<uint32_t>(n))};
      if (given) in.push_back(Tensor::scalar<int64_t>(l));
      const std::vector<Tensor> got = s.run(in), want = ref.run(in);
      REQUIRE(got[0].shape() == want[0].shape());
      check_tensors_close(got[0], want[0]);
    };
    for (int64_t n : {3, 5, 7, 2, 16, 9}) call(n, n);
    const DynamicTally t = dynamic_tally(s.report());
    CHECK(t.calls == 3);
    CHECK(t.misses == 0);
    CHECK(t.guarded == (given ? 1 : 0));
    bool range_compiled = false;
    for (const OpReport& o : s.report().ops)
      range_compiled |= o.op == OpKind::Range && o.region >= 0;
    CHECK(range_compiled);
    if (given) {
      call(4, 1);  // one position for every row: a miss
      CHECK(dynamic_tally(s.report()).misses == 1);
    }
  }
}

TEST_CASE("Soundness: a dynamic Reshape's or Expand's shape operand that stops following misses") {
  // The shape is a graph input, [n, 12] through the warm-up: the kernel is planned for an output
  // [n, 12]. A call with another valid shape must not run it (it would return [n, 12]).
  for (const OpKind op :
       {OpKind::Reshape, OpKind::Expand, OpKind::Slice, OpKind::ConstantOfShape}) {
    CAPTURE(op_name(op));
    GraphBuilder b("shape_by_input");
    const ValueId x = b.input("x", DType::f32, {Dim("n"), 12});
    const ValueId shape = b.input("shape", DType::i64, {2});
    const ValueId m = b.constant("m", random_f32({1, 12}, 4));
    if (op == OpKind::Reshape) {
      b.output(b.relu(b.reshape(b.add(x, b.scalar(1.0f)), shape)), "y");
    } else if (op == OpKind::Slice) {  // rows [0, shape[0]) and columns [0, shape[1]) of T
      const ValueId t = b.constant("T", random_f32({8, 12}, 5));
      b.output(b.add(x, b.slice(t, b.ints({0, 0}), shape, b.ints({0, 1}))), "y");
    } else if (op == OpKind::ConstantOfShape) {  // (the filled tensor an output too)
      const ValueId c =
          b.constant_of_shape(shape, Attributes{{"value", Tensor::from<float>({1}, {1.5f})}});
      b.output(b.add(x, c), "y");
      b.output(b.relu(c), "c");
    } else {  // ([1, 12] and [n, 12] broadcast to [n, 12] in the sum; the Expand is an output)
      const ValueId e = b.expand(b.relu(m), shape);
      b.output(b.add(x, e), "y");
      b.output(e, "e");
    }
    const Graph g = b.build();
    Session s(g, SessionOptions{.warmup_runs = 3, .min_region_ops = 1});
    Session ref(g, SessionOptions{.interpret_only = true});
    const auto call = [&](int64_t n, const Ints& sh) {
      CAPTURE(n);
      CAPTURE(shape_str(sh));
      const std::vector<Tensor> in = {random_f32({n, 12}, static_cast<uint32_t>(n)), ints(sh)};
      const std::vector<Tensor> got = s.run(in), want = ref.run(in);
      REQUIRE(got.size() == want.size());
      for (size_t o = 0; o < got.size(); ++o) {
        REQUIRE(got[o].shape() == want[o].shape());
        check_tensors_close(got[o], want[o]);
      }
    };
    for (int64_t n : {1, 2, 3}) call(n, {n, 12});  // the warm-up
    REQUIRE(s.planned());
    CHECK(dynamic_tally(s.report()).guarded == 1);
    call(4, {4, 12});  // a kernel call
    if (op == OpKind::Reshape) {
      call(4, {8, 6});   // the same element count, another shape: a miss
      call(4, {4, -1});  // the same output, but not the planned element: a miss
    } else if (op == OpKind::Slice) {
      call(4, {1, 12});  // one row of T, broadcast: a miss
      call(8, {9, 12});  // past T's 8 rows, clamped to them: the same output, but a miss
    } else if (op == OpKind::ConstantOfShape) {
      call(4, {1, 12});  // one row, broadcast: a miss
      call(4, {1, 1});   // a miss
    } else {
      call(4, {1, 12});  // the input's shape, not the batch: a miss
      call(4, {1, 1});   // a miss
    }
    call(6, {6, 12});  // a kernel call
    call(1, {1, 12});  // a kernel call
    const DynamicTally t = dynamic_tally(s.report());
    CHECK(t.calls == 3);
    CHECK(t.misses == 2);
  }
}

TEST_CASE("Soundness: a rejected call during warm-up is not a warm-up run") {
  GraphBuilder b("mlp");
  const ValueId x = b.input("x", DType::f32, {Dim("batch"), 4});
  const ValueId w = b.constant("w", random_f32({4, 4}, 1));
  b.output(b.relu(b.add(b.matmul(x, w), b.scalar(0.5f))), "y");
  const Graph g = b.build();
  Session s(g, SessionOptions{.warmup_runs = 2});
  const Tensor good = random_f32({3, 4}, 2);
  s.run({good});
  CHECK(contains(error_of([&] {
                   s.run({Tensor::from<int64_t>({3, 4}, std::vector<int64_t>(12))});
                 }),
                 "must be f32"));
  CHECK(contains(error_of([&] { s.run({random_f32({3, 4, 1}, 3)}); }), "rank"));
  CHECK_FALSE(s.planned());
  CHECK(s.report().warmup_runs == 1);
  s.run({good});
  REQUIRE(s.planned());
  const Report r = s.report();
  CHECK(r.warmup_runs == 2);
  for (const OpReport& o : r.ops) CHECK_MESSAGE(o.stable, o.node << ": " << o.change);
  REQUIRE(r.regions.size() == 1);
  CHECK(r.regions[0].compiled);
}

TEST_CASE("Soundness: a call failing inside an op leaves the record and the plan as they were") {
  // Reshape by a shape input: [5, 5] does not fit 12 elements, so the op throws mid-run.
  GraphBuilder b("bad_reshape");
  const ValueId x = b.input("x", DType::f32, {12});
  const ValueId shape = b.input("shape", DType::i64, {2});
  b.output(b.relu(b.reshape(b.neg(x), shape)), "y");
  const Graph g = b.build();
  Session s(g, SessionOptions{.warmup_runs = 2, .min_region_ops = 1});
  const Tensor data = random_f32({12}, 4);
  s.run(std::vector<Tensor>{data, ints({3, 4})});
  CHECK_FALSE(error_of([&] { s.run(std::vector<Tensor>{data, ints({5, 5})}); }).empty());
  s.run(std::vector<Tensor>{data, ints({3, 4})});
  REQUIRE(s.planned());
  for (const OpReport& o : s.report().ops) CHECK_MESSAGE(o.stable, o.node << ": " << o.change);
  // While serving: the failing call counts no guard miss and causes no re-plan.
  const Report before = s.report();
  for (int i = 0; i < 4; ++i)
    CHECK_FALSE(error_of([&] { s.run(std::vector<Tensor>{data, ints({5, 5})}); }).empty());
  const Report after = s.report();
  CHECK(after.guard_misses == before.guard_misses);
  CHECK(after.kernel_calls == before.kernel_calls);
  CHECK(after.replans == before.replans);
  const std::vector<Tensor> in = {data, ints({3, 4})};
  check_tensors_close(s.run(in)[0], Session(g, {.interpret_only = true}).run(in)[0]);
  CHECK(s.report().kernel_calls == before.kernel_calls + 1);
}

TEST_CASE("Soundness: a runtime helper failing inside a kernel is an sgraph::Error") {
  // A 160x128 product (80 KiB: a local buffer in the kernel's scratch block) through the GEMM.
  GraphBuilder b("gemm");
  const ValueId x = b.input("x", DType::f32, {160, 128});
  b.output(b.relu(b.matmul(x, b.constant("w", random_f32({128, 128}, 7)))), "y");
  const Graph g = b.build();
  Session s(g, SessionOptions{.warmup_runs = 1});
  const std::vector<Tensor> in = {random_f32({160, 128}, 6)};
  const Tensor want = Session(g, {.interpret_only = true}).run(in)[0];
  s.run(in);
  REQUIRE(s.report().regions.size() == 1);
  REQUIRE(s.report().regions[0].compiled);
  // The first served call allocates the scratch block; later ones reuse it, so the second
  // failure is the first helper call inside the kernel.
  for (const char* where : {"scratch", "kernel failed"}) {
    CAPTURE(where);
    fail_kernel_helpers_for_testing(1);
    const std::string e = error_of([&] { s.run(in); });
    fail_kernel_helpers_for_testing(0);
    CHECK(contains(e, "region of 2 ops"));
    CHECK(contains(e, where));
    check_tensors_close(s.run(in)[0], want);  // the next call is right
  }
  CHECK(s.report().kernel_calls == 2);  // the failed calls count no call
}
