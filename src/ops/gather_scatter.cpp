// Element indexing (ONNX opset 18):
//   GatherElements(data, indices) {axis = 0}: out[p] = data[p with p[axis] = indices[p]]
//   ScatterElements(data, indices, updates) {axis = 0, reduction}: a copy of data where
//     out[p with p[axis] = indices[p]] (op)= updates[p]
//   GatherND(data, indices) {batch_dims = 0}: each row of indices' last dim picks a slice of data
//   ScatterND(data, indices, updates) {reduction}: each row writes (or reduces) a slice of updates
// reduction is "none" (the default: plain writes, the last one wins), "add", "mul", "max" or
// "min". Negative indices count from the end of their dim; any index out of range is an error,
// checked before it is used.
#include <algorithm>
#include <string>
#include <type_traits>

#include "ops/int_math.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

enum class Reduce { none, add, mul, max, min };

Reduce scatter_reduction(const Attributes& attrs) {
  const std::string r = attrs.get_string("reduction", "none");
  if (r == "none") return Reduce::none;
  if (r == "add") return Reduce::add;
  if (r == "mul") return Reduce::mul;
  if (r == "max") return Reduce::max;
  SG_CHECK(r == "min") << "reduction must be 'none', 'add', 'mul', 'max' or 'min', got '" << r
                       << "'";
  return Reduce::min;
}

// dst combined with the scattered value v.
template <class T>
T combine(Reduce r, T dst, T v) {
  switch (r) {
    case Reduce::none:
      return v;
    case Reduce::add:
      return wrap_add(dst, v);  // integers wrap (src/ops/int_math.h)
    case Reduce::mul:
      return wrap_mul(dst, v);
    case Reduce::max:
      return std::max(dst, v);
    case Reduce::min:
      return std::min(dst, v);
  }
  return v;
}

// `i` wrapped into [0, dim), or an error naming where it was read.
int64_t wrap_index(int64_t i, int64_t dim, int64_t at, int64_t axis) {
  SG_CHECK(i >= -dim && i < dim) << "index " << i << " at position " << at
                                 << " is out of range for axis " << axis << " of size " << dim;
  return i < 0 ? i + dim : i;
}

// ---- GatherElements, ScatterElements -------------------------------------------------------

void types_elements(TypeCtx& c) {
  c.expect_int_index(1);
  if (c.has(2)) c.expect_same(0, 2);
  if (c.node.op == OpKind::ScatterElements) scatter_reduction(c.attrs());
  c.out[0] = c.in[0];
}

void shapes_elements(ShapeCtx& c) {
  const Shape &data = c.shape(0), &idx = c.shape(1);
  SG_CHECK(!data.empty()) << "data must have rank >= 1, got a scalar";
  SG_CHECK(idx.size() == data.size())
      << "indices of shape " << shape_str(idx) << " must have the rank of data " << shape_str(data);
  const int64_t axis = normalize_axis(c.attrs().get_int("axis", 0), c.rank(0));
  for (size_t d = 0; d < data.size(); ++d)
    SG_CHECK(static_cast<int64_t>(d) == axis || idx[d] <= data[d])
        << "indices of shape " << shape_str(idx) << " exceed data of shape " << shape_str(data)
        << " along dim " << d;
  if (c.has(2))
    SG_CHECK(c.shape(2) == idx) << "updates of shape " << shape_str(c.shape(2))
                                << " must have the shape of indices " << shape_str(idx);
  c.out[0] = c.has(2) ? data : idx;
}

// Calls f(k, offset) for each element k of the indices (row-major), offset being the position in
// data it addresses.
template <class F>
void for_each_element(const Shape& data, const Tensor& indices, int64_t axis, F&& f) {
  const Shape& shape = indices.shape();
  const std::vector<int64_t> index = indices.to_int64();
  const Shape stride = strides_of(data);
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> pos(rank, 0);
  int64_t base = 0;  // the offset of pos in data, without its axis coordinate
  for (int64_t k = 0; k < static_cast<int64_t>(index.size()); ++k) {
    f(k, base + wrap_index(index[k], data[axis], k, axis) * stride[axis]);
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t step = d == axis ? 0 : stride[d];
      base += step;
      if (++pos[d] < shape[d]) break;
      base -= step * shape[d];
      pos[d] = 0;
    }
  }
}

void run_gather_elements(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const int64_t axis = normalize_axis(c.attrs().get_int("axis", 0), x.rank());
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    T* dst = c.out[0].data<T>();
    for_each_element(x.shape(), c.in[1], axis, [&](int64_t k, int64_t off) { dst[k] = src[off]; });
  });
}

void run_scatter_elements(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const int64_t axis = normalize_axis(c.attrs().get_int("axis", 0), x.rank());
  const Reduce r = scatter_reduction(c.attrs());
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* up = c.in[2].data<T>();
    T* dst = c.out[0].data<T>();
    std::copy(x.data<T>(), x.data<T>() + x.numel(), dst);
    for_each_element(x.shape(), c.in[1], axis,
                     [&](int64_t k, int64_t off) { dst[off] = combine(r, dst[off], up[k]); });
  });
}

// ---- GatherND, ScatterND -------------------------------------------------------------------

void types_nd(TypeCtx& c) {
  c.expect_int_index(1);
  if (c.has(2)) c.expect_same(0, 2);
  if (c.node.op == OpKind::ScatterND) scatter_reduction(c.attrs());
  c.out[0] = c.in[0];
}

// The decoded layout: indices [batch..., rows..., depth] address data [batch..., depth dims...,
// slice dims...]; each row picks one slice of `slice` elements.
struct NdLayout {
  int64_t batch_dims, depth;
};

NdLayout nd_layout(const Node& n, const Shape& data, const Shape& idx) {
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(idx.size());
  const int64_t b = n.attrs.get_int("batch_dims", 0);
  SG_CHECK(r >= 1 && q >= 1) << "data and indices must have rank >= 1, got shapes "
                             << shape_str(data) << " and " << shape_str(idx);
  SG_CHECK(b >= 0 && b < std::min(r, q))
      << "batch_dims " << b << " must be in [0, " << std::min(r, q) << ")";
  const int64_t depth = idx.back();
  SG_CHECK(depth >= 1 && depth <= r - b)
      << "the last dim of indices " << shape_str(idx) << " must be in [1, " << r - b << "]";
  for (int64_t d = 0; d < b; ++d)
    SG_CHECK(idx[d] == data[d]) << "the batch dims of indices " << shape_str(idx) << " and data "
                                << shape_str(data) << " differ";
  return {b, depth};
}

void shapes_nd(ShapeCtx& c) {
  const Shape &data = c.shape(0), &idx = c.shape(1);
  const NdLayout l = nd_layout(c.node, data, idx);
  Shape rows(idx.begin(), idx.end() - 1);
  rows.insert(rows.end(), data.begin() + l.batch_dims + l.depth, data.end());
  if (!c.has(2)) {
    c.out[0] = std::move(rows);
    return;
  }
  SG_CHECK(c.shape(2) == rows) << "updates of shape " << shape_str(c.shape(2)) << " must be "
                               << shape_str(rows) << " for data " << shape_str(data)
                               << " and indices " << shape_str(idx);
  c.out[0] = data;
}

// Calls f(row, offset) for each row of the indices, offset being the data position of the slice
// it picks (batch offset included).
template <class F>
void for_each_row(const Shape& data, const Tensor& indices, NdLayout l, F&& f) {
  const Shape stride = strides_of(data);
  const std::vector<int64_t> index = indices.to_int64();
  const Shape& idx = indices.shape();
  const int64_t rows = static_cast<int64_t>(index.size()) / l.depth;
  int64_t per_batch = 1;  // rows in one batch
  for (size_t d = l.batch_dims; d + 1 < idx.size(); ++d) per_batch *= idx[d];
  const int64_t batch_stride = l.batch_dims == 0 ? 0 : stride[l.batch_dims - 1];
  for (int64_t j = 0; j < rows; ++j) {
    int64_t off = per_batch == 0 ? 0 : j / per_batch * batch_stride;
    for (int64_t t = 0; t < l.depth; ++t) {
      const int64_t d = l.batch_dims + t;
      off += wrap_index(index[j * l.depth + t], data[d], j * l.depth + t, d) * stride[d];
    }
    f(j, off);
  }
}

void run_gather_nd(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const NdLayout l = nd_layout(c.node, x.shape(), c.in[1].shape());
  const int64_t slice = numel(Shape(x.shape().begin() + l.batch_dims + l.depth, x.shape().end()));
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    T* dst = c.out[0].data<T>();
    for_each_row(x.shape(), c.in[1], l, [&](int64_t j, int64_t off) {
      std::copy(src + off, src + off + slice, dst + j * slice);
    });
  });
}

void run_scatter_nd(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const NdLayout l = nd_layout(c.node, x.shape(), c.in[1].shape());
  const int64_t slice = numel(Shape(x.shape().begin() + l.depth, x.shape().end()));
  const Reduce r = scatter_reduction(c.attrs());
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* up = c.in[2].data<T>();
    T* dst = c.out[0].data<T>();
    std::copy(x.data<T>(), x.data<T>() + x.numel(), dst);
    for_each_row(x.shape(), c.in[1], l, [&](int64_t j, int64_t off) {
      for (int64_t e = 0; e < slice; ++e)
        dst[off + e] = combine(r, dst[off + e], up[j * slice + e]);
    });
  });
}

}  // namespace

extern const OpDef kGatherElements, kScatterElements, kGatherND, kScatterND;
const OpDef kGatherElements{"GatherElements",   2, 2, 1, 1, types_elements, shapes_elements,
                            run_gather_elements};
const OpDef kScatterElements{"ScatterElements",   3, 3, 1, 1, types_elements, shapes_elements,
                             run_scatter_elements};
const OpDef kGatherND{"GatherND", 2, 2, 1, 1, types_nd, shapes_nd, run_gather_nd};
const OpDef kScatterND{"ScatterND", 3, 3, 1, 1, types_nd, shapes_nd, run_scatter_nd};

}  // namespace sgraph::ops
