// Shape's and Size's lowerings: their elements are dims of their input, never its elements, so
// the input's producers are not asked for anything. A static region's dims are constants; a
// dynamic region's are computed from its symbols where the element is made (so a shape vector
// an exporter builds from Shape(x) costs a few integer ops, and never leaves the kernel).
// Range's (integers): element i is start + i * delta, whatever the limit; the output's size is
// the plan's (a dynamic region's planner checks it against the limit's form). ConstantOfShape's:
// its fill, the dims the plan's (checked likewise against its operand's forms).
#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

// The input's dims as planned (a static region may merge a nest's dims; its planned shape is the
// value's own).
SymShape input_dims(Emitter& e, const Node& n) {
  return e.dynamic() ? e.dims(n.inputs[0]) : to_sym(e.planned_shape(n.inputs[0]));
}

llvm::Value* generate_shape(Emitter& e, const Node& n, const Index& idx) {
  const SymShape dims = input_dims(e, n);
  const auto [start, end] = shape_range(n.attrs, static_cast<int64_t>(dims.size()));
  if (end <= start) return e.i64(0);  // (an empty output: no element is made)
  llvm::IRBuilderBase& b = e.b;
  llvm::Value* r = e.dim(dims[static_cast<size_t>(start)]);
  for (int64_t k = start + 1; k < end; ++k)
    r = b.CreateSelect(b.CreateICmpEQ(idx[0], e.i64(k - start)),
                       e.dim(dims[static_cast<size_t>(k)]), r);
  return r;
}

llvm::Value* generate_size(Emitter& e, const Node& n, const Index&) {
  return e.count(input_dims(e, n));
}

// An integer Range's element i: start + i * delta, wrapping as the interpreter's does.
llvm::Value* generate_range(Emitter& e, const Node& n, const Index& idx) {
  llvm::IRBuilderBase& b = e.b;
  const auto scalar = [&](size_t i) {
    return b.CreateSExtOrTrunc(scalar_element(e, n.inputs[i]), b.getInt64Ty());
  };
  llvm::Value* v = b.CreateAdd(scalar(0), b.CreateMul(idx[0], scalar(2)));
  return b.CreateTrunc(v, element_type(e.context(), e.dtype(n.outputs[0])));
}

std::string why_not_range(const Graph& g, const Node& n) {
  const DType t = g.values[n.outputs[0]].dtype;
  return t == DType::i64 || t == DType::i32 ? "" : "a float Range";
}

// Its start and delta constants: the planner knows the count's form from the limit's.
std::string why_not_dynamic_range(const Graph& g, const Node& n,
                                  const std::vector<const SymShape*>&, const SymShape&) {
  if (!is_constant(g, n, 0) || !is_constant(g, n, 2)) return "its start or delta is not a constant";
  return "";
}

// ConstantOfShape's element: its fill, whatever the index (its dims are the plan's; a dynamic
// region's planner checks them against its operand's forms).
llvm::Value* generate_constant_of_shape(Emitter& e, const Node& n, const Index&) {
  const Tensor v = constant_of_shape_fill(n.attrs);
  llvm::Type* t = element_type(e.context(), v.dtype());
  if (is_float(v.dtype())) return llvm::ConstantFP::get(t, v.at_double(0));
  return llvm::ConstantInt::get(t, static_cast<uint64_t>(v.to_int64()[0]), true);
}

std::string why_not_constant_of_shape(const Graph&, const Node& n) {
  try {
    const Tensor v = constant_of_shape_fill(n.attrs);
    if (v.dtype() == DType::boolean) return "a bool fill";
  } catch (const Error& err) {
    return err.what();
  }
  return "";
}

// Any symbolic dims: the elements are made from them.
std::string any_dims(const Graph&, const Node&, const std::vector<const SymShape*>&,
                     const SymShape&) {
  return "";
}

}  // namespace

extern const Lowering kShapeLowering, kSizeLowering, kRangeLowering, kConstantOfShapeLowering;
const Lowering kShapeLowering{.why_not_dynamic = any_dims, .generate = generate_shape};
const Lowering kSizeLowering{.why_not_dynamic = any_dims, .generate = generate_size};
const Lowering kConstantOfShapeLowering{.why_not = why_not_constant_of_shape,
                                        .why_not_dynamic = any_dims,
                                        .generate = generate_constant_of_shape};
const Lowering kRangeLowering{
    .why_not = why_not_range, .why_not_dynamic = why_not_dynamic_range, .generate = generate_range};

}  // namespace sgraph::ops
