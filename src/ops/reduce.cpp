// ReduceSum, ReduceMean, ReduceMax: one table of three entries sharing one axis rule, one shape
// rule and one strided reduction routine.
//
// Axes come from the optional second input (ONNX 13+ for ReduceSum, 18+ for the others) or else
// the `axes` attribute. Empty axes reduce everything, or with noop_with_empty_axes=1 copy the
// input. Reducing an empty set (a zero-size reduced dim) follows ONNX 18: ReduceSum gives 0,
// ReduceMax gives -inf for floats and the dtype's minimum for integers, ReduceMean is undefined in
// ONNX and throws here.
#include <cmath>
#include <limits>

#include "ops/op.h"

namespace sgraph::ops {
namespace {

enum class Reduction { sum, mean, max };

// Which input dims are reduced (all false for the no-op case).
std::vector<bool> reduced_dims(const Attributes& attrs, const Tensor* axes_input, int64_t rank) {
  Ints axes;
  if (axes_input) {
    SG_CHECK(axes_input->rank() <= 1)
        << "axes input must be 1-D, got shape " << shape_str(axes_input->shape());
    axes = axes_input->to_int64();
  } else {
    axes = attrs.get_ints("axes", {});
  }
  const bool noop = attrs.get_int("noop_with_empty_axes", 0) != 0;
  std::vector<bool> reduced(rank, axes.empty() && !noop);
  for (int64_t a : axes) {
    SG_CHECK(rank > 0) << "axis " << a << " is out of range for rank 0";
    const int64_t d = normalize_axis(a, rank);
    SG_CHECK(!reduced[d]) << "axis " << a << " appears twice in axes";
    reduced[d] = true;
  }
  return reduced;
}

// The input viewed with adjacent dims of the same kind merged and size-1 dims dropped, so that a
// single reduced block becomes [outer, reduced, inner]. out_strides is 0 along reduced dims.
struct Walk {
  Shape dims, out_strides;
  std::vector<bool> reduced;
  int64_t count = 1;  // elements folded into each output element
};

Walk make_walk(const Shape& shape, const std::vector<bool>& reduced) {
  Walk w;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) w.count *= shape[d];
    if (shape[d] == 1) continue;
    if (!w.dims.empty() && w.reduced.back() == reduced[d]) {
      w.dims.back() *= shape[d];
    } else {
      w.dims.push_back(shape[d]);
      w.reduced.push_back(reduced[d]);
    }
  }
  w.out_strides.assign(w.dims.size(), 0);
  int64_t stride = 1;
  for (size_t d = w.dims.size(); d-- > 0;)
    if (!w.reduced[d]) {
      w.out_strides[d] = stride;
      stride *= w.dims[d];
    }
  return w;
}

// acc[o] = step(acc[o], x[i]) for every input element i and its output element o. Walks the input
// in memory order, one innermost row at a time; an odometer over the outer dims tracks o. A reduced
// innermost row is folded into four partial results (starting at `identity`) so that consecutive
// steps do not wait on each other; step must therefore also combine two partials.
template <class T, class Acc, class Step>
void reduce_walk(const T* x, Acc* acc, const Walk& w, Acc identity, Step step) {
  const int64_t rank = static_cast<int64_t>(w.dims.size());
  if (rank == 0) {  // a single element
    acc[0] = step(acc[0], x[0]);
    return;
  }
  const int64_t inner = w.dims[rank - 1], total = numel(w.dims);
  const bool inner_reduced = w.reduced[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t o = 0;
  for (int64_t i = 0; i < total; i += inner) {
    if (inner_reduced) {
      const T* row = x + i;
      Acc p0 = acc[o], p1 = identity, p2 = identity, p3 = identity;
      int64_t j = 0;
      for (; j + 4 <= inner; j += 4) {
        p0 = step(p0, row[j]);
        p1 = step(p1, row[j + 1]);
        p2 = step(p2, row[j + 2]);
        p3 = step(p3, row[j + 3]);
      }
      for (; j < inner; ++j) p0 = step(p0, row[j]);
      acc[o] = step(step(p0, p1), step(p2, p3));
    } else {
      Acc* row = acc + o;
      for (int64_t j = 0; j < inner; ++j) row[j] = step(row[j], x[i + j]);
    }
    for (int64_t d = rank - 2; d >= 0; --d) {
      o += w.out_strides[d];
      if (++idx[d] < w.dims[d]) break;
      o -= w.out_strides[d] * w.dims[d];
      idx[d] = 0;
    }
  }
}

// Integer sums wrap (as numpy's do) instead of overflowing into undefined behaviour.
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

template <Reduction R>
void types_reduce(TypeCtx& c) {
  if constexpr (R == Reduction::max)
    c.expect_one_of(0, {DType::f32, DType::f64, DType::i32, DType::i64, DType::u8, DType::i8});
  else
    c.expect_one_of(0, {DType::f32, DType::f64, DType::i32, DType::i64});
  if (c.has(1)) c.expect_int_index(1);
  c.out[0] = c.in[0];
}

void shapes_reduce(ShapeCtx& c) {
  const Shape& in = c.shape(0);
  const std::vector<bool> reduced =
      reduced_dims(c.attrs(), c.has(1) ? &c.require_value(1) : nullptr, c.rank(0));
  const bool keepdims = c.attrs().get_int("keepdims", 1) != 0;
  Shape out;
  int64_t count = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d])
      out.push_back(in[d]);
    else if (keepdims)
      out.push_back(1);
    if (reduced[d]) count *= in[d];
  }
  SG_CHECK(c.node.op != OpKind::ReduceMean || count > 0 || numel(out) == 0)
      << "ReduceMean over an empty set is undefined (input shape " << shape_str(in) << ")";
  c.out[0] = std::move(out);
}

template <Reduction R, class T>
void reduce_typed(KernelCtx& c, const Walk& w) {
  constexpr bool is_max = R == Reduction::max;
  using Acc = std::conditional_t<is_max, T,
                                 std::conditional_t<std::is_floating_point_v<T>, double, int64_t>>;
  const int64_t n_out = c.out[0].numel();
  T* y = c.out[0].data<T>();
  if (n_out == 0) return;
  SG_ASSERT(R != Reduction::mean || w.count > 0) << "shapes() lets no empty mean through";
  Acc identity = 0;
  if constexpr (is_max)
    identity = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::lowest();
  std::vector<Acc> acc(n_out, identity);
  if constexpr (is_max) {
    reduce_walk(c.in[0].data<T>(), acc.data(), w, identity, [](T a, T b) {
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(b)) return b;  // NaN propagates, as in numpy's amax
      return a < b ? b : a;
    });
  } else {
    reduce_walk(c.in[0].data<T>(), acc.data(), w, identity, [](Acc a, auto b) -> Acc {
      if constexpr (std::is_floating_point_v<T>)
        return a + b;
      else
        return wrap_add(a, b);
    });
  }
  for (int64_t k = 0; k < n_out; ++k) {
    // Mean of integers truncates toward zero, like numpy's mean cast back to the input dtype.
    if constexpr (R == Reduction::mean)
      y[k] = static_cast<T>(acc[k] / static_cast<Acc>(w.count));
    else
      y[k] = static_cast<T>(acc[k]);
  }
}

template <Reduction R>
void run_reduce(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const Walk w =
      make_walk(x.shape(), reduced_dims(c.attrs(), c.has(1) ? &c.in[1] : nullptr, x.rank()));
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) reduce_typed<R, T>(c, w);
  });
}

}  // namespace

extern const OpDef kReduceSum, kReduceMean, kReduceMax;
const OpDef kReduceSum{"ReduceSum",
                       1,
                       2,
                       1,
                       1,
                       types_reduce<Reduction::sum>,
                       shapes_reduce,
                       run_reduce<Reduction::sum>};
const OpDef kReduceMean{"ReduceMean",
                        1,
                        2,
                        1,
                        1,
                        types_reduce<Reduction::mean>,
                        shapes_reduce,
                        run_reduce<Reduction::mean>};
const OpDef kReduceMax{"ReduceMax",
                       1,
                       2,
                       1,
                       1,
                       types_reduce<Reduction::max>,
                       shapes_reduce,
                       run_reduce<Reduction::max>};

}  // namespace sgraph::ops
