// Tile(x, repeats): x repeated repeats[d] times along each dim d; repeats is a 1-D i64 tensor with
// one non-negative count per dim of x. Its value decides the output shape, so the shape rule
// reads it (a compiled region's guard checks it).
#include "ops/op.h"

namespace sgraph::ops {
namespace {

void types_tile(TypeCtx& c) {
  c.expect_one_of(1, {DType::i64});
  c.out[0] = c.in[0];
}

void shapes_tile(ShapeCtx& c) {
  const Tensor& r = c.require_value(1);
  SG_CHECK(r.rank() == 1 && r.numel() == c.rank(0))
      << "repeats must be a 1-D tensor of " << c.rank(0) << " counts (the rank of the input), got "
      << "shape " << shape_str(r.shape());
  const std::vector<int64_t> repeats = r.to_int64();
  Shape out = c.shape(0);
  int64_t n = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    SG_CHECK(repeats[d] >= 0) << "repeats " << shape_str(repeats) << " has a negative count";
    SG_CHECK(!__builtin_mul_overflow(out[d], repeats[d], &out[d]) &&
             !__builtin_mul_overflow(n, out[d], &n))
        << "tiling shape " << shape_str(c.shape(0)) << " by " << shape_str(repeats)
        << " is too large";
  }
  c.out[0] = std::move(out);
}

void run_tile(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const Tensor& y = c.out[0];
  if (y.numel() == 0) return;
  const Shape& in = x.shape();
  const Shape& out = y.shape();
  const Shape stride = strides_of(in);
  const int64_t rank = static_cast<int64_t>(out.size());
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    T* dst = c.out[0].data<T>();
    // An odometer over the output; each input coordinate is the output's modulo the input dim.
    std::vector<int64_t> pos(rank, 0), at(rank, 0);
    int64_t off = 0;
    for (int64_t k = 0; k < y.numel(); ++k) {
      dst[k] = src[off];
      for (int64_t d = rank - 1; d >= 0; --d) {
        ++pos[d];
        if (++at[d] == in[d]) {
          at[d] = 0;
          off -= (in[d] - 1) * stride[d];
        } else {
          off += stride[d];
        }
        if (pos[d] < out[d]) break;
        pos[d] = 0;
        off -= at[d] * stride[d];
        at[d] = 0;
      }
    }
  });
}

}  // namespace

extern const Lowering kTileLowering;  // tile_jit.cpp
extern const OpDef kTile;
const OpDef kTile =
    with_lowering(&kTileLowering, {"Tile", 2, 2, 1, 1, types_tile, shapes_tile, run_tile});

}  // namespace sgraph::ops
