// Transpose {perm = reversed dims}: output dim d is input dim perm[d]. The kernel walks the output
// contiguously with the input strides permuted, after dropping size-1 dims and merging dims that
// stay adjacent in the input; when the innermost dim stays contiguous it copies whole rows.
#include <cstring>

#include "ops/grad.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {

Ints transpose_perm(const Node& n, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (!n.attrs.has("perm")) {
    Ints p(rank);
    for (int64_t d = 0; d < r; ++d) p[d] = r - 1 - d;
    return p;
  }
  const Ints& p = n.attrs.get_ints("perm");
  std::vector<bool> seen(rank, false);
  bool ok = p.size() == rank;
  for (size_t i = 0; ok && i < p.size(); ++i) {
    ok = p[i] >= 0 && p[i] < r && !seen[p[i]];
    if (ok) seen[p[i]] = true;
  }
  SG_CHECK(ok) << "perm " << shape_str(p) << " is not a permutation of 0.." << r - 1
               << " (input rank " << r << ")";
  return p;
}

namespace {

void shapes_transpose(ShapeCtx& c) {
  const Shape& in = c.shape(0);
  const Ints perm = transpose_perm(c.node, in.size());
  Shape out(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) out[d] = in[perm[d]];
  c.out[0] = std::move(out);
}

// Copies S-byte elements: output row-major over `shape`, input at the given element strides.
template <size_t S>
void copy_strided(const unsigned char* src, unsigned char* dst, const Shape& shape,
                  const Shape& strides) {
  const int64_t inner = shape.back(), step = strides.back();
  const Shape outer(shape.begin(), shape.end() - 1);
  const std::array<Shape, 1> outer_strides{Shape(strides.begin(), strides.end() - 1)};
  for_each_broadcast<1>(outer, outer_strides, [&](int64_t row, const std::array<int64_t, 1>& o) {
    unsigned char* d = dst + row * inner * S;
    const unsigned char* s = src + o[0] * S;
    if (step == 1) {
      std::memcpy(d, s, inner * S);
    } else {
      for (int64_t j = 0; j < inner; ++j) std::memcpy(d + j * S, s + j * step * S, S);
    }
  });
}

void run_transpose(KernelCtx& c) {
  const Tensor& x = c.in[0];
  Tensor& y = c.out[0];
  if (y.numel() == 0) return;
  const Ints perm = transpose_perm(c.node, x.shape().size());
  const Shape in_strides = strides_of(x.shape());
  // Output dims as (size, input stride), size-1 dims dropped, input-adjacent dims merged.
  Shape shape, strides;
  for (int64_t p : perm) {
    const int64_t n = x.shape()[p], st = in_strides[p];
    if (n == 1) continue;
    if (!shape.empty() && strides.back() == st * n) {
      shape.back() *= n;
      strides.back() = st;
    } else {
      shape.push_back(n);
      strides.push_back(st);
    }
  }
  if (shape.empty()) shape = strides = {1};
  const auto* src = static_cast<const unsigned char*>(x.raw_data());
  auto* dst = static_cast<unsigned char*>(y.raw_data());
  switch (dtype_size(x.dtype())) {
    case 1:
      return copy_strided<1>(src, dst, shape, strides);
    case 4:
      return copy_strided<4>(src, dst, shape, strides);
    case 8:
      return copy_strided<8>(src, dst, shape, strides);
    default:
      SG_ASSERT(false) << "Transpose: unexpected element size for " << dtype_name(x.dtype());
  }
}

// dx = Transpose(dy) by the inverse permutation.
void grad_transpose(GradCtx& c) {
  const Ints perm = transpose_perm(c.node, c.dims(c.in(0)).size());
  Ints inverse(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) inverse[perm[d]] = static_cast<int64_t>(d);
  c.set(0, c.b.transpose(c.dout(0), Attributes{{"perm", inverse}}));
}

}  // namespace

extern const Lowering kTransposeLowering;  // transpose_jit.cpp
extern const OpDef kTranspose;
const OpDef kTranspose = with_lowering(
    &kTransposeLowering, with_grad(grad_transpose, {"Transpose", 1, 1, 1, 1, types_same_as_input0,
                                                    shapes_transpose, run_transpose}));

}  // namespace sgraph::ops
