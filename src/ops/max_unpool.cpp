// MaxUnpool(X [N, C, D1...], I, output_shape?) {kernel_shape, pads, strides}: the partial inverse
// of MaxPool. The unpooled grid is [N, C, sizes] with each spatial size
// (in - 1) * stride + kernel - pad_begin - pad_end; it is zeros except grid[I[i]] = X[i] for every
// element i of X, where I (int64, X's shape) indexes the whole flattened grid, as MaxPool's
// Indices do; a repeated index keeps the last value. Every index must lie inside the grid. The
// output is the grid, unless output_shape (a 1-D int64 tensor of the output's full shape, N and C
// as X's) gives another shape: then each element keeps its grid coordinates (as when output_shape
// restores a size a strided pool rounded down) and must fall inside the output.
#include <algorithm>

#include "ops/int_math.h"
#include "ops/window.h"

namespace sgraph::ops {
namespace {

void types_max_unpool(TypeCtx& c) {
  c.expect_one_of(0, {DType::f32, DType::f64});
  c.expect_one_of(1, {DType::i64});
  if (c.has(2)) c.expect_one_of(2, {DType::i64});
  c.out[0] = c.in[0];
}

// The unpooled shape without output_shape: [N, C] and per spatial dim
// (in - 1) * stride + kernel - pad_begin - pad_end. Throws on bad attributes or sizes.
Shape unpooled_shape(const Attributes& attrs, const Shape& x) {
  const Ints in = spatial_dims(x, "X");
  const size_t r = in.size();
  SG_CHECK(attrs.has("kernel_shape")) << "kernel_shape is required";
  const Ints kernel = read_spatial(attrs, "kernel_shape", r, 0, 1);
  const Ints strides = read_spatial(attrs, "strides", r, 1, 1);
  const Ints pads = read_spatial(attrs, "pads", 2 * r, 0, 0);
  Shape out{x[0], x[1]};
  for (size_t d = 0; d < r; ++d) {
    if (in[d] == 0) {
      out.push_back(0);  // (nothing to unpool)
      continue;
    }
    const int64_t grown = checked_add(checked_mul(in[d] - 1, strides[d], "the output size"),
                                      kernel[d], "the output size");
    const int64_t size =
        checked_add(checked_add(grown, -pads[d], "the output size"), -pads[r + d],
                    "the output size");  // (pads are >= 0: negating them cannot overflow)
    SG_CHECK(size >= 0) << "the output size along spatial dim " << d << " is negative (" << size
                        << "): pads " << pads[d] << " and " << pads[r + d]
                        << " exceed the unpooled size " << grown;
    out.push_back(size);
  }
  int64_t n = 1;
  for (int64_t v : out) n = checked_mul(n, v, "the output's element count");
  return out;
}

void shapes_max_unpool(ShapeCtx& c) {
  const Shape& x = c.shape(0);
  Shape out = unpooled_shape(c.attrs(), x);
  SG_CHECK(c.shape(1) == x) << "I must have X's shape " << shape_str(x) << ", got "
                            << shape_str(c.shape(1));
  if (c.has(2)) {
    SG_CHECK(c.rank(2) == 1) << "output_shape must be a 1-D tensor, got shape "
                             << shape_str(c.shape(2));
    const Ints want = c.require_value(2).to_int64();
    SG_CHECK(want.size() == x.size())
        << "output_shape must have " << x.size() << " values (X's rank), got " << want.size();
    for (int64_t v : want) SG_CHECK(v >= 0) << "output_shape values must be >= 0, got " << v;
    SG_CHECK(want[0] == x[0] && want[1] == x[1]) << "output_shape must keep X's N and C (" << x[0]
                                                 << ", " << x[1] << "), got " << shape_str(want);
    int64_t n = 1;
    for (int64_t v : want) n = checked_mul(n, v, "the output's element count");
    out = want;
  }
  c.out[0] = out;
}

// Indices address the unpooled grid; with output_shape each position keeps its coordinates in
// the (possibly larger or smaller) output grid, where it must fall.
void run_max_unpool(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const int64_t* idx = c.in[1].data<int64_t>();
  const Shape grid = unpooled_shape(c.attrs(), x.shape());
  const Shape& out = c.out[0].shape();
  const int64_t grid_total = numel(grid), total = c.out[0].numel();
  const bool same = grid == out;
  Ints at(grid.size());
  visit_float(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    T* dst = c.out[0].data<T>();
    std::fill(dst, dst + total, T{});
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      SG_CHECK(idx[i] >= 0 && idx[i] < grid_total)
          << "index " << idx[i] << " (I element " << i << ") is outside the unpooled output of "
          << grid_total << " elements, shape " << shape_str(grid);
      int64_t pos = idx[i];
      if (!same) {
        for (size_t d = grid.size(); d-- > 0; pos /= grid[d]) at[d] = pos % grid[d];
        pos = 0;
        for (size_t d = 0; d < grid.size(); ++d) {
          SG_CHECK(at[d] < out[d])
              << "index " << idx[i] << " (I element " << i << ") falls outside output_shape "
              << shape_str(out) << " (unpooled shape " << shape_str(grid) << ")";
          pos = pos * out[d] + at[d];
        }
      }
      dst[pos] = src[i];
    }
  });
}

}  // namespace

extern const OpDef kMaxUnpool;
const OpDef kMaxUnpool{"MaxUnpool",   2, 3, 1, 1, types_max_unpool, shapes_max_unpool,
                       run_max_unpool};

}  // namespace sgraph::ops
