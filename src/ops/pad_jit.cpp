// Pad's lowering (pads and axes constant; negative pads crop): edge clamps the index, reflect
// mirrors it, constant selects the pad value outside the input (the input's index clamped, so the
// load stays in bounds). Along a symbolic dim, pads or crops, not both (reflect: pads, the guard
// taking sizes that reach both pads).
#include <algorithm>

#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

std::string why_not_pad(const Graph& g, const Node& n) {
  if (std::string s = need_constant(g, n, 1, "pads"); !s.empty()) return s;
  if (std::string s = need_constant(g, n, 3, "axes"); !s.empty()) return s;
  if (!has_input(n, 1) && !n.attrs.has("pads")) return "no pads";
  if (!pad_mode(n)) return "mode '" + n.attrs.get_string("mode", "") + "'";
  return "";
}

// Along a symbolic dim: pads or crops on both sides alike (never one of each: a guarded output
// size would not bound the kept range), edge or constant mode. "" when the shapes are such.
std::string check_dynamic_pad(const PadParams& p, const SymShape& in, const SymShape& out) {
  if (in.size() != out.size()) return "its output's rank is not its input's";
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t before = p.begin[d], after = p.end[d];
    if (!in[d].symbolic()) continue;
    if (!(out[d] == in[d].plus(before + after)))
      return "output dim " + std::to_string(d) + " is not the padding's";
    if ((before < 0 && after > 0) || (before > 0 && after < 0))
      return "pads one side and crops the other of a symbolic dim";
    if (p.mode == PadMode::reflect && (before < 0 || after < 0))
      return "reflect padding that crops a symbolic dim";
  }
  return "";
}

llvm::Value* generate_pad(Emitter& e, const Node& n, const Index& idx) {
  llvm::IRBuilderBase& b = e.b;
  const ValueId x = n.inputs[0];
  const SymShape sin = e.dims(x), sout = e.dims(n.outputs[0]);
  const PadParams p =
      pad_params(n, sin.size(), constant_input(e.graph, n, 1), constant_input(e.graph, n, 3));
  if (e.dynamic()) {
    const std::string why = check_dynamic_pad(p, sin, sout);
    SG_CHECK(why.empty()) << node_str(n) << ": " << why;
  }
  // Static dims' sizes (a symbolic dim's entry is unused).
  Shape in, out;
  for (size_t d = 0; d < sin.size(); ++d) {
    in.push_back(sin[d].symbolic() ? 0 : sin[d].offset);
    out.push_back(d < sout.size() && !sout[d].symbolic() ? sout[d].offset : 0);
  }
  SG_CHECK(in.size() == out.size()) << node_str(n) << ": output shape " << shape_str(out)
                                    << " is not a padding of " << shape_str(in);
  const auto pad_value = [&]() -> llvm::Value* {
    if (has_input(n, 2)) return scalar_element(e, n.inputs[2]);
    // else 0, or the opset-2 `value` attribute that goes with the `pads` attribute
    return constant_of(e.context(), e.dtype(x), p.value);
  };
  llvm::Value* inside = nullptr;  // constant mode: whether idx lies in the (cropped) input
  Index in_idx(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t before = p.begin[d], after = p.end[d];
    if (sin[d].symbolic()) {  // cropped only (always inside), or padded: kept [0, D - 1]
      llvm::Value* j = before == 0 ? idx[d] : b.CreateSub(idx[d], e.i64(before), "", false, true);
      if (before <= 0 && after <= 0) {
        in_idx[d] = j;
        continue;
      }
      llvm::Value* size = e.dim(sin[d]);  // >= 1 (the guard): the range is not empty
      if (p.mode == PadMode::reflect) {   // m - |m - |j||, m = D - 1 >= both pads (the guard)
        const auto abs = [&](llvm::Value* v) {
          return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, v, b.getFalse());
        };
        llvm::Value* m = b.CreateSub(size, e.i64(1));
        in_idx[d] = b.CreateSub(m, abs(b.CreateSub(m, abs(j), "", false, true)), "", false, true);
        continue;
      }
      in_idx[d] = clamp(e, j, 0, b.CreateSub(size, e.i64(1)));
      if (p.mode == PadMode::constant) {
        llvm::Value* in_range = b.CreateICmpULT(j, size);
        inside = inside ? b.CreateAnd(inside, in_range) : in_range;
      }
      continue;
    }
    // The input's kept range is [first, last]; output index o reads input index o - before.
    const int64_t first = std::max<int64_t>(-before, 0),
                  last = in[d] - 1 - std::max<int64_t>(-after, 0);
    SG_CHECK(out[d] == in[d] + before + after && first <= last + 1)
        << node_str(n) << ": output shape " << shape_str(out) << " is not a padding of "
        << shape_str(in) << " on axis " << d;
    llvm::Value* j = before == 0 ? idx[d] : b.CreateSub(idx[d], e.i64(before), "", false, true);
    if (before <= 0 && after <= 0) {  // only cropped: always inside
      in_idx[d] = j;
      continue;
    }
    if (first > last) {  // nothing kept: every element is padding
      SG_CHECK(p.mode == PadMode::constant)
          << node_str(n) << ": edge or reflect padding of an empty axis " << d;
      return pad_value();
    }
    if (p.mode == PadMode::reflect) {
      // Mirrored at both ends of the kept range: r = |j - first|, then m - |m - r|, m = last -
      // first.
      const int64_t m = last - first;
      SG_CHECK(std::max(before, after) <= m)
          << node_str(n) << ": reflect pads " << before << ", " << after << " on axis " << d
          << " reach past the mirrored range";
      const auto abs = [&](llvm::Value* v) {
        return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, v, b.getFalse());
      };
      llvm::Value* r = abs(first == 0 ? j : b.CreateSub(j, e.i64(first), "", false, true));
      r = b.CreateSub(e.i64(m), abs(b.CreateSub(e.i64(m), r, "", false, true)), "", false, true);
      in_idx[d] = first == 0 ? r : b.CreateAdd(r, e.i64(first), "", false, true);
      continue;
    }
    in_idx[d] = clamp(e, j, first, last);
    if (p.mode == PadMode::constant) {
      llvm::Value* in_range =
          b.CreateICmpULT(b.CreateSub(j, e.i64(first)), e.i64(last - first + 1));
      inside = inside ? b.CreateAnd(inside, in_range) : in_range;
    }
  }
  llvm::Value* v = e.element(x, in_idx);
  return inside ? b.CreateSelect(inside, v, pad_value()) : v;
}

std::string why_not_dynamic_pad(const Graph& g, const Node& n,
                                const std::vector<const SymShape*>& in, const SymShape& out) {
  if (in.empty() || !in[0]) return "no input";
  if (has_input(n, 2) && (in.size() < 3 || !in[2] || !is_static(*in[2])))
    return "a pad value of symbolic shape";
  try {
    return check_dynamic_pad(
        pad_params(n, in[0]->size(), constant_input(g, n, 1), constant_input(g, n, 3)), *in[0],
        out);
  } catch (const Error& e) {
    return e.what();
  }
}

// Reflect padding of a symbolic dim D mirrors within it: D - 1 must reach both pads.
void dynamic_needs_pad(const Graph& g, const Node& n, const std::vector<const SymShape*>& in,
                       const SymShape&, std::vector<std::pair<SymDim, int64_t>>& least) {
  if (in.empty() || !in[0]) return;
  try {
    const PadParams p =
        pad_params(n, in[0]->size(), constant_input(g, n, 1), constant_input(g, n, 3));
    if (p.mode != PadMode::reflect) return;
    for (size_t d = 0; d < in[0]->size(); ++d)
      if (in[0]->at(d).symbolic() && std::max(p.begin[d], p.end[d]) > 0)
        least.emplace_back(in[0]->at(d), std::max(p.begin[d], p.end[d]) + 1);
  } catch (const Error&) {
  }
}

}  // namespace

extern const Lowering kPadLowering;
const Lowering kPadLowering{.why_not = why_not_pad,
                            .why_not_dynamic = why_not_dynamic_pad,
                            .dynamic_needs = dynamic_needs_pad,
                            .generate = generate_pad};

}  // namespace sgraph::ops
