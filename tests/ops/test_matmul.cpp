// MatMul and Gemm: hand-computed cases, and random inputs against a naive element-by-element
// reference written here (independent of the GEMM kernel).
#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
// numpy matmul, one output element at a time: batch dims broadcast, 1-D operands promoted.
Expected naive_matmul(const Tensor& a, const Tensor& b) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const size_t r = std::max(as.size(), bs.size());
  as.insert(as.begin(), r - as.size(), 1);
  bs.insert(bs.begin(), r - bs.size(), 1);
  const int64_t M = as[r - 2], K = as[r - 1], N = bs[r - 1];
  Shape batch(r - 2);
  for (size_t d = 0; d + 2 < r; ++d) batch[d] = std::max(as[d], bs[d]);
  Expected e;
  e.shape = batch;
  if (a.rank() > 1) e.shape.push_back(M);
  if (b.rank() > 1) e.shape.push_back(N);
  Shape idx(batch.size(), 0);
  for (int64_t bi = 0; bi < numel(batch); ++bi) {
    int64_t rem = bi, oa = 0, ob = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      idx[d] = rem % batch[d];
      rem /= batch[d];
    }
    for (size_t d = 0; d < batch.size(); ++d) {
      oa = oa * as[d] + (as[d] == 1 ? 0 : idx[d]);
      ob = ob * bs[d] + (bs[d] == 1 ? 0 : idx[d]);
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a.at_double((oa * M + i) * K + k) * b.at_double((ob * K + k) * N + j);
        e.values.push_back(s);
      }
  }
  return e;
}

void check_matmul(const Shape& sa, const Shape& sb, uint32_t seed, bool f64 = false) {
  CAPTURE(shape_str(sa));
  CAPTURE(shape_str(sb));
  const Tensor a = f64 ? random_f64(sa, seed) : test::random_f32(sa, seed);
  const Tensor b = f64 ? random_f64(sb, seed + 1) : test::random_f32(sb, seed + 1);
  const Expected e = naive_matmul(a, b);
  check_close(run_op(OpKind::MatMul, {a, b})[0], e.shape, e.values, f64 ? 1e-12 : 1e-5,
              f64 ? 1e-12 : 1e-5);
}

// alpha * op(A) op(B) + beta * C, C broadcast to [M, N] by the test's own indexing.
std::vector<double> naive_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb,
                               double alpha, double beta) {
  const int64_t M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
  const int64_t N = tb ? b.dim(0) : b.dim(1);
  std::vector<double> y;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += a.at_double(ta ? k * M + i : i * K + k) * b.at_double(tb ? j * K + k : k * N + j);
      double cv = 0;
      if (c) {
        const Shape& cs = c->shape();
        const int64_t rows = cs.size() == 2 ? cs[0] : 1, cols = cs.empty() ? 1 : cs.back();
        cv = c->at_double((rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j));
      }
      y.push_back(alpha * s + beta * cv);
    }
  return y;
}
}  // namespace

TEST_CASE("MatMul: 2-D hand-computed, f32 and f64") {
  // [1 2 3; 4 5 6] x [1 0; 0 1; 1 1] = [4 5; 10 11]
  check_close(
      run_op(OpKind::MatMul, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {1, 0, 0, 1, 1, 1})})[0],
      {2, 2}, {4, 5, 10, 11});
  const Tensor y = run_op(OpKind::MatMul, {Tensor::from<double>({1, 2}, {0.5, 2}),
                                           Tensor::from<double>({2, 1}, {4, 3})})[0];
  CHECK(y.dtype() == DType::f64);
  check_close(y, {1, 1}, {8});
}

TEST_CASE("MatMul: 1-D operands are promoted then squeezed") {
  const Tensor v = f32({3}, {1, 2, 3});
  const Tensor m = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  check_close(run_op(OpKind::MatMul, {v, m})[0], {2}, {4, 5});  // [3] x [3,2] -> [2]
  check_close(run_op(OpKind::MatMul, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), v})[0], {2}, {14, 32});
  check_close(run_op(OpKind::MatMul, {v, v})[0], {}, {14});  // dot product -> scalar
  // [3] x [2,3,2]: the vector multiplies every batch matrix -> [2,2]
  check_close(run_op(OpKind::MatMul, {v, f32({2, 3, 2}, {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 0, 0})})[0],
              {2, 2}, {4, 5, 2, 4});
}

TEST_CASE("MatMul: integer dtypes") {
  const Tensor a = Tensor::from<int32_t>({2, 2}, {1, -2, 3, 4});
  const Tensor b = Tensor::from<int32_t>({2, 2}, {5, 6, 7, 8});
  const Tensor y = run_op(OpKind::MatMul, {a, b})[0];
  CHECK(y.dtype() == DType::i32);
  check_close(y, {2, 2}, {-9, -10, 43, 50});
  check_close(run_op(OpKind::MatMul, {Tensor::from<int64_t>({1, 3}, {1, 2, 3}),
                                      Tensor::from<int64_t>({2, 3, 1}, {1, 1, 1, -1, 0, 2})})[0],
              {2, 1, 1}, {6, 5});
}

TEST_CASE("MatMul: batch broadcasting against the naive reference") {
  check_matmul({2, 1, 3, 4}, {5, 4, 6}, 1);  // -> [2,5,3,6]
  check_matmul({3, 7, 13}, {3, 13, 7}, 2);   // both batched
  check_matmul({4, 7, 13}, {13, 1}, 3);      // right operand shared (rows folded)
  check_matmul({7, 13}, {2, 3, 13, 7}, 4);   // left operand shared
  check_matmul({1, 1}, {1, 1}, 5);
  check_matmul({13}, {2, 13, 7}, 6);
  check_matmul({5, 1, 7, 13}, {1, 3, 13, 1}, 7);
  check_matmul({2, 7, 13}, {2, 13, 7}, 8, true);
  check_matmul({64, 33}, {33, 65}, 9);  // large enough for Eigen's blocked path
}

TEST_CASE("MatMul: empty inner dimension gives zeros") {
  check_close(run_op(OpKind::MatMul, {Tensor(DType::f32, {2, 0}), Tensor(DType::f32, {0, 3})})[0],
              {2, 3}, {0, 0, 0, 0, 0, 0});
}

TEST_CASE("MatMul: errors") {
  CHECK(contains(op_error(OpKind::MatMul, {Tensor(DType::f32, {2, 3}), Tensor(DType::f32, {4, 5})}),
                 "inner dimensions differ: [2,3] x [4,5]"));
  CHECK(contains(op_error(OpKind::MatMul, {Tensor::scalar(1.0f), Tensor(DType::f32, {1, 2})}),
                 "rank >= 1"));
  CHECK(contains(op_error(OpKind::MatMul, {Tensor(DType::f32, {2, 2}), Tensor(DType::f64, {2, 2})}),
                 "same dtype"));
  CHECK(contains(
      op_error(OpKind::MatMul, {Tensor(DType::boolean, {2, 2}), Tensor(DType::boolean, {2, 2})}),
      "expected one of"));
  CHECK(contains(
      op_error(OpKind::MatMul, {Tensor(DType::f32, {2, 2, 3}), Tensor(DType::f32, {3, 3, 1})}),
      "cannot be broadcast"));
}

TEST_CASE("Gemm: hand-computed with alpha, beta and a broadcast C") {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({3, 2}, {1, 0, 0, 1, 1, 1});  // A B = [4 5; 10 11]
  const Attributes ab{{"alpha", 2.0}, {"beta", 0.5}};
  check_close(run_op(OpKind::Gemm, {a, b, f32({2}, {10, 20})}, ab)[0], {2, 2}, {13, 20, 25, 32});
  check_close(run_op(OpKind::Gemm, {a, b, f32({2, 1}, {10, 20})}, ab)[0], {2, 2}, {13, 15, 30, 32});
  check_close(run_op(OpKind::Gemm, {a, b, Tensor::scalar(2.0f)})[0], {2, 2}, {6, 7, 12, 13});
  check_close(run_op(OpKind::Gemm, {a, b})[0], {2, 2}, {4, 5, 10, 11});  // C absent
  // transA: A^T of [3,2] is [2,3]
  check_close(
      run_op(OpKind::Gemm, {f32({3, 2}, {1, 4, 2, 5, 3, 6}), b}, {{"transA", int64_t{1}}})[0],
      {2, 2}, {4, 5, 10, 11});
  const Tensor yi = run_op(
      OpKind::Gemm, {Tensor::from<int64_t>({1, 2}, {2, 3}), Tensor::from<int64_t>({2, 1}, {4, 5}),
                     Tensor::from<int64_t>({1}, {1})})[0];
  CHECK(yi.dtype() == DType::i64);
  check_close(yi, {1, 1}, {24});
}

TEST_CASE("Gemm: transposes and C shapes against the naive reference") {
  const int64_t M = 7, K = 13, N = 5;
  uint32_t seed = 20;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Shape& cs : {Shape{M, N}, Shape{N}, Shape{M, 1}, Shape{1, N}, Shape{}, Shape{0}}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(shape_str(cs));
        const bool with_c = cs != Shape{0};
        const Tensor a = test::random_f32(ta ? Shape{K, M} : Shape{M, K}, ++seed);
        const Tensor b = test::random_f32(tb ? Shape{N, K} : Shape{K, N}, ++seed);
        const Tensor c = with_c ? test::random_f32(cs, ++seed) : Tensor{};
        const Attributes attrs{
            {"transA", int64_t{ta}}, {"transB", int64_t{tb}}, {"alpha", 0.75}, {"beta", -1.5}};
        check_close(run_op(OpKind::Gemm, {a, b, c}, attrs)[0], {M, N},
                    naive_gemm(a, b, with_c ? &c : nullptr, ta, tb, 0.75, with_c ? -1.5 : 0), 1e-5,
                    1e-5);
      }
  const Tensor a = random_f64({1, 13}, 40), b = random_f64({13, 7}, 41);
  check_close(run_op(OpKind::Gemm, {a, b})[0], {1, 7}, naive_gemm(a, b, nullptr, 0, 0, 1, 0), 1e-12,
              1e-12);
}

TEST_CASE("Gemm: errors") {
  const Tensor a = Tensor(DType::f32, {2, 3}), b = Tensor(DType::f32, {3, 4});
  CHECK(contains(op_error(OpKind::Gemm, {Tensor(DType::f32, {2, 3, 1}), b}), "A must be 2-D"));
  CHECK(contains(op_error(OpKind::Gemm, {a, Tensor(DType::f32, {3})}), "B must be 2-D"));
  CHECK(
      contains(op_error(OpKind::Gemm, {a, Tensor(DType::f32, {4, 3})}), "inner dimensions differ"));
  CHECK(contains(op_error(OpKind::Gemm, {a, b, Tensor(DType::f32, {3})}),
                 "C of shape [3] cannot be broadcast to [2,4]"));
  CHECK(contains(op_error(OpKind::Gemm, {a, b, Tensor(DType::f32, {1, 2, 4})}),
                 "cannot be broadcast"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(MatMul, batched) {
  s.rtol = 1e-4, s.atol = 1e-5;
  s.output(s.b.matmul(s.input(DType::f32, {2, n, 8}), s.input(DType::f32, {8, 5})));
}

SG_LOWERING_SAMPLE(Gemm, trans_b_alpha_bias) {
  s.rtol = 1e-4, s.atol = 1e-5;
  const ValueId a = s.input(DType::f32, {n, 6});
  const ValueId w = s.b.constant("", random_f32({4, 6}, 2));
  s.output(
      s.b.gemm(a, w, s.input(DType::f32, {4}), Attributes{{"transB", int64_t{1}}, {"alpha", 0.5}}));
}
