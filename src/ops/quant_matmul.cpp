// MatMulInteger and QLinearMatMul: MatMul (numpy matmul, batch dims broadcast) on 8-bit quantized
// operands, in integer arithmetic: acc[i, j] = sum_k (a[i, k] - a_zero[i]) * (b[k, j] - b_zero[j])
// accumulated in i32 (wrapping past its range, as the JIT's integer adds do). Zero points and
// scales apply to the whole operand or to each row of A / column of B.
#include "ops/params.h"
#include "ops/quantize.h"

namespace sgraph::ops {
namespace {

// Zero points as i32 values: none (all 0), one, or one per row / column.
std::vector<int32_t> zero_points(const KernelCtx& c, size_t i) {
  std::vector<int32_t> z;
  if (!c.has(i)) return z;
  for (int64_t k = 0; k < c.in[i].numel(); ++k)
    z.push_back(static_cast<int32_t>(c.in[i].at_double(k)));
  return z;
}

// Element `i` of a parameter with one value or one per index (empty: `dflt`).
template <class T>
T param_at(const std::vector<T>& p, int64_t i, T dflt = T(0)) {
  if (p.empty()) return dflt;
  return p.size() == 1 ? p[0] : p[static_cast<size_t>(i)];
}

// Calls f(y_index, i, j, acc) for every element of the product of a and b (8-bit, any mix of u8
// and i8) with zero points a_zero (per row i) and b_zero (per column j).
template <class F>
void int_matmul(const Tensor& ta, const Tensor& tb, const std::vector<int32_t>& a_zero,
                const std::vector<int32_t>& b_zero, F&& f) {
  const MatMulDims d = matmul_dims(ta.shape(), tb.shape());
  Shape sa = broadcast_strides(d.batch_a, d.batch), sb = broadcast_strides(d.batch_b, d.batch);
  for (auto& s : sa) s *= d.M * d.K;
  for (auto& s : sb) s *= d.K * d.N;
  visit_quantized(ta.dtype(), [&]<class A>() {
    visit_quantized(tb.dtype(), [&]<class B>() {
      const A* a = ta.data<A>();
      const B* b = tb.data<B>();
      std::vector<int32_t> row(static_cast<size_t>(d.K));
      for_each_broadcast<2>(d.batch, {sa, sb}, [&](int64_t bi, const std::array<int64_t, 2>& off) {
        for (int64_t i = 0; i < d.M; ++i) {
          const int32_t za = param_at(a_zero, i);
          for (int64_t k = 0; k < d.K; ++k) row[k] = int32_t{a[off[0] + i * d.K + k]} - za;
          for (int64_t j = 0; j < d.N; ++j) {
            const int32_t zb = param_at(b_zero, j);
            int32_t acc = 0;
            for (int64_t k = 0; k < d.K; ++k)
              acc = wrap_add(acc, wrap_mul(row[k], int32_t{b[off[1] + k * d.N + j]} - zb));
            f((bi * d.M + i) * d.N + j, i, j, acc);
          }
        }
      });
    });
  });
}

void shapes_matmul_integer(ShapeCtx& c) {
  const MatMulDims d = matmul_dims(c.shape(0), c.shape(1));
  if (c.has(2)) check_row_param(c.shape(2), d.M, "a_zero_point", "row of A");
  if (c.has(3)) check_row_param(c.shape(3), d.N, "b_zero_point", "column of B");
  c.out[0] = d.out;
}

void run_matmul_integer(KernelCtx& c) {
  int32_t* y = c.out[0].data<int32_t>();
  int_matmul(c.in[0], c.in[1], zero_points(c, 2), zero_points(c, 3),
             [&](int64_t at, int64_t, int64_t, int32_t acc) { y[at] = acc; });
}

// QLinearMatMul's inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
// y_zero_point.
void types_qlinear_matmul(TypeCtx& c) {
  expect_quantized(c, 0);
  expect_quantized(c, 3);
  c.expect_same(0, 2);
  c.expect_same(3, 5);
  expect_quantized(c, 7);
  for (size_t s : {1, 4, 6}) c.expect_float(s);
  c.out[0] = c.in[7];
}

void shapes_qlinear_matmul(ShapeCtx& c) {
  const MatMulDims d = matmul_dims(c.shape(0), c.shape(3));
  check_row_param(c.shape(1), d.M, "a_scale", "row of a");
  check_row_param(c.shape(2), d.M, "a_zero_point", "row of a");
  check_row_param(c.shape(4), d.N, "b_scale", "column of b");
  check_row_param(c.shape(5), d.N, "b_zero_point", "column of b");
  check_row_param(c.shape(6), d.M, "y_scale", "row of y");
  check_row_param(c.shape(7), d.M, "y_zero_point", "row of y");
  c.out[0] = d.out;
}

// y = round(acc * a_scale * b_scale / y_scale) + y_zero_point, saturated: the scales' ratio in f32
// (the scales' own precision), the product with acc in f64 (exact for every i32 acc).
void run_qlinear_matmul(KernelCtx& c) {
  const std::vector<double> sa = param_values(&c.in[1]), sb = param_values(&c.in[4]),
                            sy = param_values(&c.in[6]), zy = param_values(&c.in[7]);
  check_divisor_scales(sy, "y_scale");
  visit_quantized(c.out[0].dtype(), [&]<class Q>() {
    Q* y = c.out[0].data<Q>();
    int_matmul(c.in[0], c.in[3], zero_points(c, 2), zero_points(c, 5),
               [&](int64_t at, int64_t i, int64_t j, int32_t acc) {
                 const float m = static_cast<float>(param_at(sa, i)) *
                                 static_cast<float>(param_at(sb, j)) /
                                 static_cast<float>(param_at(sy, i));
                 y[at] = quantize_value<Q>(static_cast<double>(acc) * m, param_at(zy, i));
               });
  });
}

}  // namespace

// MatMulInteger(A, B, a_zero_point?, b_zero_point?) -> i32: A and B u8 or i8; a_zero_point a
// scalar or one per row of A ([M]) with A's dtype, b_zero_point a scalar or one per column of B
// ([N]) with B's dtype.
extern const OpDef kMatMulInteger;
const OpDef kMatMulInteger{
    "MatMulInteger",   2, 4, 1, 1, types_integer_contraction, shapes_matmul_integer,
    run_matmul_integer};

// QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point): y has
// y_zero_point's dtype; a's parameters are scalars or per row, b's per column, y's per row.
extern const OpDef kQLinearMatMul;
const OpDef kQLinearMatMul{
    "QLinearMatMul", 8, 8, 1, 1, types_qlinear_matmul, shapes_qlinear_matmul, run_qlinear_matmul};

}  // namespace sgraph::ops
