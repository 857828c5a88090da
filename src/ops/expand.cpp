// Expand(data, shape): broadcasts data against `shape` numpy-style in both directions, so the
// result may be larger than `shape` (e.g. [3,1] expanded by [1,4] is [3,4]). Any dtype.
#include <cstring>

#include "ops/op.h"

namespace sgraph::ops {
namespace {

void types_expand(TypeCtx& c) {
  c.expect_int_index(1);
  c.out[0] = c.in[0];
}

void shapes_expand(ShapeCtx& c) {
  const Tensor& spec = c.require_value(1);
  SG_CHECK(spec.rank() == 1) << "shape must be a 1-D tensor, got shape " << shape_str(spec.shape());
  const Shape dims = spec.to_int64();
  for (int64_t d : dims)
    SG_CHECK(d >= 0) << "shape " << shape_str(dims) << " has a negative dimension";
  Shape out = broadcast_shapes(c.shape(0), dims);
  int64_t n = 1;
  for (int64_t d : out)
    SG_CHECK(!__builtin_mul_overflow(n, d, &n)) << "shape " << shape_str(out) << " is too large";
  c.out[0] = std::move(out);
}

// Copies S-byte elements from x to every output position they broadcast to.
template <size_t S>
void expand_bytes(const Tensor& x, Tensor& y) {
  const auto* src = static_cast<const unsigned char*>(x.raw_data());
  auto* dst = static_cast<unsigned char*>(y.raw_data());
  const std::array<Shape, 1> strides{broadcast_strides(x.shape(), y.shape())};
  for_each_broadcast<1>(y.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& o) {
    std::memcpy(dst + i * S, src + o[0] * S, S);
  });
}

void run_expand(KernelCtx& c) {
  switch (dtype_size(c.in[0].dtype())) {
    case 1:
      return expand_bytes<1>(c.in[0], c.out[0]);
    case 4:
      return expand_bytes<4>(c.in[0], c.out[0]);
    case 8:
      return expand_bytes<8>(c.in[0], c.out[0]);
    default:
      SG_ASSERT(false) << "Expand: unexpected element size for " << dtype_name(c.in[0].dtype());
  }
}

}  // namespace

extern const Lowering kExpandLowering;  // expand_jit.cpp
extern const OpDef kExpand;
const OpDef kExpand = with_lowering(
    &kExpandLowering, {"Expand", 2, 2, 1, 1, types_expand, shapes_expand, run_expand});

}  // namespace sgraph::ops
