// Compress and NonZero: ops whose output size depends on input values (how many elements are
// selected), so their shape rules read those values with require_value: a compiled region guards
// them like any shape-valued input.
#include <algorithm>
#include <cstring>
#include <optional>

#include "ops/op.h"

namespace sgraph::ops {
namespace {

// Compress's axis, normalised; std::nullopt (no attribute): the input is read flattened.
std::optional<int64_t> compress_axis(const Node& n, int64_t rank) {
  if (!n.attrs.has("axis")) return std::nullopt;
  return normalize_axis(n.attrs.get_int("axis"), rank);
}

}  // namespace

// Compress(x, condition) {axis}: the slices of x along `axis` (of x flattened when absent) whose
// condition is true; a condition shorter than the axis counts as false past its end.
extern const OpDef kCompress;
const OpDef kCompress{
    "Compress",
    2,
    2,
    1,
    1,
    [](TypeCtx& c) {
      c.expect_one_of(1, {DType::boolean});
      c.out[0] = c.in[0];
    },
    [](ShapeCtx& c) {
      const Shape& s = c.shape(0);
      const std::optional<int64_t> axis = compress_axis(c.node, c.rank(0));
      const Tensor& cond = c.require_value(1);
      SG_CHECK(cond.rank() == 1) << "Compress condition must be 1-D, got shape "
                                 << shape_str(cond.shape());
      const int64_t dim = axis ? s[*axis] : numel(s);
      SG_CHECK(cond.numel() <= dim) << "Compress condition has " << cond.numel()
                                    << " elements, more than the " << dim << " it selects from";
      int64_t kept = 0;
      for (int64_t i = 0; i < cond.numel(); ++i) kept += cond.data<bool>()[i];
      if (!axis) {
        c.out[0] = {kept};
        return;
      }
      Shape out = s;
      out[*axis] = kept;
      c.out[0] = out;
    },
    [](KernelCtx& c) {
      const Tensor& x = c.in[0];
      const std::optional<int64_t> axis = compress_axis(c.node, x.rank());
      // [outer, dim, inner] around the axis; flattened, the whole tensor is one axis.
      const AxisSplit v = axis ? split_at_axis(x.shape(), *axis) : AxisSplit{1, x.numel(), 1};
      const bool* cond = c.in[1].data<bool>();
      const int64_t n = std::min(v.dim, c.in[1].numel());
      const size_t block = static_cast<size_t>(v.inner) * dtype_size(x.dtype());
      const auto* src = static_cast<const char*>(x.raw_data());
      auto* dst = static_cast<char*>(c.out[0].raw_data());
      if (block == 0) return;
      for (int64_t o = 0; o < v.outer; ++o)
        for (int64_t i = 0; i < n; ++i)
          if (cond[i]) {
            std::memcpy(dst, src + (o * v.dim + i) * block, block);
            dst += block;
          }
    }};

// NonZero(x): the indices of x's non-zero elements (NaN included), [rank, count] int64 in row-major
// order of the elements. A scalar is read as a 1-element vector (as numpy does), giving [1, count].
extern const OpDef kNonZero;
const OpDef kNonZero{"NonZero",
                     1,
                     1,
                     1,
                     1,
                     [](TypeCtx& c) { c.out[0] = DType::i64; },
                     [](ShapeCtx& c) {
                       const Tensor& x = c.require_value(0);
                       int64_t count = 0;
                       visit_dtype(x.dtype(), [&]<class T>() {
                         const T* p = x.data<T>();
                         for (int64_t i = 0; i < x.numel(); ++i) count += p[i] != T(0);
                       });
                       c.out[0] = {std::max<int64_t>(x.rank(), 1), count};
                     },
                     [](KernelCtx& c) {
                       const Tensor& x = c.in[0];
                       const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
                       const int64_t rank = static_cast<int64_t>(shape.size()),
                                     count = c.out[0].dim(1);
                       int64_t* y = c.out[0].data<int64_t>();
                       std::vector<int64_t> idx(rank, 0);
                       int64_t j = 0;
                       visit_dtype(x.dtype(), [&]<class T>() {
                         const T* p = x.data<T>();
                         for (int64_t i = 0; i < x.numel(); ++i) {
                           if (p[i] != T(0)) {
                             for (int64_t d = 0; d < rank; ++d) y[d * count + j] = idx[d];
                             ++j;
                           }
                           for (int64_t d = rank - 1; d >= 0 && ++idx[d] == shape[d]; --d)
                             idx[d] = 0;
                         }
                       });
                     }};

}  // namespace sgraph::ops
