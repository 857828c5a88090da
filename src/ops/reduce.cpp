// The Reduce* ops: one table sharing one axis rule, one shape rule and one strided reduction
// routine. Each reduction is a per-element map, a combining step, an identity and a finish.
//
// Axes come from the optional second input (ONNX 13+ for ReduceSum, 18+ for the others) or else
// the `axes` attribute. Empty axes reduce everything, or with noop_with_empty_axes=1 copy the
// input. Reducing an empty set (a zero-size reduced dim) follows ONNX 18: the identity (0 for the
// sums, 1 for ReduceProd, -inf for ReduceLogSum(Exp)); ReduceMax/ReduceMin give -inf/+inf for
// floats and the dtype's lowest/highest value for integers; ReduceMean is undefined in ONNX and
// throws here.
//
// Dtypes: floats and i32/i64 everywhere, also u8/i8 for ReduceMax/ReduceMin. ReduceL2, ReduceLogSum
// and ReduceLogSumExp take floats only (their results are not integers). Float inputs accumulate in
// double; integer sums and products wrap, as numpy's do.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/grad.h"
#include "ops/int_math.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {

std::vector<bool> reduced_dims(const Node& n, size_t rank, const Tensor* axes_input) {
  Ints axes;
  if (axes_input) {
    SG_CHECK(axes_input->rank() <= 1)
        << "axes input must be 1-D, got shape " << shape_str(axes_input->shape());
    axes = axes_input->to_int64();
  } else {
    axes = n.attrs.get_ints("axes", {});
  }
  const bool noop = n.attrs.get_int("noop_with_empty_axes", 0) != 0;
  const auto r = static_cast<int64_t>(rank);
  std::vector<bool> reduced(rank, axes.empty() && !noop);
  for (int64_t a : axes) {
    SG_CHECK(r > 0) << "axis " << a << " is out of range for rank 0";
    const int64_t d = normalize_axis(a, r);
    SG_CHECK(!reduced[d]) << "axis " << a << " appears twice in axes";
    reduced[d] = true;
  }
  return reduced;
}

namespace {

enum class Reduction { sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square };

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
// steps do not wait on each other; merge combines two partials.
template <class T, class Acc, class Step, class Merge>
void reduce_walk(const T* x, Acc* acc, const Walk& w, Acc identity, Step step, Merge merge) {
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
      acc[o] = merge(merge(p0, p1), merge(p2, p3));
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

// Integer sums and products wrap (as numpy's do; src/ops/int_math.h) instead of overflowing into
// undefined behaviour.
template <class Acc>
Acc add(Acc a, Acc b) {
  return wrap_add(a, b);
}
template <class Acc>
Acc mul(Acc a, Acc b) {
  return wrap_mul(a, b);
}

// log(sum(exp(x))) accumulated in one pass without overflow: the running maximum m and
// s = sum(exp(x - m)). A NaN input makes s NaN, which every later step keeps.
struct LogSumExp {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
};
LogSumExp lse_step(LogSumExp a, double x) {
  if (x > a.m) return {x, a.s * std::exp(a.m - x) + 1};
  if (x == a.m) return {a.m, a.s + 1};  // also when both are the same infinity
  return {a.m, a.s + std::exp(x - a.m)};
}
LogSumExp lse_merge(LogSumExp a, LogSumExp b) {
  if (a.m == b.m) return {a.m, a.s + b.s};
  if (a.m < b.m) std::swap(a, b);
  return {a.m, a.s + b.s * std::exp(b.m - a.m)};
}

template <Reduction R>
void types_reduce(TypeCtx& c) {
  if constexpr (R == Reduction::max || R == Reduction::min)
    c.expect_one_of(0, {DType::f32, DType::f64, DType::i32, DType::i64, DType::u8, DType::i8});
  else if constexpr (R == Reduction::l2 || R == Reduction::log_sum || R == Reduction::log_sum_exp)
    c.expect_float(0);
  else
    c.expect_one_of(0, {DType::f32, DType::f64, DType::i32, DType::i64});
  if (c.has(1)) c.expect_int_index(1);
  c.out[0] = c.in[0];
}

void shapes_reduce(ShapeCtx& c) {
  const Shape& in = c.shape(0);
  const std::vector<bool> reduced =
      reduced_dims(c.node, in.size(), c.has(1) ? &c.require_value(1) : nullptr);
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

// ReduceMax / ReduceMin: reduce straight into the output (NaN propagates, as in numpy's amax).
template <Reduction R, class T>
void reduce_extreme(const T* x, T* y, int64_t n_out, const Walk& w) {
  constexpr bool is_max = R == Reduction::max;
  using L = std::numeric_limits<T>;
  const T identity = L::has_infinity ? (is_max ? -L::infinity() : L::infinity())
                                     : (is_max ? L::lowest() : L::max());
  std::fill(y, y + n_out, identity);
  auto pick = [](T a, T b) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(b)) return b;
    return (is_max ? a < b : b < a) ? b : a;
  };
  reduce_walk(x, y, w, identity, pick, pick);
}

// The sums and ReduceProd: map each element, fold with + (or *), then finish.
template <Reduction R, class T>
void reduce_fold(const T* x, T* y, int64_t n_out, const Walk& w) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  constexpr bool is_prod = R == Reduction::prod;
  auto merge = [](Acc a, Acc b) { return is_prod ? mul(a, b) : add(a, b); };
  auto step = [merge](Acc a, T v) {
    Acc e = static_cast<Acc>(v);
    if constexpr (R == Reduction::l1) e = e < 0 ? mul(e, Acc(-1)) : e;
    if constexpr (R == Reduction::l2 || R == Reduction::sum_square) e = mul(e, e);
    return merge(a, e);
  };
  const Acc identity = is_prod ? 1 : 0;
  std::vector<Acc> acc(n_out, identity);
  reduce_walk(x, acc.data(), w, identity, step, merge);
  for (int64_t k = 0; k < n_out; ++k) {
    // Mean of integers truncates toward zero, like numpy's mean cast back to the input dtype.
    if constexpr (R == Reduction::mean)
      y[k] = static_cast<T>(acc[k] / static_cast<Acc>(w.count));
    else if constexpr (R == Reduction::l2)
      y[k] = static_cast<T>(std::sqrt(acc[k]));
    else if constexpr (R == Reduction::log_sum)
      y[k] = static_cast<T>(std::log(acc[k]));
    else
      y[k] = static_cast<T>(acc[k]);
  }
}

template <Reduction R>
void run_reduce(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const Walk w =
      make_walk(x.shape(), reduced_dims(c.node, x.shape().size(), c.has(1) ? &c.in[1] : nullptr));
  const int64_t n_out = c.out[0].numel();
  if (n_out == 0) return;
  SG_ASSERT(R != Reduction::mean || w.count > 0) << "shapes() lets no empty mean through";
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* px = x.data<T>();
    T* y = c.out[0].data<T>();
    if constexpr (std::is_same_v<T, bool>) {
      SG_ASSERT(false) << "reduction of bool";
    } else if constexpr (R == Reduction::max || R == Reduction::min) {
      reduce_extreme<R>(px, y, n_out, w);
    } else if constexpr (R == Reduction::log_sum_exp) {
      std::vector<LogSumExp> acc(n_out);
      reduce_walk(
          px, acc.data(), w, LogSumExp{}, [](LogSumExp a, T v) { return lse_step(a, v); },
          lse_merge);
      for (int64_t k = 0; k < n_out; ++k) y[k] = static_cast<T>(acc[k].m + std::log(acc[k].s));
    } else {
      reduce_fold<R>(px, y, n_out, w);
    }
  });
}

// The gradient of ReduceSum and ReduceMean: dy (ReduceMean: divided by the number of elements
// each output averages) broadcast back over the reduced dims.
void grad_reduce(GradCtx& c) {
  const ValueId x = c.in(0);
  Tensor axes;
  if (c.has_in(1)) {
    axes = c.b.graph().values[c.in(1)].initializer;
    SG_CHECK(axes.defined()) << "cannot differentiate: the axes input is not a constant";
  }
  const std::vector<bool> reduced =
      reduced_dims(c.node, c.dims(x).size(), axes.defined() ? &axes : nullptr);
  Ints list;
  for (size_t d = 0; d < reduced.size(); ++d)
    if (reduced[d]) list.push_back(static_cast<int64_t>(d));
  ValueId dy = c.dout(0);
  if (c.node.op == OpKind::ReduceMean) dy = c.b.div(dy, c.count_ratio(x, c.out(0)));
  c.set(0, c.expand_to(dy, x, list, c.attrs().get_int("keepdims", 1) != 0));
}

#define SG_REDUCE(Name, R, grad, lowering)                                                    \
  extern const OpDef k##Name;                                                                 \
  const OpDef k##Name =                                                                       \
      with_lowering(lowering, with_grad(grad, {#Name, 1, 2, 1, 1, types_reduce<Reduction::R>, \
                                               shapes_reduce, run_reduce<Reduction::R>}))

}  // namespace

extern const Lowering kReduceLowering;  // reduce_jit.cpp: all but ReduceLogSumExp

SG_REDUCE(ReduceSum, sum, grad_reduce, &kReduceLowering);
SG_REDUCE(ReduceMean, mean, grad_reduce, &kReduceLowering);
SG_REDUCE(ReduceMax, max, nullptr, &kReduceLowering);
SG_REDUCE(ReduceMin, min, nullptr, &kReduceLowering);
SG_REDUCE(ReduceProd, prod, nullptr, &kReduceLowering);
SG_REDUCE(ReduceL1, l1, nullptr, &kReduceLowering);
SG_REDUCE(ReduceL2, l2, nullptr, &kReduceLowering);
SG_REDUCE(ReduceLogSum, log_sum, nullptr, &kReduceLowering);
SG_REDUCE(ReduceLogSumExp, log_sum_exp, nullptr, nullptr);
SG_REDUCE(ReduceSumSquare, sum_square, nullptr, &kReduceLowering);

}  // namespace sgraph::ops
