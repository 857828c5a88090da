// ArgMax, ArgMin {axis = 0, keepdims = 1, select_last_index = 0}: the i64 index of the largest
// (smallest) element along one axis. Ties give the first index, or the last with
// select_last_index=1. A NaN beats every number, as in numpy's argmax/argmin.
#include <algorithm>
#include <cmath>

#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

int64_t arg_axis(const Node& n, int64_t rank) {
  SG_CHECK(rank >= 1) << "input must have rank >= 1, got a scalar";
  return op_axis(n, static_cast<size_t>(rank));
}

void types_arg(TypeCtx& c) {
  c.expect_numeric(0);
  c.out[0] = DType::i64;
}

void shapes_arg(ShapeCtx& c) {
  const Shape& in = c.shape(0);
  const int64_t axis = arg_axis(c.node, c.rank(0));
  Shape out = in;
  if (c.attrs().get_int("keepdims", 1) != 0)
    out[axis] = 1;
  else
    out.erase(out.begin() + axis);
  SG_CHECK(in[axis] > 0 || numel(out) == 0)
      << "axis " << axis << " of shape " << shape_str(in) << " is empty: there is no index to pick";
  c.out[0] = std::move(out);
}

// Folds each [outer, dim, inner] column into its best index, reading the input in memory order.
template <bool kMax>
void run_arg(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const AxisSplit s = split_at_axis(x.shape(), arg_axis(c.node, x.rank()));
  const bool last = c.attrs().get_int("select_last_index", 0) != 0;
  int64_t* y = c.out[0].data<int64_t>();
  if (c.out[0].numel() == 0) return;
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      // Whether v replaces the current best b: strictly better, or equal when picking the last.
      auto replaces = [last](T v, T b) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(b)) return last && std::isnan(v);
          if (std::isnan(v)) return true;
        }
        return (kMax ? v > b : v < b) || (last && v == b);
      };
      const T* px = x.data<T>();
      std::vector<T> best(s.inner);
      for (int64_t o = 0; o < s.outer; ++o) {
        const T* block = px + o * s.dim * s.inner;
        int64_t* yo = y + o * s.inner;
        std::copy(block, block + s.inner, best.begin());
        std::fill(yo, yo + s.inner, int64_t{0});
        for (int64_t j = 1; j < s.dim; ++j) {
          const T* row = block + j * s.inner;
          for (int64_t i = 0; i < s.inner; ++i)
            if (replaces(row[i], best[i])) {
              best[i] = row[i];
              yo[i] = j;
            }
        }
      }
    }
  });
}

}  // namespace

extern const Lowering kArgReduceLowering;  // arg_reduce_jit.cpp
extern const OpDef kArgMax, kArgMin;
const OpDef kArgMax = with_lowering(&kArgReduceLowering,
                                    {"ArgMax", 1, 1, 1, 1, types_arg, shapes_arg, run_arg<true>});
const OpDef kArgMin = with_lowering(&kArgReduceLowering,
                                    {"ArgMin", 1, 1, 1, 1, types_arg, shapes_arg, run_arg<false>});

}  // namespace sgraph::ops
