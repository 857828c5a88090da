// Trilu(x [..., M, N], k?) {upper = 1}: keeps the upper (j - i >= k) or lower (j - i <= k)
// triangle of each matrix in the last two dims and zeroes the rest. k (a scalar int64, default 0)
// shifts the diagonal: positive above the main one, negative below; any value is valid (beyond
// the matrix it keeps everything or nothing).
#include "ops/op.h"

namespace sgraph::ops {
namespace {

void types_trilu(TypeCtx& c) {
  if (c.has(1)) c.expect_one_of(1, {DType::i64});
  c.out[0] = c.in[0];
}

void shapes_trilu(ShapeCtx& c) {
  SG_CHECK(c.rank(0) >= 2) << "input must have rank >= 2 (matrices), got shape "
                           << shape_str(c.shape(0));
  if (c.has(1))
    SG_CHECK(numel(c.shape(1)) == 1 && c.rank(1) <= 1)
        << "k must be a scalar, got shape " << shape_str(c.shape(1));
  c.out[0] = c.shape(0);
}

void run_trilu(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const int64_t k = c.has(1) ? c.in[1].to_int64()[0] : 0;
  const bool upper = c.attrs().get_int("upper", 1) != 0;
  const int64_t rows = x.dim(-2), cols = x.dim(-1);
  const int64_t matrices = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    T* dst = c.out[0].data<T>();
    for (int64_t m = 0; m < matrices; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t at = (m * rows + i) * cols + j;
          // j - i is small: comparing it with k cannot overflow whatever k is.
          const bool keep = upper ? j - i >= k : j - i <= k;
          dst[at] = keep ? src[at] : T{};
        }
  });
}

}  // namespace

extern const Lowering kTriluLowering;  // trilu_jit.cpp
extern const OpDef kTrilu;
const OpDef kTrilu =
    with_lowering(&kTriluLowering, {"Trilu", 1, 2, 1, 1, types_trilu, shapes_trilu, run_trilu});

}  // namespace sgraph::ops
