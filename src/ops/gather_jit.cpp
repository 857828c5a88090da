// Gather's lowering: the element of `data` at the index loaded from `indices` (a negative one
// wraps). Constant indices are checked to be in range when the kernel is built. Otherwise `data`
// must be a constant (an embedding or lookup table) and the index is clamped into [0, dim): a
// kernel cannot throw, so where the reference kernel throws on an out-of-range index, the kernel
// returns the element at the clamped index. In a dynamic region the axis may be symbolic (only
// constant indices 0 and -1 then: why_not_dynamic_gather), its size read at run time.
#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

std::string why_not_gather(const Graph& g, const Node& n) {
  if (is_constant(g, n, 0) || is_constant(g, n, 1)) return "";
  return "neither its data nor its indices are constants";
}

// "" when `out` is the gather of `ds` by indices of shape `is` along `axis`.
std::string check_gather(const SymShape& ds, const SymShape& is, int64_t axis,
                         const SymShape& out) {
  SymShape expect(ds.begin(), ds.begin() + axis);
  expect.insert(expect.end(), is.begin(), is.end());
  expect.insert(expect.end(), ds.begin() + axis + 1, ds.end());
  return out == expect ? "" : "its output shape is not a gather of its data by its indices";
}

llvm::Value* generate_gather(Emitter& e, const Node& n, const Index& idx) {
  const ValueId data = n.inputs[0], indices = n.inputs[1];
  const SymShape ds = e.dims(data), is = e.dims(indices), out = e.dims(n.outputs[0]);
  SG_CHECK(!ds.empty()) << node_str(n) << ": data is a scalar";
  const int64_t axis = op_axis(n, ds.size());
  const std::string why = check_gather(ds, is, axis, out);
  SG_CHECK(why.empty()) << node_str(n) << ": " << why << " (" << sym_shape_str(out, {}) << ", "
                        << sym_shape_str(ds, {}) << " by " << sym_shape_str(is, {}) << ")";
  const SymDim dim = ds[axis];
  SG_CHECK(dim.symbolic() || dim.offset > 0) << node_str(n) << ": gathers from an empty axis";
  const Tensor& known = e.graph.values[indices].initializer;
  if (known.defined() && !dim.symbolic())
    for (int64_t k : known.to_int64())
      SG_CHECK(k >= -dim.offset && k < dim.offset)
          << node_str(n) << ": index " << k << " is out of range for axis " << axis << " of size "
          << dim.offset;
  llvm::IRBuilderBase& b = e.b;
  const auto at = idx.begin() + axis;
  llvm::Value* size = e.dim(dim);
  llvm::Value* k = b.CreateSExt(e.element(indices, Index(at, at + is.size())), b.getInt64Ty());
  k = b.CreateSelect(b.CreateICmpSLT(k, e.i64(0)), b.CreateAdd(k, size), k);
  if (!known.defined() || dim.symbolic())  // see the top of this file
    k = dim.symbolic() ? clamp(e, k, 0, b.CreateSub(size, e.i64(1)))
                       : clamp(e, k, 0, dim.offset - 1);
  Index data_idx(idx.begin(), at);
  data_idx.push_back(k);
  data_idx.insert(data_idx.end(), at + is.size(), idx.end());
  return e.element(data, data_idx);
}

// Shapes as the gather's; along a symbolic axis only constant indices 0 and -1, which every size
// the guard takes (at least 1) holds.
std::string why_not_dynamic_gather(const Graph& g, const Node& n,
                                   const std::vector<const SymShape*>& in, const SymShape& out) {
  if (in.size() < 2 || !in[0] || !in[1]) return "no input";
  if (in[0]->empty()) return "data is a scalar";
  const int64_t axis = op_axis(n, in[0]->size());
  if (std::string why = check_gather(*in[0], *in[1], axis, out); !why.empty()) return why;
  if ((*in[0])[axis].symbolic()) {
    const Tensor& known = g.values[n.inputs[1]].initializer;
    if (!known.defined()) return "gathers along a symbolic axis by computed indices";
    for (int64_t k : known.to_int64())
      if (k != 0 && k != -1) return "gathers along a symbolic axis at an index other than 0, -1";
  }
  return "";
}

}  // namespace

extern const Lowering kGatherLowering;
const Lowering kGatherLowering{.why_not = why_not_gather,
                               .why_not_dynamic = why_not_dynamic_gather,
                               .generate = generate_gather};

}  // namespace sgraph::ops
