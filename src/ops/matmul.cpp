// MatMul (numpy matmul: 1-D operands promoted then squeezed, batch dims broadcast) and Gemm
// (alpha * op(A) * op(B) + beta * C). Both run the shared GEMM in gemm_kernel.cpp.
#include "ops/gemm_kernel.h"
#include "ops/grad.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {

GemmParams gemm_params(const Node& n) {
  const Attributes& a = n.attrs;
  return {a.get_int("transA", 0) != 0, a.get_int("transB", 0) != 0, a.get_float("alpha", 1.0),
          a.get_float("beta", 1.0)};
}

MatMulDims matmul_dims(const Shape& a, const Shape& b) {
  SG_CHECK(!a.empty() && !b.empty()) << "MatMul operands must have rank >= 1, got shapes "
                                     << shape_str(a) << " x " << shape_str(b);
  const Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  const Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  MatMulDims d;
  d.M = a2[a2.size() - 2];
  d.K = a2.back();
  d.N = b2.back();
  SG_CHECK(d.K == b2[b2.size() - 2])
      << "inner dimensions differ: " << shape_str(a) << " x " << shape_str(b);
  d.batch_a.assign(a2.begin(), a2.end() - 2);
  d.batch_b.assign(b2.begin(), b2.end() - 2);
  d.batch = broadcast_shapes(d.batch_a, d.batch_b);
  d.out = d.batch;
  if (a.size() > 1) d.out.push_back(d.M);
  if (b.size() > 1) d.out.push_back(d.N);
  return d;
}

namespace {

void types_contraction(TypeCtx& c) {
  c.expect_one_of(0, {DType::f32, DType::f64, DType::i32, DType::i64});
  for (size_t i = 1; i < c.in.size(); ++i)
    if (c.has(i)) c.expect_same(0, i);
  c.out[0] = c.in[0];
}

template <class T>
void matmul(const Tensor& ta, const Tensor& tb, Tensor& ty) {
  const MatMulDims d = matmul_dims(ta.shape(), tb.shape());
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  T* y = ty.data<T>();
  if (numel(d.batch_b) == 1) {  // one right operand: fold A's batch into its rows
    gemm<T>(numel(d.batch) * d.M, d.N, d.K, a, false, b, false, y);
    return;
  }
  Shape sa = broadcast_strides(d.batch_a, d.batch), sb = broadcast_strides(d.batch_b, d.batch);
  for (auto& s : sa) s *= d.M * d.K;
  for (auto& s : sb) s *= d.K * d.N;
  for_each_broadcast<2>(d.batch, {sa, sb}, [&](int64_t i, const std::array<int64_t, 2>& off) {
    gemm<T>(d.M, d.N, d.K, a + off[0], false, b + off[1], false, y + i * d.M * d.N);
  });
}

// Gemm geometry, checked: A [M,K] (or [K,M] with transA), B [K,N] (or [N,K]), C -> [M,N].
struct GemmDims {
  int64_t M, K, N;
};

GemmDims gemm_dims(const GemmParams& p, const Shape& a, const Shape& b, const Shape* c) {
  SG_CHECK(a.size() == 2) << "A must be 2-D, got shape " << shape_str(a);
  SG_CHECK(b.size() == 2) << "B must be 2-D, got shape " << shape_str(b);
  GemmDims d;
  d.M = a[p.trans_a ? 1 : 0];
  d.K = a[p.trans_a ? 0 : 1];
  d.N = b[p.trans_b ? 0 : 1];
  SG_CHECK(d.K == b[p.trans_b ? 1 : 0])
      << "inner dimensions differ: A " << shape_str(a) << (p.trans_a ? " (transposed)" : "")
      << " x B " << shape_str(b) << (p.trans_b ? " (transposed)" : "");
  if (c) {
    const Shape mn{d.M, d.N};
    bool ok = c->size() <= 2;
    for (size_t i = 0; ok && i < c->size(); ++i) {
      const int64_t dim = (*c)[i], want = mn[2 - c->size() + i];
      ok = dim == 1 || dim == want;
    }
    SG_CHECK(ok) << "C of shape " << shape_str(*c) << " cannot be broadcast to " << shape_str(mn);
  }
  return d;
}

template <class T>
void run_gemm(KernelCtx& c) {
  const GemmParams p = gemm_params(c.node);
  const GemmDims d =
      gemm_dims(p, c.in[0].shape(), c.in[1].shape(), c.has(2) ? &c.in[2].shape() : nullptr);
  const T alpha = static_cast<T>(p.alpha);
  const T beta = c.has(2) ? static_cast<T>(p.beta) : T(0);
  T* y = c.out[0].data<T>();
  if (beta != T(0)) {  // Y = beta * broadcast(C), then accumulate the product into it
    const Shape mn{d.M, d.N};
    const Shape st = broadcast_strides(c.in[2].shape(), mn);
    const T* cc = c.in[2].data<T>();
    for (int64_t i = 0; i < d.M; ++i)
      for (int64_t j = 0; j < d.N; ++j) y[i * d.N + j] = beta * cc[i * st[0] + j * st[1]];
  }
  gemm<T>(d.M, d.N, d.K, c.in[0].data<T>(), p.trans_a, c.in[1].data<T>(), p.trans_b, y, alpha,
          beta == T(0) ? T(0) : T(1));
}

template <class F>
void visit_contraction(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      return f.template operator()<float>();
    case DType::f64:
      return f.template operator()<double>();
    case DType::i32:
      return f.template operator()<int32_t>();
    case DType::i64:
      return f.template operator()<int64_t>();
    default:
      SG_ASSERT(false) << "contraction on " << dtype_name(t);
  }
}

// ---- gradient rules (src/ops/grad.h) ---------------------------------------------------------

// Transpose of the last two dims.
ValueId swap_last_two(GradCtx& c, ValueId v) {
  Ints perm(c.rank(v));
  for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(d);
  std::swap(perm[perm.size() - 2], perm[perm.size() - 1]);
  return c.b.transpose(v, Attributes{{"perm", perm}});
}

// Y = A @ B: dA = dY @ B^T and dB = A^T @ dY, each summed over the batch dims its operand was
// broadcast along. A 1-D A is the matrix [1, K] and a 1-D B the matrix [K, 1] (dY gets back the
// unit dims Y lost). Two matrices take Gemm, whose GEMM reads a transposed operand in place.
void grad_matmul(GradCtx& c) {
  GraphBuilder& b = c.b;
  ValueId a = c.in(0), w = c.in(1), dy = c.dout(0);
  const int64_t ra = c.rank(a), rw = c.rank(w);
  if (ra == 2 && rw == 2) {
    if (c.wants(0)) c.set(0, b.gemm(dy, w, Attributes{{"transB", int64_t{1}}}));
    if (c.wants(1)) c.set(1, b.gemm(a, dy, Attributes{{"transA", int64_t{1}}}));
    return;
  }
  if (ra == 1) a = b.unsqueeze(a, b.ints({0}));
  if (rw == 1) w = b.unsqueeze(w, b.ints({1}));
  const int64_t ry = c.rank(dy) + (ra == 1) + (rw == 1);
  Ints unit;
  if (ra == 1) unit.push_back(ry - 2);
  if (rw == 1) unit.push_back(ry - 1);
  if (!unit.empty()) dy = b.unsqueeze(dy, b.ints(unit));
  if (c.wants(0)) {
    ValueId da = c.sum_to(b.matmul(dy, swap_last_two(c, w)), a);
    c.set(0, ra == 1 ? b.squeeze(da, b.ints({0})) : da);
  }
  if (c.wants(1)) {
    ValueId dw = c.sum_to(b.matmul(swap_last_two(c, a), dy), w);
    c.set(1, rw == 1 ? b.squeeze(dw, b.ints({1})) : dw);
  }
}

// Y = alpha * op(A) @ op(B) + beta * C, op transposing or not: each operand's gradient is one
// Gemm of dY with the other operand, transposed as needed; C gets beta * dY summed back to its
// shape.
void grad_gemm(GradCtx& c) {
  const GemmParams p = gemm_params(c.node);
  const bool ta = p.trans_a, tb = p.trans_b;
  const double alpha = p.alpha, beta = p.beta;
  const ValueId a = c.in(0), w = c.in(1), dy = c.dout(0);
  auto gemm = [&](ValueId x, ValueId y, bool tx, bool ty) {
    Attributes attrs{{"transA", int64_t{tx}}, {"transB", int64_t{ty}}};
    if (alpha != 1.0) attrs.set("alpha", alpha);
    return c.b.gemm(x, y, std::move(attrs));
  };
  if (c.wants(0)) c.set(0, ta ? gemm(w, dy, tb, true) : gemm(dy, w, false, !tb));
  if (c.wants(1)) c.set(1, tb ? gemm(dy, a, true, ta) : gemm(a, dy, !ta, false));
  if (c.has_in(2) && c.wants(2))
    c.set(2, c.sum_to(beta == 1.0 ? dy : c.b.mul(dy, c.scalar(beta, dy)), c.in(2)));
}

}  // namespace

extern const Lowering kContractionLowering;  // matmul_jit.cpp
extern const OpDef kMatMul;
const OpDef kMatMul = with_lowering(
    &kContractionLowering,
    with_grad(grad_matmul, {"MatMul", 2, 2, 1, 1, types_contraction,
                            [](ShapeCtx& c) { c.out[0] = matmul_dims(c.shape(0), c.shape(1)).out; },
                            [](KernelCtx& c) {
                              visit_contraction(c.in[0].dtype(), [&]<class T>() {
                                matmul<T>(c.in[0], c.in[1], c.out[0]);
                              });
                            }}));

// Gemm(A, B, C?) {transA, transB, alpha = 1, beta = 1}: C broadcasts unidirectionally to [M,N].
extern const OpDef kGemm;
const OpDef kGemm = with_lowering(
    &kContractionLowering,
    with_grad(grad_gemm, {"Gemm", 2, 3, 1, 1, types_contraction,
                          [](ShapeCtx& c) {
                            const GemmDims d =
                                gemm_dims(gemm_params(c.node), c.shape(0), c.shape(1),
                                          c.has(2) ? &c.shape(2) : nullptr);
                            c.out[0] = {d.M, d.N};
                          },
                          [](KernelCtx& c) {
                            visit_contraction(c.in[0].dtype(), [&]<class T>() { run_gemm<T>(c); });
                          }}));

}  // namespace sgraph::ops
