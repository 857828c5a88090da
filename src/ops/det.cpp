// Det(x [..., M, M]) -> [...]: the determinant of each square matrix in the last two dims (f32 or
// f64). Each is computed in double precision by LU decomposition with partial pivoting (the
// product of the pivots, its sign flipped per row swap); a singular matrix (a zero pivot column)
// gives 0, and an empty 0x0 matrix gives 1.
#include <cmath>
#include <utility>
#include <vector>

#include "ops/op.h"

namespace sgraph::ops {
namespace {

void shapes_det(ShapeCtx& c) {
  const Shape& x = c.shape(0);
  SG_CHECK(x.size() >= 2) << "input must have rank >= 2 (square matrices), got shape "
                          << shape_str(x);
  SG_CHECK(x[x.size() - 1] == x[x.size() - 2])
      << "matrices must be square (last two dims equal), got shape " << shape_str(x);
  c.out[0] = Shape(x.begin(), x.end() - 2);
}

// The determinant of the n x n row-major matrix `a` (overwritten by its LU factors).
double lu_det(double* a, int64_t n) {
  double det = 1;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (std::abs(a[i * n + k]) > std::abs(a[p * n + k])) p = i;
    if (a[p * n + k] == 0) return 0;  // singular
    if (p != k) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[p * n + j]);
      det = -det;
    }
    const double pivot = a[k * n + k];
    det *= pivot;
    for (int64_t i = k + 1; i < n; ++i) {
      const double f = a[i * n + k] / pivot;
      for (int64_t j = k + 1; j < n; ++j) a[i * n + j] -= f * a[k * n + j];
    }
  }
  return det;
}

void run_det(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const int64_t n = x.dim(-1);
  const int64_t matrices = c.out[0].numel();
  visit_float(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    T* dst = c.out[0].data<T>();
    if (matrices == 0) return;  // (no scratch for [0, M, M] however large M)
    std::vector<double> a(static_cast<size_t>(n * n));
    for (int64_t m = 0; m < matrices; ++m) {
      for (int64_t i = 0; i < n * n; ++i) a[i] = static_cast<double>(src[m * n * n + i]);
      dst[m] = static_cast<T>(lu_det(a.data(), n));
    }
  });
}

}  // namespace

extern const OpDef kDet;
const OpDef kDet{"Det", 1, 1, 1, 1, types_float_same, shapes_det, run_det};

}  // namespace sgraph::ops
