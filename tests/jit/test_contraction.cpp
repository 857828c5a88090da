// MatMul and Gemm inside regions: the product through the runtime GEMM, consumers fused as the
// epilogue; compared with the interpreter over plain, batched, broadcast, vector and transposed
// operands, computed operands, every Gemm option, f64, and split over threads.
#include "jit/region_test_util.h"

using namespace sgraph;
using namespace sgraph::test::region;

namespace {

struct MatMulCase {
  Shape a, b;
};

const std::vector<MatMulCase> kMatMulCases = {
    {{1, 1}, {1, 1}},        {{7, 5}, {5, 3}},
    {{64, 128}, {128, 96}},  {{5}, {5, 3}},
    {{7, 5}, {5}},           {{5}, {5}},
    {{2, 3, 7, 5}, {5, 4}},  {{2, 1, 7, 5}, {3, 5, 4}},
    {{4, 7, 5}, {1, 5, 6}},  {{3, 1, 9}, {2, 1, 9, 1}},
    {{1, 1023}, {1023, 17}}, {{130, 33}, {33, 70}},
};

}  // namespace

TEST_CASE("JIT MatMul: product and bias + activation epilogue vs the interpreter") {
  uint32_t seed = 100;
  for (const auto& [sa, sb] : kMatMulCases) {
    INFO(shape_str(sa) << " x " << shape_str(sb));
    const Tensor a = test::random_f32(sa, seed++), bt = test::random_f32(sb, seed++);
    {  // MatMul then Relu(. + 0.5)
      GraphBuilder b;
      const ValueId ia = b.input("a", DType::f32, to_dims(sa));
      const ValueId p = b.matmul(ia, b.input("b", DType::f32, to_dims(sb)));
      b.output(b.relu(b.add(p, b.scalar(0.5f))));
      check_region(b.build(), {a, bt}, 1e-4, 1e-5);
    }
    {  // computed operands: both scaled inside the region, product also a region output
      GraphBuilder b;
      const ValueId ia = b.input("a", DType::f32, to_dims(sa));
      const ValueId x = b.mul(ia, b.scalar(2.0f));
      const ValueId y = b.sub(b.input("b", DType::f32, to_dims(sb)), b.scalar(0.25f));
      const ValueId p = b.matmul(x, y);
      b.output(p);
      b.output(b.tanh(p));
      check_region(b.build(), {a, bt}, 1e-4, 1e-5);
    }
  }
}

TEST_CASE("JIT MatMul: a Softmax made row by row is read in place as an operand") {
  // softmax(q k^T) v: the GEMM reads the buffer the Softmax fills (a local one, or the region
  // output when the probabilities are an output too); as the left and the right operand, with a
  // broadcast batch.
  const Tensor q = test::random_f32({2, 3, 8, 16}, 1), k = test::random_f32({2, 3, 8, 16}, 2);
  const Tensor v = test::random_f32({3, 8, 5}, 3), w = test::random_f32({4, 8}, 4);
  for (bool probs_out : {false, true})
    for (int threads : {1, 2}) {
      INFO("probabilities an output: " << probs_out << ", threads " << threads);
      GraphBuilder b;
      const ValueId kt = b.transpose(b.input("k", DType::f32, {2, 3, 8, 16}),
                                     Attributes{{"perm", Ints{0, 1, 3, 2}}});
      const ValueId s = b.matmul(b.input("q", DType::f32, {2, 3, 8, 16}), kt);
      const ValueId p = b.softmax(b.mul(s, b.scalar(0.25f)));
      b.output(b.matmul(p, b.input("v", DType::f32, {3, 8, 5})));
      b.output(b.relu(b.matmul(b.input("w", DType::f32, {4, 8}), p)));
      if (probs_out) b.output(p);
      check_region(b.build(), {k, q, v, w}, 1e-4, 1e-6, threads);
    }
}

TEST_CASE("JIT MatMul: transposed operands, in place and materialised") {
  // q[2,3,8,16] x Transpose(k[2,3,8,16], perm 0,1,3,2): the transpose is passed to the GEMM.
  const Tensor q = test::random_f32({2, 3, 8, 16}, 1), k = test::random_f32({2, 3, 8, 16}, 2);
  {
    GraphBuilder b;
    const ValueId iq = b.input("q", DType::f32, {2, 3, 8, 16});
    const ValueId kt = b.transpose(b.input("k", DType::f32, {2, 3, 8, 16}),
                                   Attributes{{"perm", Ints{0, 1, 3, 2}}});
    const ValueId s = b.matmul(iq, kt);
    b.output(b.softmax(b.mul(s, b.scalar(0.25f))));
    check_region(b.build(), {q, k}, 1e-4, 1e-6);
  }
  {  // a 2-D default transpose on the left
    const Tensor a = test::random_f32({9, 6}, 3), w = test::random_f32({9, 4}, 4);
    GraphBuilder b;
    const ValueId at = b.transpose(b.input("a", DType::f32, {9, 6}));
    b.output(b.exp(b.matmul(at, b.input("w", DType::f32, {9, 4}))));
    check_region(b.build(), {a, w}, 1e-4, 1e-6);
  }
  {  // a transpose of other dims is materialised
    GraphBuilder b;
    const ValueId iq = b.input("q", DType::f32, {3, 2, 8, 16});
    const ValueId kt = b.transpose(b.input("k", DType::f32, {2, 3, 8, 16}),
                                   Attributes{{"perm", Ints{1, 0, 3, 2}}});
    b.output(b.relu(b.matmul(iq, kt)));
    check_region(b.build(), {test::random_f32({3, 2, 8, 16}, 5), k}, 1e-4, 1e-6);
  }
}

TEST_CASE("JIT MatMul: a computed operand transposed across its rows is copied rows in order") {
  // Attention's K^T: k [2, 5, 12] computed (Exp), split [2, 5, 3, 4] and transposed (0, 2, 3, 1)
  // to [2, 3, 4, 5]: its last dim runs across k's rows. The operand is filled with its last two
  // dims swapped ([2, 3, 5, 4], k's rows in order) and the GEMM reads it transposed. Other perms
  // that move the input's last dim to the second-to-last place, as B and as A (an A of several M
  // dims is never swapped: its items' rows are read as one matrix), and 2-D; all against the
  // interpreter, so a swapped buffer read the wrong way round shows.
  struct Case {
    Shape k;  // the computed operand's input
    Ints perm;
    bool as_a;
  };
  for (const Case& c :
       {Case{{2, 3, 5, 4}, {0, 1, 3, 2}, false}, Case{{2, 5, 3, 4}, {0, 2, 3, 1}, false},
        Case{{3, 2, 5, 4}, {1, 0, 3, 2}, false}, Case{{5, 2, 3, 4}, {2, 1, 3, 0}, false},
        Case{{2, 5, 3, 4}, {0, 2, 3, 1}, true}, Case{{5, 4}, {1, 0}, false},
        Case{{5, 4}, {1, 0}, true}}) {
    CAPTURE(shape_str(c.k));
    CAPTURE(c.perm.size());
    GraphBuilder b;
    const ValueId k = b.exp(b.input("k", DType::f32, to_dims(c.k)));
    const ValueId kt = b.transpose(k, Attributes{{"perm", c.perm}});
    Shape t(c.perm.size());
    for (size_t d = 0; d < t.size(); ++d) t[d] = c.k[static_cast<size_t>(c.perm[d])];
    Shape other = t;  // B: [..., M=3, K]; A: [..., N=3] against kt as [..., M, K]
    const size_t r = t.size();
    if (c.as_a) {
      other[r - 2] = t[r - 1];
      other[r - 1] = 3;
    } else {
      other[r - 1] = other[r - 2];
      other[r - 2] = 3;
    }
    const ValueId x = b.input("x", DType::f32, to_dims(other));
    b.output(b.tanh(c.as_a ? b.matmul(kt, x) : b.matmul(x, kt)));
    check_region(b.build(), {test::random_f32(c.k, 1, -1, 1), test::random_f32(other, 2)}, 1e-4,
                 1e-6);
  }
}

TEST_CASE("JIT Gemm: transA/transB, alpha, beta, C broadcasts, no C") {
  const int64_t M = 13, N = 9, K = 21;
  uint32_t seed = 300;
  const std::vector<std::pair<Shape, bool>> cs = {
      {{N}, true}, {{M, 1}, true}, {{M, N}, true}, {{1}, true}, {{}, false}};
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const auto& [sc, has_c] : cs)
        for (const auto& [alpha, beta] : {std::pair{1.0, 1.0}, std::pair{0.5, -2.0}}) {
          INFO("transA " << ta << " transB " << tb << " C " << shape_str(sc) << " alpha " << alpha
                         << " beta " << beta);
          const Shape sa = ta ? Shape{K, M} : Shape{M, K}, sb = tb ? Shape{N, K} : Shape{K, N};
          std::vector<Tensor> feeds = {test::random_f32(sa, seed++), test::random_f32(sb, seed++)};
          GraphBuilder b;
          std::vector<ValueId> in = {b.input("a", DType::f32, to_dims(sa)),
                                     b.input("b", DType::f32, to_dims(sb))};
          if (has_c) {
            in.push_back(b.input("c", DType::f32, to_dims(sc)));
            feeds.push_back(test::random_f32(sc, seed++));
          }
          const ValueId y = b.node(OpKind::Gemm, in,
                                   {{"transA", int64_t{ta}},
                                    {"transB", int64_t{tb}},
                                    {"alpha", alpha},
                                    {"beta", beta}})
                                .front();
          b.output(b.sigmoid(y));
          check_region(b.build(), feeds, 1e-4, 1e-6);
        }
}

TEST_CASE("JIT MatMul: f64, and large products split over threads") {
  {
    GraphBuilder b;
    const ValueId ia = b.input("a", DType::f64, {3, 17, 11});
    const ValueId p = b.matmul(ia, b.input("b", DType::f64, {11, 5}));
    b.output(b.add(p, b.input("c", DType::f64, {5})));
    check_region(b.build(),
                 {random_of(DType::f64, {3, 17, 11}, 1, -1, 1),
                  random_of(DType::f64, {11, 5}, 2, -1, 1), random_of(DType::f64, {5}, 3, -1, 1)},
                 1e-12, 1e-12);
  }
  for (const auto& [sa, sb] : std::vector<MatMulCase>{
           {{256, 64}, {64, 96}}, {{4, 100, 64}, {64, 33}}, {{1, 64}, {64, 4097}}}) {
    INFO(shape_str(sa) << " x " << shape_str(sb));
    GraphBuilder b;
    const ValueId ia = b.input("a", DType::f32, to_dims(sa));
    const ValueId p = b.matmul(ia, b.input("b", DType::f32, to_dims(sb)));
    b.output(b.relu(b.add(p, b.scalar(-0.1f))));
    check_region(b.build(), {test::random_f32(sa, 7), test::random_f32(sb, 8)}, 1e-4, 1e-5,
                 /*threads=*/3);
  }
}

TEST_CASE("JIT MatMul/Gemm: a large f32 constant B is packed once per plan") {
  const auto run = [](const Graph& g, const std::vector<Tensor>& feeds, bool want_packed,
                      int threads) {
    const RegionRun r = run_region(g, feeds, shared_jit(), threads);
    CHECK(r.packed_b == want_packed);
    REQUIRE(r.got.size() == r.want.size());
    for (size_t i = 0; i < r.got.size(); ++i)
      test::check_tensors_close(r.got[i], r.want[i], 1e-4, 1e-5);
  };
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    {  // 16 rows by [256, 1000] (and a transposed A): too few rows to split, so the threads split
       // C's columns, B's panels (packed_columns), the last part partial
      GraphBuilder b;
      const ValueId x = b.input("x", DType::f32, {16, 256});
      const ValueId w = b.constant("w", test::random_f32({256, 1000}, 17));
      b.output(b.add(b.matmul(x, w), b.scalar(0.5f)));
      const ValueId xt = b.transpose(b.input("xt", DType::f32, {256, 16}));
      b.output(b.matmul(xt, w));
      run(b.build(), {test::random_f32({16, 256}, 18), test::random_f32({256, 16}, 19)}, true,
          threads);
    }
    {  // batched x [2,3,40] by W [40,120] + bias, Relu: the batch items are one product
      GraphBuilder b;
      const ValueId x = b.input("x", DType::f32, {2, 3, 40});
      const ValueId w = b.constant("w", test::random_f32({40, 120}, 3));
      const ValueId y = b.add(b.matmul(x, w), b.constant("bias", test::random_f32({120}, 4)));
      b.output(b.relu(y));
      run(b.build(), {test::random_f32({2, 3, 40}, 5)}, true, threads);
    }
    {  // Gemm transB with alpha and C, A transposed in place
      GraphBuilder b;
      const ValueId a = b.transpose(b.input("a", DType::f32, {100, 33}));
      const ValueId w = b.constant("w", test::random_f32({70, 100}, 6));
      const ValueId c = b.constant("c", test::random_f32({70}, 7));
      b.output(b.node(OpKind::Gemm, {a, w, c},
                      Attributes{{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}})[0]);
      run(b.build(), {test::random_f32({100, 33}, 8)}, true, threads);
    }
    {  // 300 rows: more than one block of rows of A, split over the threads
      GraphBuilder b;
      const ValueId x = b.input("x", DType::f32, {300, 64});
      b.output(b.tanh(b.matmul(x, b.constant("w", test::random_f32({64, 96}, 9)))));
      run(b.build(), {test::random_f32({300, 64}, 10)}, true, threads);
    }
  }
  {  // small, computed, or batched constants are not packed
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {4, 8});
    b.output(b.matmul(x, b.constant("small", test::random_f32({8, 16}, 11))));
    run(b.build(), {test::random_f32({4, 8}, 12)}, false, 1);
  }
  {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {4, 64});
    const ValueId w = b.mul(b.constant("w", test::random_f32({64, 96}, 13)), b.scalar(2.0f));
    b.output(b.matmul(x, w));
    run(b.build(), {test::random_f32({4, 64}, 14)}, false, 1);
  }
  {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {2, 4, 64});
    b.output(b.matmul(x, b.constant("w", test::random_f32({2, 64, 96}, 15))));
    run(b.build(), {test::random_f32({2, 4, 64}, 16)}, false, 1);
  }
}

TEST_CASE("JIT MatMul: integer contractions are not compiled, with the reason") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::i64, {2, 2});
  b.output(b.add(b.matmul(x, x), x));
  const Graph g = b.build();
  CHECK(test::contains(why_not_compilable(g, whole_graph(g)), "(MatMul): contraction of i64"));
}
