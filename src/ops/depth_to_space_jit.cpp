// DepthToSpace's and SpaceToDepth's lowerings: each output element names its input element, as the
// reference's gather does (a division and a remainder by the block size per spatial index). In a
// dynamic region the channels are static and the spatial dims scale with the block size: a
// SpaceToDepth only where its input's spatial dims are multiples of it for every value of the
// symbols (elsewhere the reference raises an error, which the kernel could not).
#include <optional>

#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

// The attributes block_size and crd_mode would throw on, as reasons (and a block size whose
// index arithmetic could overflow).
std::string why_not_blocks(const Graph&, const Node& n) {
  const int64_t k = n.attrs.get_int("blocksize", 0);
  if (k < 1 || k > (int64_t{1} << 15)) return "its blocksize";
  const std::string mode = n.attrs.get_string("mode", "DCR");
  return mode == "DCR" || mode == "CRD" ? "" : "its mode";
}

llvm::Value* generate_depth_to_space(Emitter& e, const Node& n, const Index& idx) {
  llvm::IRBuilderBase& b = e.b;
  const int64_t k = block_size(n);
  const SymShape out = e.dims(n.outputs[0]);
  SG_CHECK(!out[1].symbolic()) << node_str(n) << ": symbolic channels";
  llvm::Value *i = b.CreateURem(idx[2], e.i64(k)), *j = b.CreateURem(idx[3], e.i64(k));
  llvm::Value* c =
      crd_mode(n)
          ? b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(idx[1], e.i64(k)), i), e.i64(k)), j)
          : b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(i, e.i64(k)), j), e.i64(out[1].offset)),
                        idx[1]);
  return e.element(n.inputs[0],
                   {idx[0], c, b.CreateUDiv(idx[2], e.i64(k)), b.CreateUDiv(idx[3], e.i64(k))});
}

llvm::Value* generate_space_to_depth(Emitter& e, const Node& n, const Index& idx) {
  llvm::IRBuilderBase& b = e.b;
  const int64_t k = block_size(n);
  const SymShape in = e.dims(n.inputs[0]);
  SG_CHECK(!in[1].symbolic()) << node_str(n) << ": symbolic channels";
  llvm::Value* blk = b.CreateUDiv(idx[1], e.i64(in[1].offset));
  llvm::Value* h = b.CreateAdd(b.CreateMul(idx[2], e.i64(k)), b.CreateUDiv(blk, e.i64(k)));
  llvm::Value* w = b.CreateAdd(b.CreateMul(idx[3], e.i64(k)), b.CreateURem(blk, e.i64(k)));
  return e.element(n.inputs[0], {idx[0], b.CreateURem(idx[1], e.i64(in[1].offset)), h, w});
}

// "" when the deeper of the input and the output ([N, C * k * k, H, W]) and the wider ([N, C,
// H * k, W * k]) are one tensor's k x k blocks moved, the channels static: the wider one's spatial
// dims are then multiples of k for every value of the symbols.
std::string check_blocks(const Graph& g, const Node& n, const std::vector<const SymShape*>& in,
                         const SymShape& out, bool to_space) {
  if (std::string why = why_not_blocks(g, n); !why.empty()) return why;
  if (in.empty() || !in[0] || in[0]->size() != 4 || out.size() != 4) return "not [N, C, H, W]";
  const SymShape &deep = to_space ? *in[0] : out, &wide = to_space ? out : *in[0];
  const int64_t k = block_size(n);
  if (deep[1].symbolic() || wide[1].symbolic()) return "symbolic channels";
  const std::optional<SymDim> h = deep[2].times(k), w = deep[3].times(k);
  if (!((*in[0])[0] == out[0]) || wide[1].offset * k * k != deep[1].offset || !h || !w ||
      !(*h == wide[2]) || !(*w == wide[3]))
    return "not the same blocks at every value of the symbols";
  return "";
}

std::string why_not_dynamic_depth_to_space(const Graph& g, const Node& n,
                                           const std::vector<const SymShape*>& in,
                                           const SymShape& out) {
  return check_blocks(g, n, in, out, true);
}

std::string why_not_dynamic_space_to_depth(const Graph& g, const Node& n,
                                           const std::vector<const SymShape*>& in,
                                           const SymShape& out) {
  return check_blocks(g, n, in, out, false);
}

}  // namespace

extern const Lowering kDepthToSpaceLowering, kSpaceToDepthLowering;
const Lowering kDepthToSpaceLowering{.why_not = why_not_blocks,
                                     .why_not_dynamic = why_not_dynamic_depth_to_space,
                                     .generate = generate_depth_to_space};
const Lowering kSpaceToDepthLowering{.why_not = why_not_blocks,
                                     .why_not_dynamic = why_not_dynamic_space_to_depth,
                                     .generate = generate_space_to_depth};

}  // namespace sgraph::ops
