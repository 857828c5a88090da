// Tile's lowering: each output index, modulo its input dim where the dim is repeated, is the
// input's index. The repeats must be constants (their values are the output's dims).
#include "ops/lowering.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

Ints tile_repeats(const Graph& g, const Node& n) { return constant_input(g, n, 1)->to_int64(); }

// "" when `out` is `in` tiled by `repeats` (a symbolic dim repeated: of the affine form).
std::string check_tile(const Ints& repeats, const SymShape& in, const SymShape& out) {
  if (repeats.size() != in.size() || in.size() != out.size()) return "repeats do not fit the shape";
  for (size_t d = 0; d < in.size(); ++d) {
    const std::optional<SymDim> want = in[d].times(repeats[d]);
    if (!want) return "a divided dim repeated";
    if (!(*want == out[d])) return "output shape is not the input's tiled";
  }
  return "";
}

std::string why_not_tile(const Graph& g, const Node& n) {
  return need_constant(g, n, 1, "repeats");
}

llvm::Value* generate_tile(Emitter& e, const Node& n, const Index& idx) {
  const SymShape out = e.dims(n.outputs[0]), in = e.dims(n.inputs[0]);
  const Ints repeats = tile_repeats(e.graph, n);
  const std::string why = check_tile(repeats, in, out);
  SG_CHECK(why.empty()) << node_str(n) << ": " << why;
  Index in_idx = idx;
  for (size_t d = 0; d < in.size(); ++d)
    if (repeats[d] > 1 && !in[d].is_one())
      in_idx[d] = in[d].symbolic() ? e.b.CreateURem(idx[d], e.dim(in[d]))
                                   : e.b.CreateURem(idx[d], e.i64(in[d].offset));
    else if (in[d].is_one())
      in_idx[d] = e.i64(0);
  return e.element(n.inputs[0], in_idx);
}

std::string why_not_dynamic_tile(const Graph& g, const Node& n,
                                 const std::vector<const SymShape*>& in, const SymShape& out) {
  if (in.empty() || !in[0]) return "no input";
  if (std::string why = why_not_tile(g, n); !why.empty()) return why;
  return check_tile(tile_repeats(g, n), *in[0], out);
}

}  // namespace

extern const Lowering kTileLowering;
const Lowering kTileLowering{
    .why_not = why_not_tile, .why_not_dynamic = why_not_dynamic_tile, .generate = generate_tile};

}  // namespace sgraph::ops
