// Gather's lowering: the element of `data` at the index loaded from `indices` (a negative one
// wraps). Constant indices are checked to be in range when the kernel is built. Otherwise `data`
// must be a constant (an embedding or lookup table) and the index is clamped into [0, dim): a
// kernel cannot throw, so where the reference kernel throws on an out-of-range index, the kernel
// returns the element at the clamped index.
#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

std::string why_not_gather(const Graph& g, const Node& n) {
  if (is_constant(g, n, 0) || is_constant(g, n, 1)) return "";
  return "neither its data nor its indices are constants";
}

llvm::Value* generate_gather(Emitter& e, const Node& n, const Index& idx) {
  const ValueId data = n.inputs[0], indices = n.inputs[1];
  const Shape& ds = e.shape(data);
  const Shape& is = e.shape(indices);
  const Shape& out = e.shape(n.outputs[0]);
  const int64_t rank = static_cast<int64_t>(ds.size());
  SG_CHECK(rank > 0) << node_str(n) << ": data is a scalar";
  const int64_t axis = op_axis(n, ds.size());
  Shape expect(ds.begin(), ds.begin() + axis);
  expect.insert(expect.end(), is.begin(), is.end());
  expect.insert(expect.end(), ds.begin() + axis + 1, ds.end());
  SG_CHECK(out == expect) << node_str(n) << ": output shape " << shape_str(out)
                          << " is not a gather of " << shape_str(ds) << " by " << shape_str(is);
  const int64_t dim = ds[axis];
  SG_CHECK(dim > 0) << node_str(n) << ": gathers from an empty axis";
  const Tensor& known = e.graph.values[indices].initializer;
  if (known.defined())
    for (int64_t k : known.to_int64())
      SG_CHECK(k >= -dim && k < dim) << node_str(n) << ": index " << k
                                     << " is out of range for axis " << axis << " of size " << dim;
  llvm::IRBuilderBase& b = e.b;
  const auto at = idx.begin() + axis;
  llvm::Value* k = b.CreateSExt(e.element(indices, Index(at, at + is.size())), b.getInt64Ty());
  k = b.CreateSelect(b.CreateICmpSLT(k, e.i64(0)), b.CreateAdd(k, e.i64(dim)), k);
  if (!known.defined()) k = clamp(e, k, 0, dim - 1);  // see the top of this file
  Index data_idx(idx.begin(), at);
  data_idx.push_back(k);
  data_idx.insert(data_idx.end(), at + is.size(), idx.end());
  return e.element(data, data_idx);
}

}  // namespace

extern const Lowering kGatherLowering;
const Lowering kGatherLowering{.why_not = why_not_gather, .generate = generate_gather};

}  // namespace sgraph::ops
