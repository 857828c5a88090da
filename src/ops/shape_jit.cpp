// Shape's and Size's lowerings: their elements are dims of their input, never its elements, so
// the input's producers are not asked for anything. A static region's dims are constants; a
// dynamic region's are computed from its symbols where the element is made (so a shape vector
// an exporter builds from Shape(x) costs a few integer ops, and never leaves the kernel).
#include "ops/lowering.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

// The input's dims as planned (a static region may merge a nest's dims; its planned shape is the
// value's own).
SymShape input_dims(Emitter& e, const Node& n) {
  return e.dynamic() ? e.dims(n.inputs[0]) : to_sym(e.planned_shape(n.inputs[0]));
}

llvm::Value* generate_shape(Emitter& e, const Node& n, const Index& idx) {
  const SymShape dims = input_dims(e, n);
  const auto rank = static_cast<int64_t>(dims.size());
  const auto clamp_dim = [rank](int64_t v) {
    return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank);
  };
  const int64_t start = clamp_dim(n.attrs.get_int("start", 0));
  const int64_t end = std::max(start, clamp_dim(n.attrs.get_int("end", rank)));
  SG_ASSERT(end > start && idx.size() == 1) << node_str(n) << ": an element of an empty output";
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

// Any symbolic dims: the elements are made from them.
std::string any_dims(const Graph&, const Node&, const std::vector<const SymShape*>&,
                     const SymShape&) {
  return "";
}

}  // namespace

extern const Lowering kShapeLowering, kSizeLowering;
const Lowering kShapeLowering{.why_not_dynamic = any_dims, .generate = generate_shape};
const Lowering kSizeLowering{.why_not_dynamic = any_dims, .generate = generate_size};

}  // namespace sgraph::ops
