// Slice: a strided window of a tensor (ONNX 10+ inputs, or the opset-1 attributes). The copy
// merges dimensions that stay contiguous and moves whole inner runs with memcpy.
#include <algorithm>
#include <cstring>

#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {

std::vector<SliceAxis> slice_params(const Node& n, const Shape& in, const Tensor* starts_in,
                                    const Tensor* ends_in, const Tensor* axes_in,
                                    const Tensor* steps_in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  Ints starts, ends, axes, steps;
  bool has_axes = false;
  if (starts_in != nullptr) {  // opset 10+: inputs
    SG_CHECK(ends_in != nullptr) << "Slice has a starts input but no ends input";
    starts = starts_in->to_int64();
    ends = ends_in->to_int64();
    has_axes = axes_in != nullptr;
    if (has_axes) axes = axes_in->to_int64();
    if (steps_in != nullptr)
      steps = steps_in->to_int64();
    else
      steps.assign(starts.size(), 1);
  } else {  // opset 1: attributes
    starts = n.attrs.get_ints("starts");
    ends = n.attrs.get_ints("ends");
    has_axes = n.attrs.has("axes");
    if (has_axes) axes = n.attrs.get_ints("axes");
    steps.assign(starts.size(), 1);
  }
  const size_t k = starts.size();
  if (!has_axes)
    for (size_t i = 0; i < k; ++i) axes.push_back(static_cast<int64_t>(i));
  SG_CHECK(ends.size() == k && axes.size() == k && steps.size() == k)
      << "Slice needs as many ends, axes and steps as starts (" << k << "), got " << ends.size()
      << ", " << axes.size() << " and " << steps.size();

  std::vector<SliceAxis> r(in.size());
  for (size_t d = 0; d < in.size(); ++d) r[d].count = in[d];
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < k; ++i) {
    const int64_t a = normalize_axis(axes[i], rank, "Slice axis");
    SG_CHECK(!seen[a]) << "Slice axis " << axes[i] << " is repeated";
    seen[a] = true;
    const int64_t dim = in[a], step = steps[i];
    SG_CHECK(step != 0) << "Slice step for axis " << axes[i] << " is 0";
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    // Clamp as ONNX does: forward to [0, dim]; backward start to [0, dim - 1] and end to
    // [-1, dim - 1] (-1: past element 0). Max before min, so an empty axis gives start -1.
    const int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? dim : dim - 1;
    s = std::min(std::max(s, int64_t{0}), hi);
    e = std::min(std::max(e, lo), hi);
    // Lengths in unsigned arithmetic: |step| may be as large as INT64_MAX + 1.
    const uint64_t mag = step > 0 ? uint64_t(step) : 0 - uint64_t(step);
    const int64_t span = step > 0 ? e - s : s - e;
    SliceAxis& out = r[a];
    out.count = span <= 0 ? 0 : static_cast<int64_t>(1 + uint64_t(span - 1) / mag);
    out.start = std::max<int64_t>(s, 0);
    out.step = out.count > 1 ? step : 1;  // steps only matter with 2+ elements (no overflow)
  }
  return r;
}

std::optional<SliceFromStarts> slice_from_starts(size_t rank, const Tensor& starts,
                                                 const Tensor* axes, const Tensor* steps,
                                                 std::string& why) {
  SliceFromStarts f;
  f.start = starts.to_int64();
  const size_t k = f.start.size();
  Ints ax(k), st(k, 1);
  for (size_t i = 0; i < k; ++i) ax[i] = static_cast<int64_t>(i);
  if (axes) ax = axes->to_int64();
  if (steps) st = steps->to_int64();
  if (ax.size() != k || st.size() != k) {
    why = "as many axes and steps as starts";
    return std::nullopt;
  }
  const auto r = static_cast<int64_t>(rank);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < k; ++i) {
    const int64_t a = ax[i] < 0 ? ax[i] + r : ax[i];
    if (a < 0 || a >= r || seen[static_cast<size_t>(a)] || st[i] != 1 || f.start[i] < 0) {
      why = "computed ends with a start below 0, a step other than 1 or a repeated axis";
      return std::nullopt;
    }
    seen[static_cast<size_t>(a)] = true;
    f.axis.push_back(static_cast<size_t>(a));
  }
  return f;
}

namespace {

// Copies y[i] = x[base + sum_d idx_d * stride_d] for every index of y's shape (in elements).
void strided_copy(const Tensor& x, Tensor& y, int64_t base, const Shape& stride) {
  if (y.numel() == 0) return;
  // Drop size-1 dims, then merge dim d-1 into d when walking d-1 continues along d.
  Shape dims, st;
  for (size_t d = 0; d < stride.size(); ++d)
    if (y.shape()[d] != 1) {
      dims.push_back(y.shape()[d]);
      st.push_back(stride[d]);
    }
  for (size_t d = dims.size(); d-- > 1;)
    if (st[d - 1] == st[d] * dims[d]) {
      dims[d] *= dims[d - 1];
      dims.erase(dims.begin() + (d - 1));
      st.erase(st.begin() + (d - 1));
    }
  if (dims.empty()) dims = st = {1};
  const int64_t rank = static_cast<int64_t>(dims.size()), inner = dims.back();
  const int64_t rows = numel(dims) / inner, inner_stride = st.back();
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    T* dst = y.data<T>();
    std::vector<int64_t> idx(rank, 0);
    int64_t off = base;
    for (int64_t r = 0; r < rows; ++r, dst += inner) {
      if (inner_stride == 1) {
        std::memcpy(dst, src + off, inner * sizeof(T));
      } else {
        for (int64_t j = 0; j < inner; ++j) dst[j] = src[off + j * inner_stride];
      }
      for (int64_t d = rank - 2; d >= 0; --d) {  // advance the outer index
        off += st[d];
        if (++idx[d] < dims[d]) break;
        off -= st[d] * dims[d];
        idx[d] = 0;
      }
    }
  });
}

void types_slice(TypeCtx& c) {
  for (size_t i = 1; i < c.in.size(); ++i)
    if (c.has(i)) c.expect_int_index(i);
  types_same_as_input0(c);
}

// The elements a Slice of a 1-D vector with known elements (a shape) picks, its parameters
// constants.
std::optional<SymShape> symbolic_value_slice(const Graph& g, const Node& n,
                                             std::span<const SymShape* const> in,
                                             std::span<const SymShape* const> elems) {
  if (!in[0] || !elems[0] || in[0]->size() != 1 || in[0]->front().symbolic()) return std::nullopt;
  std::array<const Tensor*, 4> v{};
  for (size_t i = 1; i < 5 && i < n.inputs.size(); ++i) {
    if (n.inputs[i] == kNoValue) continue;
    if (!g.values[n.inputs[i]].initializer.defined()) return std::nullopt;
    v[i - 1] = &g.values[n.inputs[i]].initializer;
  }
  const SymShape& x = *elems[0];
  const SliceAxis a = slice_params(n, {static_cast<int64_t>(x.size())}, v[0], v[1], v[2], v[3])[0];
  SymShape out;
  for (int64_t i = 0; i < a.count; ++i) out.push_back(x[static_cast<size_t>(a.start + a.step * i)]);
  return out;
}

}  // namespace

// Slice(data, starts?, ends?, axes?, steps?) {starts, ends, axes: the opset-1 form}.
extern const Lowering kSliceLowering;  // slice_jit.cpp
extern const OpDef kSlice;
const OpDef kSlice = with_lowering(
    &kSliceLowering,
    with_symbolic_value(symbolic_value_slice,
                        OpDef{"Slice", 1, 5, 1, 1, types_slice,
                              [](ShapeCtx& c) {
                                std::array<const Tensor*, 4> v{};
                                for (size_t i = 1; i < 5; ++i)
                                  if (c.has(i)) v[i - 1] = &c.require_value(i);
                                Shape out;
                                for (const SliceAxis& a :
                                     slice_params(c.node, c.shape(0), v[0], v[1], v[2], v[3]))
                                  out.push_back(a.count);
                                c.out[0] = std::move(out);
                              },
                              [](KernelCtx& c) {
                                std::array<const Tensor*, 4> v{};
                                for (size_t i = 1; i < 5; ++i)
                                  if (c.has(i)) v[i - 1] = &c.in[i];
                                const Tensor& x = c.in[0];
                                const std::vector<SliceAxis> axes =
                                    slice_params(c.node, x.shape(), v[0], v[1], v[2], v[3]);
                                const Shape st = strides_of(x.shape());
                                int64_t base = 0;
                                Shape stride(st.size());
                                for (size_t d = 0; d < st.size(); ++d) {
                                  base += axes[d].start * st[d];
                                  stride[d] = axes[d].step * st[d];
                                }
                                strided_copy(x, c.out[0], base, stride);
                              }}));

}  // namespace sgraph::ops
