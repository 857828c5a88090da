// ShapeTracker: which ops keep their shapes across warm-up runs, and when the others changed.
#include "jit/region_test_util.h"  // (warm_up)
#include "runtime/shape_tracker.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

using sgraph::test::region::warm_up;

namespace test_shape_tracker {  // this file's own names (the tests build as unity sources)

namespace {
int32_t node_named(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == name) return static_cast<int32_t>(i);
  FAIL("no node named " << name);
  return -1;
}

// x [batch,4] -> MatMul(x, Transpose(wt)) -> Add bias -> Relu -> y. The Transpose only sees the
// constant weight.
Graph mlp() {
  GraphBuilder b("mlp");
  ValueId x = b.input("x", DType::f32, {Dim("batch"), 4});
  ValueId wt = b.constant("wt", random_f32({3, 4}, 1));
  ValueId bias = b.constant("bias", random_f32({3}, 2));
  ValueId w = b.transpose(wt, Attributes{{"perm", Ints{1, 0}}});  // transpose_0
  b.output(b.relu(b.add(b.matmul(x, w), bias)), "y");             // matmul_0, add_0, y
  return b.build();
}

std::vector<Tensor> batch(int64_t n, uint32_t seed = 7) { return {random_f32({n, 4}, seed)}; }

// x [1,seq,8]: q, k, v projections, scores q.k^T, softmax, context, output projection, reshape.
// `wq_scaled` only sees constants.
Graph attention() {
  GraphBuilder b("attention");
  ValueId x = b.input("x", DType::f32, {1, Dim("seq"), 8});
  ValueId wq = b.constant("wq", random_f32({8, 8}, 3));
  ValueId wk = b.constant("wk", random_f32({8, 8}, 4));
  ValueId wv = b.constant("wv", random_f32({8, 8}, 5));
  ValueId wq_scaled = b.node(OpKind::Mul, {wq, b.scalar(0.35f)}, {}, 1, "wq_scaled").front();
  ValueId q = b.node(OpKind::MatMul, {x, wq_scaled}, {}, 1, "q").front();
  ValueId k = b.node(OpKind::MatMul, {x, wk}, {}, 1, "k").front();
  ValueId v = b.node(OpKind::MatMul, {x, wv}, {}, 1, "v").front();
  ValueId kt = b.node(OpKind::Transpose, {k}, {{"perm", Ints{0, 2, 1}}}, 1, "kt").front();
  ValueId s = b.node(OpKind::MatMul, {q, kt}, {}, 1, "scores").front();
  ValueId p = b.node(OpKind::Softmax, {s}, {{"axis", int64_t{-1}}}, 1, "probs").front();
  ValueId c = b.node(OpKind::MatMul, {p, v}, {}, 1, "context").front();
  ValueId r = b.node(OpKind::Reshape, {c, b.ints({-1, 8})}, {}, 1, "flat").front();
  b.output(r, "out");
  return b.build();
}

std::vector<Tensor> seq(int64_t n) { return {random_f32({1, n, 8}, static_cast<uint32_t>(n))}; }
}  // namespace

TEST_CASE("ShapeTracker: MLP with a changing batch, the weight-only Transpose stays stable") {
  Graph g = mlp();
  ShapeTracker st(g);
  warm_up(g, st, {batch(2), batch(2), batch(5)});
  CHECK(st.runs() == 3);
  const int32_t t = node_named(g, "transpose_0"), mm = node_named(g, "matmul_0"),
                add = node_named(g, "add_0"), relu = node_named(g, "y");
  CHECK(st.stable() == std::vector<bool>{true, false, false, false});
  CHECK_FALSE(st.changed(t));
  CHECK_FALSE(st.change(t).has_value());
  for (int32_t n : {mm, add, relu}) {
    REQUIRE(st.changed(n));
    CHECK(st.change(n)->run == 3);
  }
  CHECK(st.change(mm)->what == "input 0 'x': [2,4] -> [5,4]; output 0 'matmul_0': [2,3] -> [5,3]");
  CHECK(st.change(add)->what ==
        "input 0 'matmul_0': [2,3] -> [5,3]; output 0 'add_0': [2,3] -> [5,3]");  // not the bias
  CHECK(st.change(relu)->what == "input 0 'add_0': [2,3] -> [5,3]; output 0 'y': [2,3] -> [5,3]");
  // The latest run's shapes.
  CHECK(st.input_shapes(mm) == std::vector<Shape>{{5, 4}, {4, 3}});
  CHECK(st.output_shapes(mm) == std::vector<Shape>{{5, 3}});
  CHECK(st.input_shapes(t) == std::vector<Shape>{{3, 4}});
  CHECK(st.output_shapes(t) == std::vector<Shape>{{4, 3}});
}

TEST_CASE("ShapeTracker: one data set repeated, or several with the same shapes: all stable") {
  Graph g = mlp();
  SUBCASE("one data set repeated") {
    ShapeTracker st(g);
    const std::vector<Tensor> feed = batch(2);
    warm_up(g, st, {feed, feed, feed});
    CHECK(st.stable() == std::vector<bool>(4, true));
  }
  SUBCASE("several data sets, same shapes") {
    ShapeTracker st(g);
    warm_up(g, st, {batch(2, 1), batch(2, 2), batch(2, 3)});
    CHECK(st.stable() == std::vector<bool>(4, true));
    for (int32_t n = 0; n < 4; ++n) CHECK_FALSE(st.changed(n));
  }
  SUBCASE("several data sets, different batch at run 2") {
    ShapeTracker st(g);
    warm_up(g, st, {batch(2), batch(3), batch(2)});
    CHECK(st.stable() == std::vector<bool>{true, false, false, false});
    CHECK(st.change(node_named(g, "y"))->run == 2);
  }
  SUBCASE("a single run marks everything stable") {
    ShapeTracker st(g);
    CHECK(st.stable() == std::vector<bool>(4, false));  // nothing observed yet
    warm_up(g, st, {batch(9)});
    CHECK(st.stable() == std::vector<bool>(4, true));
  }
}

TEST_CASE("ShapeTracker: attention block with a changing sequence length, changed is sticky") {
  Graph g = attention();
  ShapeTracker st(g);
  Interpreter interp(g);
  OpObserver* obs[] = {&st};
  const int64_t lengths[] = {4, 4, 7, 4};
  for (int r = 0; r < 4; ++r) {
    st.begin_run();
    interp.run(seq(lengths[r]), obs);
    st.end_run();
    if (r == 1) {  // two runs with seq 4: nothing changed yet
      CHECK(st.stable() == std::vector<bool>(g.nodes.size(), true));
    }
  }
  const int32_t wq = node_named(g, "wq_scaled");
  CHECK(st.stable()[wq]);
  CHECK_FALSE(st.changed(wq));
  for (const char* name : {"q", "k", "v", "kt", "scores", "probs", "context", "out"}) {
    CAPTURE(name);
    const int32_t n = node_named(g, name);
    REQUIRE(st.changed(n));
    CHECK(st.change(n)->run == 3);  // run 4 is back to seq 4, but changed stays changed
    CHECK_FALSE(st.stable()[n]);
  }
  CHECK(st.change(node_named(g, "q"))->what ==
        "input 0 'x': [1,4,8] -> [1,7,8]; output 0 'q': [1,4,8] -> [1,7,8]");
  CHECK(st.change(node_named(g, "scores"))->what ==
        "input 0 'q': [1,4,8] -> [1,7,8]; input 1 'kt': [1,8,4] -> [1,8,7]; "
        "output 0 'scores': [1,4,4] -> [1,7,7]");
  CHECK(st.change(node_named(g, "out"))->what ==
        "input 0 'context': [1,4,8] -> [1,7,8]; output 0 'out': [4,8] -> [7,8]");
  // Shapes are those of the latest run (seq 4 again).
  CHECK(st.output_shapes(node_named(g, "probs")) == std::vector<Shape>{{1, 4, 4}});
}

TEST_CASE("ShapeTracker: a change at the last warm-up run") {
  Graph g = attention();
  ShapeTracker st(g);
  warm_up(g, st, {seq(4), seq(4), seq(4), seq(5)});
  CHECK(st.change(node_named(g, "probs"))->run == 4);
  CHECK(st.stable()[node_named(g, "wq_scaled")]);
}

TEST_CASE("ShapeTracker: an absent optional input differs from a present scalar") {
  GraphBuilder b("clip");
  ValueId x = b.input("x", DType::f32, {3});
  ValueId hi = b.constant("hi", Tensor::scalar(1.0f));
  b.output(b.clip(x, kNoValue, hi), "y");
  Graph g = b.build();
  const Node& clip = g.nodes[0];
  const Tensor xs = Tensor::zeros(DType::f32, {3}), bound = Tensor::scalar(0.5f);
  const Tensor out = Tensor::zeros(DType::f32, {3});
  auto observe = [&](ShapeTracker& st, const Tensor& lo, const Tensor& high) {
    const Tensor ins[] = {xs, lo, high};
    st.begin_run();
    st.on_op(OpEvent{0, clip, ins, std::span<const Tensor>(&out, 1), 10});
    st.end_run();
  };

  ShapeTracker st(g);
  observe(st, Tensor{}, bound);
  CHECK(st.input_shapes(0) == std::vector<Shape>{{3}, {}, {}});
  observe(st, Tensor{}, bound);
  CHECK(st.stable() == std::vector<bool>{true});
  observe(st, bound, bound);
  REQUIRE(st.changed(0));
  CHECK(st.change(0)->run == 3);
  CHECK(st.change(0)->what == "input 1: absent -> []");  // no value: no name

  ShapeTracker back(g);  // input 1 present, then absent
  observe(back, bound, bound);
  observe(back, Tensor{}, bound);
  REQUIRE(back.changed(0));
  CHECK(back.change(0)->what == "input 1: [] -> absent");

  ShapeTracker drop(g);  // input 2 (a present scalar), then absent
  observe(drop, Tensor{}, bound);
  observe(drop, Tensor{}, Tensor{});
  REQUIRE(drop.changed(0));
  CHECK(drop.change(0)->what == "input 2 'hi': [] -> absent");
}

TEST_CASE("ShapeTracker: a rank change is a change") {
  Graph g = mlp();
  ShapeTracker st(g);
  const Node& relu = g.nodes[3];
  const Tensor a = Tensor::zeros(DType::f32, {6}), b = Tensor::zeros(DType::f32, {2, 3});
  for (const Tensor* t : {&a, &b}) {
    st.begin_run();
    st.on_op(OpEvent{3, relu, std::span<const Tensor>(t, 1), std::span<const Tensor>(t, 1), 1});
  }
  st.end_run();
  REQUIRE(st.changed(3));
  CHECK(st.change(3)->what == "input 0 'add_0': [6] -> [2,3]; output 0 'y': [6] -> [2,3]");
  // Nor has a value whose rank changed a symbolic shape, or one no run made.
  const ShapeTracker::SymbolicDims sd = st.symbolic_dims();
  CHECK_FALSE(sd.values[relu.outputs[0]].has_value());
  CHECK_FALSE(sd.values[g.inputs[0]].has_value());
}

TEST_CASE("ShapeTracker: an op not observed in a run is changed, not stable") {
  Graph g = mlp();
  ShapeTracker st(g);
  const Tensor t = Tensor::zeros(DType::f32, {2, 3});
  auto event = [&](int32_t n) {
    return OpEvent{n, g.nodes[n], std::span<const Tensor>(&t, 1), std::span<const Tensor>(&t, 1),
                   1};
  };
  st.begin_run();
  for (int32_t n = 0; n < 4; ++n) st.on_op(event(n));
  st.begin_run();  // closes run 1
  for (int32_t n = 0; n < 3; ++n) st.on_op(event(n));
  st.end_run();
  CHECK(st.runs() == 2);
  CHECK(st.stable() == std::vector<bool>{true, true, true, false});
  REQUIRE(st.changed(3));
  CHECK(st.change(3)->run == 2);
  CHECK(st.change(3)->what == "not run in run 2");
  // Observed again in run 3: still changed.
  st.begin_run();
  for (int32_t n = 0; n < 4; ++n) st.on_op(event(n));
  st.end_run();
  CHECK(st.change(3)->run == 2);
  CHECK(st.stable() == std::vector<bool>{true, true, true, false});
}

TEST_CASE("ShapeTracker: mark_changed after warm-up (a guard miss) keeps the first change") {
  Graph g = mlp();
  ShapeTracker st(g);
  warm_up(g, st, {batch(2), batch(2), batch(5)});
  st.mark_changed(0, 7, "guard miss: input 0 'wt'");
  REQUIRE(st.changed(0));
  CHECK(st.change(0)->run == 7);
  CHECK(st.stable() == std::vector<bool>(4, false));
  st.mark_changed(0, 9, "again");
  st.mark_changed(1, 9, "later");
  CHECK(st.change(0)->what == "guard miss: input 0 'wt'");
  CHECK(st.change(1)->run == 3);
}

TEST_CASE("ShapeTracker: misuse is an internal error, not a crash") {
  Graph g = mlp();
  ShapeTracker st(g);
  const Tensor t = Tensor::zeros(DType::f32, {2, 3});
  const OpEvent e{3, g.nodes[3], std::span<const Tensor>(&t, 1), std::span<const Tensor>(&t, 1), 1};
  CHECK(contains(error_of([&] { st.on_op(e); }), "outside begin_run()"));
  CHECK(contains(error_of([&] { (void)st.changed(4); }), "node 4 out of range (4 nodes)"));
}

// ---- symbolic dims (the dynamic tier's view of the warm-up)

TEST_CASE("ShapeTracker: symbolic dims of the attention block, one symbol named by dim_param") {
  Graph g = attention();
  ShapeTracker st(g);
  warm_up(g, st, {seq(4), seq(7), seq(5)});
  const ShapeTracker::SymbolicDims sd = st.symbolic_dims();
  REQUIRE(sd.symbols.size() == 1);
  CHECK(sd.symbols[0].name == "seq");
  CHECK(sd.symbols[0].seen == Ints{4, 7, 5});
  const auto shape_of = [&](const char* name) {
    const ValueId v = g.find_value(name);
    REQUIRE(v != kNoValue);
    REQUIRE(sd.values[v].has_value());
    return sym_shape_str(*sd.values[v], sd.symbols);
  };
  CHECK(shape_of("x") == "[1,seq,8]");
  CHECK(shape_of("scores") == "[1,seq,seq]");
  CHECK(shape_of("kt") == "[1,8,seq]");
  CHECK(shape_of("out") == "[seq,8]");
  CHECK(shape_of("wq_scaled") == "[8,8]");
}

namespace {
// x [n,4] -> Concat(x, x) on axis 0 -> [2n,4]; Pad one row at the end -> [2n+1,4]; and an
// unrelated y [m,4] -> Relu.
Graph related_dims() {
  GraphBuilder b("related");
  ValueId x = b.input("x", DType::f32, {Dim(), 4});
  ValueId y = b.input("y", DType::f32, {Dim(), 4});
  ValueId cat = b.node(OpKind::Concat, {x, x}, {{"axis", int64_t{0}}}, 1, "cat").front();
  ValueId pad = b.node(OpKind::Pad, {cat, b.ints({0, 0, 1, 0})}, {}, 1, "pad").front();
  b.output(pad, "p");
  b.output(b.node(OpKind::Relu, {y}, {}, 1, "r").front(), "q");
  return b.build();
}
std::vector<Tensor> xy(int64_t n, int64_t m) {
  return {random_f32({n, 4}, 1), random_f32({m, 4}, 2)};
}
}  // namespace

TEST_CASE("ShapeTracker: affine relations need three distinct values of the symbol") {
  Graph g = related_dims();
  const auto shapes = [&](ShapeTracker& st) {
    const ShapeTracker::SymbolicDims sd = st.symbolic_dims();
    std::string out;
    for (const char* name : {"x", "cat", "p", "y"})
      out += sym_shape_str(*sd.values[g.find_value(name)], sd.symbols) + " ";
    return out;
  };
  SUBCASE("three values: 2*s and 2*s+1 relate to x's symbol; y's equal values join it") {
    ShapeTracker st(g);
    warm_up(g, st, {xy(3, 3), xy(5, 5), xy(4, 4)});
    CHECK(shapes(st) == "[s0,4] [2*s0,4] [2*s0+1,4] [s0,4] ");
  }
  SUBCASE("two values: observation relates nothing; only Pad's shape rule relates p to cat") {
    ShapeTracker st(g);
    warm_up(g, st, {xy(3, 1), xy(5, 2)});
    CHECK(shapes(st) == "[s0,4] [s2,4] [s2+1,4] [s1,4] ");  // numbered in value order: y is 1
  }
  SUBCASE("y differs from x in one run: y is a symbol of its own") {
    ShapeTracker st(g);
    warm_up(g, st, {xy(3, 3), xy(5, 5), xy(4, 6)});
    CHECK(shapes(st) == "[s0,4] [2*s0,4] [2*s0+1,4] [s1,4] ");
  }
  SUBCASE("a rank change, or a run that failed, leaves no trace in the dims") {
    ShapeTracker st(g);
    warm_up(g, st, {xy(3, 3), xy(5, 5)});
    st.begin_run();
    Interpreter interp(g);
    OpObserver* obs[] = {&st};
    interp.run(xy(9, 9), obs);
    st.abort_run();  // as if run 3 never happened
    warm_up(g, st, {xy(4, 4)});
    CHECK(shapes(st) == "[s0,4] [2*s0,4] [2*s0+1,4] [s0,4] ");
    CHECK(st.symbolic_dims().symbols[0].seen == Ints{3, 5, 4});
  }
}

TEST_CASE("bind: symbols from the dims that name them, every other dim checked") {
  const SymShape p{SymDim::constant(2), SymDim{0, 1, 0}, SymDim{1, 2, 1}, SymDim{0, 1, 1}};
  std::vector<int64_t> syms(2, 0);
  std::vector<bool> bound(2, false);
  REQUIRE(bind_symbols(p, {2, 5, 7, 6}, syms, bound));
  CHECK(syms == std::vector<int64_t>{5, 3});
  CHECK(eval_shape(p, syms) == Shape{2, 5, 7, 6});
  std::vector<bool> none(2, false);
  CHECK_FALSE(bind_symbols(p, {3, 5, 7, 6}, syms, none));  // a constant differs
  none.assign(2, false);
  CHECK_FALSE(bind_symbols(p, {2, 5, 8, 6}, syms, none));  // 2*s1+1 cannot be 8
  none.assign(2, false);
  CHECK_FALSE(bind_symbols(p, {2, 5, 7, 7}, syms, none));  // s0+1 with s0 = 5
  none.assign(2, false);
  CHECK_FALSE(bind_symbols(p, {2, 5, 7}, syms, none));  // rank
  none.assign(2, false);
  CHECK_FALSE(bind_symbols(SymShape{SymDim{0, 1, 2}}, {1}, syms, none));  // s0 = -1
  // Bound symbols are checked, not rebound.
  std::vector<bool> first(2, false);
  REQUIRE(bind_symbols(SymShape{SymDim{0, 1, 0}}, {4}, syms, first));
  CHECK_FALSE(bind_symbols(SymShape{SymDim{0, 1, 0}}, {5}, syms, first));
  CHECK(sym_shape_str(p, {{"n", {}}, {"h", {}}}) == "[2,n,2*h+1,n+1]");
}

TEST_CASE(
    "bind: a divided dim rounds down, binds nothing and is checked once its symbol is bound") {
  const SymDim half_up{0, 1, 1, 2};  // (w+1)/2: a stride-2 Conv's output width
  CHECK(sym_dim_str(half_up, {{"w", {}}}) == "(w+1)/2");
  CHECK(sym_dim_str(SymDim{0, 3, 0, 4}, {{"w", {}}}) == "3*w/4");
  const int64_t w7[] = {7}, w0[] = {0};
  CHECK(half_up.value(w7) == 4);
  CHECK(SymDim{0, 1, -3, 2}.value(w0) == -2);  // floor(-3/2), not -1
  CHECK(half_up.plus(1) == SymDim{0, 1, 3, 2});
  CHECK(half_up.divided(2) == SymDim{0, 1, 1, 4});
  CHECK(SymDim::constant(7).divided(2) == SymDim::constant(3));
  // The divided dim comes first: the first pass skips it, the second checks it.
  const SymShape out{half_up}, in{SymDim{0, 1, 0}};
  const SymShape* patterns[] = {&out, &in};
  const Shape a{4}, b{7}, bad{5};
  std::vector<int64_t> syms(1, 0);
  std::vector<bool> bound(1, false);
  const Shape* good[] = {&a, &b};
  CHECK(bind_all(patterns, good, syms, bound));
  CHECK(syms[0] == 7);
  bound.assign(1, false);
  const Shape* wrong[] = {&bad, &b};
  CHECK_FALSE(bind_all(patterns, wrong, syms, bound));
  // Alone, a divided dim cannot bind its symbol.
  bound.assign(1, false);
  const SymShape* only[] = {&out};
  const Shape* just[] = {&a};
  CHECK_FALSE(bind_all(only, just, syms, bound));
}

TEST_CASE("symbolic dims: a strided window's output size from the op's shape rule") {
  // x [1, 2, w] -> Conv (k 3, stride 2, pad 1) -> Relu -> MaxPool (k 2, stride 2).
  GraphBuilder b("strided");
  const ValueId x = b.input("x", DType::f32, {1, 2, Dim("w")});
  const ValueId c = b.conv(x, b.constant("k", test::random_f32({4, 2, 3}, 1)),
                           Attributes{{"strides", Ints{2}}, {"pads", Ints{1, 1}}});
  const ValueId r = b.relu(c);
  b.output(b.max_pool(r, Attributes{{"kernel_shape", Ints{2}}, {"strides", Ints{2}}}));
  const Graph g = b.build();
  ShapeTracker st(g);
  // Widths seen twice with the same parity: observation alone would give the outputs symbols
  // of their own.
  warm_up(g, st,
          {{test::random_f32({1, 2, 192}, 2)},
           {test::random_f32({1, 2, 100}, 3)},
           {test::random_f32({1, 2, 192}, 4)}});
  const ShapeTracker::SymbolicDims sd = st.symbolic_dims();
  REQUIRE(sd.symbols.size() == 1);
  CHECK(sym_shape_str(*sd.values[c], sd.symbols) == "[1,4,(w+1)/2]");
  CHECK(sym_shape_str(*sd.values[r], sd.symbols) == "[1,4,(w+1)/2]");
  CHECK(sym_shape_str(*sd.values[g.outputs[0]], sd.symbols) == "[1,4,(w+1)/4]");
}

TEST_CASE("a divided dim in lowest terms compares equal to the same function") {
  CHECK(SymDim{0, 2, 0}.plus(1).divided(2) == SymDim{0, 1, 0});  // (2s+1)/2 = s
  CHECK(SymDim{0, 512, 192}.divided(64) == SymDim{0, 8, 3});     // (512s+192)/64 = 8s+3
  CHECK(SymDim{0, 4, 1}.divided(6) == SymDim{0, 2, 0, 3});       // (4s+1)/6 = (2s)/3
  CHECK(SymDim{0, 4, -1}.divided(6) == SymDim{0, 2, -1, 3});     // (4s-1)/6 = (2s-1)/3
  for (int64_t v = 0; v < 50; ++v) {
    const int64_t one[] = {v};
    CHECK(SymDim{0, 4, -1, 6}.value(one) == SymDim{0, 4, -1}.divided(6).value(one));
  }
}

}  // namespace test_shape_tracker
