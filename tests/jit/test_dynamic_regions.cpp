// Dynamic regions: kernels whose changing dims are symbols (jit::compile_dynamic_region), compiled
// once from the symbolic shapes a ShapeTracker finds in a warm-up, then run on many values of the
// symbols and checked against the interpreter.
#include "jit/region_test_util.h"
#include "runtime/shape_tracker.h"

using namespace sgraph;
using namespace sgraph::test;
using namespace sgraph::test::region;

namespace {

const int64_t kValues[] = {1, 2, 7, 17, 64, 1023};

// x [n,32] * w [32] + b [1,32] -> Tanh -> + z [n,1] -> Sigmoid; and x - z as a second output.
Graph rows() {
  GraphBuilder b("rows");
  ValueId x = b.input("x", DType::f32, {Dim("n"), 32});
  ValueId z = b.input("z", DType::f32, {Dim("n"), 1});
  ValueId w = b.constant("w", random_f32({32}, 3));
  ValueId bias = b.constant("b", random_f32({1, 32}, 4));
  ValueId t = b.node(OpKind::Tanh, {b.add(b.mul(x, w), bias)}, {}, 1, "t").front();
  b.output(b.node(OpKind::Sigmoid, {b.add(t, z)}, {}, 1, "y").front(), "y");
  b.output(b.node(OpKind::Sub, {x, z}, {}, 1, "d").front(), "d");
  return b.build();
}
std::vector<Tensor> rows_feed(int64_t n) {
  return {random_f32({n, 32}, static_cast<uint32_t>(n)), random_f32({n, 1}, 99)};
}

}  // namespace

TEST_CASE("dynamic region: a symbolic outer dim, compiled once, every value checked") {
  const Graph g = rows();
  Dynamic d(g, {rows_feed(3), rows_feed(5)});
  REQUIRE(d.sd.symbols.size() == 1);
  CHECK(sym_shape_str(*d.sd.values[g.find_value("y")], d.sd.symbols) == "[n,32]");
  for (int64_t n : kValues) {
    CAPTURE(n);
    CHECK(d.run_and_check(rows_feed(n)));
    CHECK(d.run_and_check(rows_feed(n), /*threads=*/2));
  }
  CHECK(d.run_and_check(rows_feed(0)));  // empty: the nests do not run
  CHECK_FALSE(d.run_and_check({random_f32({4, 31}, 1), random_f32({4, 1}, 2)}));  // a static dim
  CHECK_FALSE(d.run_and_check({random_f32({4, 32}, 1), random_f32({5, 1}, 2)}));  // n != n
}

TEST_CASE("dynamic region: compiled serial, its nests are functions of their own") {
  // Code generation's loop strength reduction grows faster than linearly with one function's
  // loops over symbolic bounds (`sgraph check` on ppocr_mobile_v2_cls at 1 thread: 8.3 s of
  // compile in one function, 1.5 s split), so a serial dynamic kernel calls its nests; a static
  // kernel inlines them.
  const Graph g = rows();
  std::unique_ptr<Jit> jit = Jit::create();
  jit->keep_ir(true);
  {
    Dynamic d(g, {rows_feed(3), rows_feed(5)}, /*serial=*/true, *jit);
    REQUIRE(compiled(d.c));
    const std::string ir = jit->last_ir();
    CHECK(contains(ir, ".n0(ptr %0, i64 %1, i64 %2)"));  // define internal void @<kernel>.n0(...
    CHECK(contains(ir, ".n1(ptr nonnull %nest.ptrs"));   // call void @<kernel>.n1(...
    CHECK_FALSE(contains(ir, "sgraph_parallel_for"));
    for (int64_t n : kValues) {
      CAPTURE(n);
      CHECK(d.run_and_check(rows_feed(n)));
    }
    CHECK(d.run_and_check(rows_feed(0)));
  }
  const RegionRun run = run_region(g, rows_feed(7), *jit, 1, fresh_name(), /*serial=*/true);
  check_tensors_close(run.got[0], run.want[0], 1e-6);
  CHECK_FALSE(contains(jit->last_ir(), "define internal"));
}

TEST_CASE("dynamic region: a symbolic innermost dim broadcast against a static one") {
  // x [4,m] + c [4,1] -> Relu, * x; the vector loop over m has a remainder.
  GraphBuilder b("cols");
  ValueId x = b.input("x", DType::f32, {4, Dim("m")});
  ValueId c = b.constant("c", random_f32({4, 1}, 8));
  b.output(b.mul(b.node(OpKind::Relu, {b.add(x, c)}, {}, 1, "r").front(), x), "y");
  const Graph g = b.build();
  const auto feed = [](int64_t m) {
    return std::vector<Tensor>{random_f32({4, m}, static_cast<uint32_t>(m))};
  };
  Dynamic d(g, {feed(9), feed(16)});
  for (int64_t m : kValues) {
    CAPTURE(m);
    CHECK(d.run_and_check(feed(m)));
  }
}

TEST_CASE("dynamic region: two symbols, and a symbol that is one in some calls") {
  // a [p,q] + b [p,1] + c [1,q]: p and q change independently.
  GraphBuilder gb("two");
  ValueId a = gb.input("a", DType::f32, {Dim("p"), Dim("q")});
  ValueId bb = gb.input("b", DType::f32, {Dim("p"), 1});
  ValueId c = gb.input("c", DType::f32, {1, Dim("q")});
  gb.output(gb.node(OpKind::Max, {gb.add(a, bb), c}, {}, 1, "y").front(), "y");
  const Graph g = gb.build();
  const auto feed = [](int64_t p, int64_t q) {
    return std::vector<Tensor>{random_f32({p, q}, 1), random_f32({p, 1}, 2), random_f32({1, q}, 3)};
  };
  Dynamic d(g, {feed(2, 5), feed(3, 8), feed(6, 4)});
  REQUIRE(d.sd.symbols.size() == 2);
  for (int64_t p : kValues)
    for (int64_t q : {int64_t{1}, int64_t{3}, int64_t{33}}) {
      CAPTURE(p);
      CAPTURE(q);
      CHECK(d.run_and_check(feed(p, q)));
    }
}

TEST_CASE("dynamic region: an input dim related affinely to the symbol binds it") {
  // x [n] and a Pad'ed... no op makes 2n+1 elementwise, so the pattern is given: x [2*n+1] + y.
  GraphBuilder b("affine");
  ValueId x = b.input("x", DType::f32, {Dim()});
  ValueId y = b.input("y", DType::f32, {Dim()});
  b.output(b.add(x, y), "z");
  const Graph g = b.build();
  const auto feed = [](int64_t n) {
    return std::vector<Tensor>{random_f32({n}, 1), random_f32({n}, 2)};
  };
  Dynamic d(g, {feed(3), feed(5), feed(9)});
  // Overwrite the warm-up's patterns with 2*s+1 (what Concat/Pad would make upstream).
  for (auto& s : d.sd.values)
    if (s && !s->empty()) (*s)[0] = SymDim{0, 2, 1};
  shared_jit().remove(d.c.kernel.handle);
  d.c = compile_dynamic_region(shared_jit(), g, d.r, d.sd.values, 1, fresh_name());
  for (int64_t n : {1, 3, 15, 1025}) CHECK(d.run_and_check(feed(n)));
  CHECK_FALSE(d.run_and_check(feed(4)));  // not 2*s+1
}

TEST_CASE("dynamic region: contractions, rows and views over a symbolic length") {
  // x [2,s,8]: LayerNorm -> MatMul w [8,8] (batch folded into M) -> Reshape [2,s,2,4] ->
  // Transpose [2,2,s,4] = q; q x q^T [2,2,s,s] (a static batch, M and N symbolic) -> Softmax ->
  // x q [2,2,s,4] (K symbolic); ReduceMean over s; and x [2,s,8] x v [2,8,3] (items of symbolic
  // size, A's batch matching B's).
  GraphBuilder b("attn");
  ValueId x = b.input("x", DType::f32, {2, Dim("s"), 8});
  ValueId w = b.constant("w", random_f32({8, 8}, 21));
  ValueId v = b.constant("v", random_f32({2, 8, 3}, 22));
  ValueId gamma = b.constant("gamma", random_f32({8}, 23));
  ValueId beta = b.constant("beta", random_f32({8}, 24));
  ValueId ln = b.layer_normalization(x, gamma, beta);
  ValueId h = b.matmul(ln, w);
  ValueId r = b.reshape(h, b.ints({2, -1, 2, 4}));
  Attributes perm, perm_t, axis;
  perm.set("perm", Ints{0, 2, 1, 3});
  perm_t.set("perm", Ints{0, 1, 3, 2});
  axis.set("axis", int64_t{-1});
  ValueId q = b.transpose(r, perm);
  ValueId scores = b.matmul(q, b.transpose(q, perm_t));
  ValueId p = b.softmax(scores, axis);
  ValueId ctx = b.matmul(p, q);
  b.output(ctx, "ctx");
  b.output(b.node(OpKind::ReduceMean, {ctx}, test::axes_attr({2}, 1)).front(), "mean");
  b.output(b.matmul(x, v), "xv");
  const Graph g = b.build();
  const auto feed = [](int64_t s) {
    return std::vector<Tensor>{random_f32({2, s, 8}, static_cast<uint32_t>(s))};
  };
  Dynamic d(g, {feed(3), feed(5)});
  REQUIRE_MESSAGE(compiled(d.c), d.c.why_not);
  CHECK_FALSE(d.c.scratch_sym.empty());  // the products' buffers grow with s
  for (int64_t s : kValues) {
    CAPTURE(s);
    CHECK(d.run_and_check(feed(s), 1, 1e-5, 1e-6));
    CHECK(d.run_and_check(feed(s), /*threads=*/2, 1e-5, 1e-6));
  }
}

TEST_CASE("dynamic region: Softmax and LogSoftmax over a symbolic row, as region outputs") {
  // Each fills its region output row by row and reads it back; the sum of both reads them too.
  GraphBuilder b("rows");
  const ValueId x = b.input("x", DType::f32, {3, Dim("n")});
  const ValueId sm = b.softmax(x), ls = b.log_softmax(x);
  b.output(sm, "sm");
  b.output(ls, "ls");
  b.output(b.add(sm, ls), "sum");
  const Graph g = b.build();
  const auto feed = [](int64_t n) {
    return std::vector<Tensor>{random_f32({3, n}, static_cast<uint32_t>(n), -4, 4)};
  };
  Dynamic d(g, {feed(3), feed(5)});
  REQUIRE_MESSAGE(compiled(d.c), d.c.why_not);
  for (int64_t n : kValues) {
    CAPTURE(n);
    CHECK(d.run_and_check(feed(n), 1, 1e-5, 1e-6));
    CHECK(d.run_and_check(feed(n), /*threads=*/2, 1e-5, 1e-6));
  }
}

TEST_CASE("dynamic region: a MatMul over a symbolic batch shared by A and B") {
  // a [n,4,6] x b [n,6,5]: the items' offsets are filled at run time.
  GraphBuilder gb("bmm");
  ValueId a = gb.input("a", DType::f32, {Dim("n"), 4, 6});
  ValueId bb = gb.input("b", DType::f32, {Dim("n"), 6, 5});
  gb.output(gb.node(OpKind::Relu, {gb.matmul(a, bb)}).front(), "y");
  const Graph g = gb.build();
  const auto feed = [](int64_t n) {
    return std::vector<Tensor>{random_f32({n, 4, 6}, static_cast<uint32_t>(n)),
                               random_f32({n, 6, 5}, 7)};
  };
  Dynamic d(g, {feed(2), feed(3)});
  for (int64_t n : kValues) {
    CAPTURE(n);
    CHECK(d.run_and_check(feed(n)));
  }
}

TEST_CASE("dynamic region: a symbolic batch folded into M reads a transposed A through a copy") {
  // x [3,m,2,3] -> Gather (interpreted) -> g [m,2,3] -> Transpose [m,3,2] x w [2,1]: the region
  // input g is not one matrix of m*3 rows (the fuzzer's seed 1804000302 served such a region the
  // rows of the untransposed g).
  GraphBuilder gb("fold_t");
  ValueId g = gb.input("g", DType::f32, {Dim("m"), 2, 3});
  ValueId w = gb.constant("w", random_f32({2, 1}, 5));
  Attributes perm;
  perm.set("perm", Ints{0, 2, 1});
  gb.output(gb.matmul(gb.transpose(g, perm), w), "y");
  const Graph graph = gb.build();
  const auto feed = [](int64_t m) {
    return std::vector<Tensor>{random_f32({m, 2, 3}, static_cast<uint32_t>(m))};
  };
  Dynamic d(graph, {feed(4), feed(2)});
  for (int64_t m : kValues) {
    CAPTURE(m);
    CHECK(d.run_and_check(feed(m), 1, 1e-5, 1e-6));
  }
}

TEST_CASE("dynamic region: a packed constant B under items of a symbolic size gets no B offsets") {
  // Two static batch items whose A matrices have a symbolic number of rows, times one constant B
  // large enough to be packed: the GEMM call takes A's item offsets from a table built per call,
  // and the packed B none (the fuzzer's seed 1814001024 made such a call pass B's table too, which
  // the packed GEMM refuses: every call of the region threw).
  GraphBuilder gb("packed_items");
  ValueId x = gb.input("x", DType::f32, {2, Dim("n"), 8});
  ValueId w = gb.constant("w", random_f32({8, 512}, 3));
  gb.output(gb.relu(gb.matmul(x, w)), "y");
  const Graph graph = gb.build();
  const auto feed = [](int64_t n) {
    return std::vector<Tensor>{random_f32({2, n, 8}, static_cast<uint32_t>(n))};
  };
  Dynamic d(graph, {feed(4), feed(2)});
  for (int64_t n : kValues) {
    CAPTURE(n);
    CHECK(d.run_and_check(feed(n), 1, 1e-5, 1e-6));
  }
}

TEST_CASE("why_not_dynamic: what the dynamic tier does not compile yet, and why") {
  GraphBuilder b("no");
  ValueId x = b.input("x", DType::f32, {Dim("n"), 8});
  ValueId y = b.input("y", DType::f32, {Dim("m"), 8});
  ValueId w = b.constant("w", random_f32({8, 8}, 1));
  b.output(b.add(x, y), "s");  // n vs m: different symbols
  Attributes axis;
  axis.set("axis", int64_t{0});
  b.output(b.node(OpKind::Concat, {b.matmul(x, w), y}, axis).front(),
           "p");  // Concat along n and m: n + m is no one dim
  const Graph g = b.build();
  const auto feed = [](int64_t n, int64_t m) {
    return std::vector<Tensor>{random_f32({n, 8}, 1), random_f32({m, 8}, 2)};
  };
  const auto sd = symbolic_dims_of(g, {feed(2, 1), feed(3, 3), feed(4, 1)});
  CHECK(contains(why_not_dynamic(g, g.nodes[0], sd.values), "neither the output's nor 1"));
  CHECK(why_not_dynamic(g, g.nodes[1], sd.values).empty());  // MatMul over [n, 8] x [8, 8]
  CHECK(contains(why_not_dynamic(g, g.nodes[2], sd.values), "do not add up"));
  // A region containing such a node is not compiled, and says which node.
  Region r = whole_graph(g);
  r.dynamic = true;
  const CompiledRegion c = compile_dynamic_region(shared_jit(), g, r, sd.values, 2, fresh_name());
  CHECK_FALSE(compiled(c));
  CHECK(contains(c.why_not, "(Add)"));
}

TEST_CASE("dynamic region: symbolic-size buffers whose lifetimes do not overlap share a part") {
  // The static test's chain ("local buffers whose lifetimes do not overlap share the scratch
  // block") with a symbolic row count: six Softmaxes, each held whole in an [n,512] buffer that
  // only the next one reads, the first read again at the end. Laid end to end, six parts; grouped
  // by lifetime, at most three (the first, live to the end, and two neighbours). run_and_check
  // fills the block with NaN first, so a buffer overwritten while still read shows in the outputs.
  GraphBuilder b;
  ValueId v = b.input("x", DType::f32, {Dim("n"), 512}), first = kNoValue;
  for (int i = 0; i < 6; ++i) {
    v = b.softmax(b.mul(v, b.scalar(300.0f)));
    if (i == 0) first = v;
  }
  b.output(b.add(v, first));
  const Graph g = b.build();
  const auto feed = [](int64_t n) {
    return std::vector<Tensor>{random_f32({n, 512}, static_cast<uint32_t>(n), -4, 4)};
  };
  Dynamic d(g, {feed(3), feed(5)});
  REQUIRE_MESSAGE(compiled(d.c), d.c.why_not);
  size_t buffers = 0;
  for (const auto& group : d.c.scratch_sym) buffers += group.size();
  CHECK(buffers >= 6);
  CHECK(d.c.scratch_sym.size() <= 3);
  CHECK(d.c.scratch_sym.size() >= 2);  // (the first buffer and the ones it outlives: not one part)
  for (int64_t n : kValues) {
    CAPTURE(n);
    CHECK(d.run_and_check(feed(n), 1, 1e-4, 1e-6));
    CHECK(d.run_and_check(feed(n), /*threads=*/2, 1e-4, 1e-6));
  }
}
