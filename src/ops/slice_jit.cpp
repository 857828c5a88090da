// Slice's lowering: output index i on each axis reads input index start + i * step (starts,
// ends, axes and steps must be constants; the start clamped as the reference kernel clamps it).
// Along a symbolic dim only ranges that hold for every size the guard takes (see SymSliceAxis).
//
// Computed ends (x[:, :n] with n from Shape(y), as exporters write a position table's or a mask's
// slice): with constant starts >= 0, axes and steps of 1, the elements read are start + i on each
// sliced axis whatever the ends, and the output's dims come from the plan. The planner vouches for
// them: a static region's guard checks the ends' values, a dynamic region's their forms in the
// symbols, with the planned output checked against them (runtime/session.cpp).
#include <optional>

#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

// The first element read on each axis of a Slice with computed ends, and which axes it slices.
struct ComputedEnds {
  Ints start;
  std::vector<bool> sliced;
};

// nullopt with `why` empty: the ends are constants (or absent); with `why`: not such a Slice.
std::optional<ComputedEnds> computed_ends(const Graph& g, const Node& n, size_t rank,
                                          std::string& why) {
  if (!has_input(n, 1) || !has_input(n, 2) || is_constant(g, n, 2)) return std::nullopt;
  const char* names[] = {"starts", "ends", "axes", "steps"};
  for (size_t i : {1, 3, 4})
    if (std::string s = need_constant(g, n, i, names[i - 1]); !s.empty()) {
      why = s;
      return std::nullopt;
    }
  const std::optional<SliceFromStarts> f = slice_from_starts(
      rank, *constant_input(g, n, 1), constant_input(g, n, 3), constant_input(g, n, 4), why);
  if (!f) return std::nullopt;
  ComputedEnds c{Ints(rank, 0), std::vector<bool>(rank, false)};
  for (size_t i = 0; i < f->axis.size(); ++i) {
    c.start[f->axis[i]] = f->start[i];
    c.sliced[f->axis[i]] = true;
  }
  return c;
}

std::string why_not_slice(const Graph& g, const Node& n) {
  if (!has_input(n, 1) && !n.attrs.has("starts")) return "no starts";
  std::string why;
  // (An input of undeclared rank: any axis up to 64 here; the lowering checks the planned rank.)
  const auto& declared = g.values[n.inputs[0]].shape;
  if (computed_ends(g, n, declared ? declared->size() : 64, why)) return "";
  if (!why.empty()) return why;
  const char* names[] = {"starts", "ends", "axes", "steps"};
  for (size_t i = 1; i <= 4; ++i)
    if (std::string s = need_constant(g, n, i, names[i - 1]); !s.empty()) return s;
  return "";
}

// Along a symbolic dim D, a slice of step 1 whose range is a fixed form of D: from a constant
// start s >= 0 to the end or to D - k (output D - j, j >= s: a guarded output of at least 1 puts
// both ends inside), or a static length c from a constant start (needs D >= s + c) or from D - k
// (needs D >= k). Found from the parameters at two stand-in sizes: a start or count that does not
// move is a constant, one that moves with the size is D - k. The needs go to the guard
// (Lowering::dynamic_needs).
struct SymSliceAxis {
  int64_t start = 0, step = 1;  // the first element read (static dims and constant starts)
  int64_t from_end = 0;         // > 0: the first element read is D - from_end
  SymDim count;
  int64_t least = 1;  // the least D this range holds for
};

std::optional<std::vector<SymSliceAxis>> sym_slice(const Node& n, const Graph& g,
                                                   const SymShape& in, std::string& why) {
  constexpr int64_t kH1 = int64_t{1} << 40, kH2 = int64_t{1} << 41;
  Shape s1, s2;
  for (const SymDim& d : in) {
    s1.push_back(d.symbolic() ? kH1 : d.offset);
    s2.push_back(d.symbolic() ? kH2 : d.offset);
  }
  std::vector<SliceAxis> a1, a2;
  try {
    a1 = slice_params(n, s1, constant_input(g, n, 1), constant_input(g, n, 2),
                      constant_input(g, n, 3), constant_input(g, n, 4));
    a2 = slice_params(n, s2, constant_input(g, n, 1), constant_input(g, n, 2),
                      constant_input(g, n, 3), constant_input(g, n, 4));
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
  std::vector<SymSliceAxis> axes(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    SymSliceAxis& x = axes[d];
    if (!in[d].symbolic()) {
      x.start = a1[d].start;
      x.step = a1[d].step;
      x.count = SymDim::constant(a1[d].count);
      continue;
    }
    if (a1[d].step != 1 || a2[d].step != 1) {
      why = "a step other than 1 along a symbolic dim";
      return std::nullopt;
    }
    const bool start_fixed = a1[d].start == a2[d].start,
               start_moves = a2[d].start - a1[d].start == kH2 - kH1,
               count_fixed = a1[d].count == a2[d].count,
               count_moves = a2[d].count - a1[d].count == kH2 - kH1;
    if (start_fixed && count_moves) {
      x.start = a1[d].start;
      x.count = in[d].plus(a1[d].count - kH1);  // D - j
    } else if (start_fixed && count_fixed && a1[d].count > 0) {
      x.start = a1[d].start;
      x.count = SymDim::constant(a1[d].count);
      x.least = x.start + a1[d].count;
    } else if (start_moves && count_fixed && a1[d].count > 0 && kH1 - a1[d].start >= 1) {
      x.from_end = kH1 - a1[d].start;
      x.count = SymDim::constant(a1[d].count);
      x.least = x.from_end;
    } else {
      why = "its range along a symbolic dim depends on the dim beyond D - k";
      return std::nullopt;
    }
  }
  return axes;
}

llvm::Value* generate_slice(Emitter& e, const Node& n, const Index& idx) {
  const ValueId x = n.inputs[0];
  {
    const SymShape in = e.dims(x), out = e.dims(n.outputs[0]);
    std::string why;
    if (const std::optional<ComputedEnds> c = computed_ends(e.graph, n, in.size(), why)) {
      SG_CHECK(in.size() == out.size()) << node_str(n) << ": output rank is not its input's";
      Index in_idx(in.size());
      for (size_t d = 0; d < in.size(); ++d) {
        SG_CHECK(c->sliced[d] || out[d] == in[d])
            << node_str(n) << ": output dim " << d << " is not its input's";
        const int64_t st = c->start[d];
        SG_CHECK(in[d].symbolic() || out[d].symbolic() || out[d].offset == 0 ||
                 st + out[d].offset <= in[d].offset)
            << node_str(n) << ": output dim " << d << " does not fit its input from " << st;
        in_idx[d] = st == 0 ? idx[d] : e.b.CreateAdd(idx[d], e.i64(st), "", true, true);
      }
      return e.element(x, in_idx);
    }
    SG_CHECK(why.empty()) << node_str(n) << ": " << why;
  }
  if (e.dynamic()) {
    const SymShape in = e.dims(x), out = e.dims(n.outputs[0]);
    std::string why;
    const std::optional<std::vector<SymSliceAxis>> axes = sym_slice(n, e.graph, in, why);
    SG_CHECK(axes && in.size() == out.size()) << node_str(n) << ": " << why;
    Index in_idx(in.size());
    for (size_t d = 0; d < in.size(); ++d) {
      const SymSliceAxis& a = (*axes)[d];
      SG_CHECK(a.count == out[d]) << node_str(n) << ": output dim " << d << " is not the slice's";
      if (a.from_end > 0)
        in_idx[d] = e.b.CreateAdd(e.dim(in[d].plus(-a.from_end)), idx[d], "", true, true);
      else if (!out[d].symbolic() && out[d].offset <= 1)
        in_idx[d] = e.i64(a.start);
      else if (a.step == 1)
        in_idx[d] = a.start == 0 ? idx[d] : e.b.CreateAdd(idx[d], e.i64(a.start), "", true, true);
      else
        in_idx[d] = e.b.CreateAdd(e.b.CreateMul(idx[d], e.i64(a.step), "", false, true),
                                  e.i64(a.start), "", false, true);
    }
    return e.element(x, in_idx);
  }
  const Shape& in = e.shape(x);
  const Shape& out = e.shape(n.outputs[0]);
  SG_CHECK(in.size() == out.size()) << node_str(n) << ": output shape " << shape_str(out)
                                    << " is not a slice of " << shape_str(in);
  const Graph& g = e.graph;
  const std::vector<SliceAxis> axes =
      slice_params(n, in, constant_input(g, n, 1), constant_input(g, n, 2), constant_input(g, n, 3),
                   constant_input(g, n, 4));
  llvm::IRBuilderBase& b = e.b;
  Index in_idx(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const auto [start, step, count] = axes[d];
    SG_CHECK(count == out[d]) << node_str(n) << ": output shape " << shape_str(out)
                              << " is not the slice's (" << count << " on axis " << d << ")";
    // The first and the last element read lie in the input.
    int64_t last = 0;
    const bool fits =
        out[d] == 0 || (out[d] <= in[d] && start >= 0 && start < in[d] &&
                        !__builtin_mul_overflow(out[d] - 1, step, &last) &&
                        !__builtin_add_overflow(last, start, &last) && last >= 0 && last < in[d]);
    SG_CHECK(fits) << node_str(n) << ": output shape " << shape_str(out)
                   << " does not fit a slice of " << shape_str(in) << " on axis " << d;
    if (out[d] <= 1)
      in_idx[d] = e.i64(start);
    else if (step == 1)
      in_idx[d] = start == 0 ? idx[d] : b.CreateAdd(idx[d], e.i64(start), "", true, true);
    else
      in_idx[d] = b.CreateAdd(b.CreateMul(idx[d], e.i64(step), "", false, true), e.i64(start), "",
                              false, true);
  }
  return e.element(x, in_idx);
}

std::string why_not_dynamic_slice(const Graph& g, const Node& n,
                                  const std::vector<const SymShape*>& in, const SymShape& out) {
  if (in.empty() || !in[0]) return "no input";
  if (!why_not_slice(g, n).empty()) return why_not_slice(g, n);
  std::string why;
  if (const std::optional<ComputedEnds> c = computed_ends(g, n, in[0]->size(), why)) {
    if (out.size() != in[0]->size()) return "its output's rank is not its input's";
    for (size_t d = 0; d < out.size(); ++d)
      if (!c->sliced[d] && !(out[d] == in[0]->at(d)))
        return "output dim " + std::to_string(d) + " is not its input's";
    return "";  // (the sliced dims: the planner checks them against the ends' guarded forms)
  }
  if (!why.empty()) return why;
  const std::optional<std::vector<SymSliceAxis>> axes = sym_slice(n, g, *in[0], why);
  if (!axes) return why;
  if (out.size() != axes->size()) return "its output's rank is not its input's";
  for (size_t d = 0; d < out.size(); ++d) {
    const SymSliceAxis& a = (*axes)[d];
    if (!(a.count == out[d])) return "output dim " + std::to_string(d) + " is not the slice's";
    if (!in[0]->at(d).symbolic()) {  // a static dim: the static checks hold
      const int64_t size = in[0]->at(d).offset, last = a.start + (a.count.offset - 1) * a.step;
      if (a.count.offset > 0 && (a.start < 0 || a.start >= size || last < 0 || last >= size))
        return "its range does not fit its input on axis " + std::to_string(d);
    }
  }
  return "";
}

void dynamic_needs_slice(const Graph& g, const Node& n, const std::vector<const SymShape*>& in,
                         const SymShape&, std::vector<std::pair<SymDim, int64_t>>& least) {
  std::string why;
  if (in.empty() || !in[0]) return;
  if (computed_ends(g, n, in[0]->size(), why) || !why.empty()) return;  // (the planner's)
  const std::optional<std::vector<SymSliceAxis>> axes = sym_slice(n, g, *in[0], why);
  if (!axes) return;
  for (size_t d = 0; d < axes->size(); ++d)
    if (in[0]->at(d).symbolic() && (*axes)[d].least > 1)
      least.emplace_back(in[0]->at(d), (*axes)[d].least);
}

}  // namespace

extern const Lowering kSliceLowering;
const Lowering kSliceLowering{.why_not = why_not_slice,
                              .why_not_dynamic = why_not_dynamic_slice,
                              .dynamic_needs = dynamic_needs_slice,
                              .generate = generate_slice};

}  // namespace sgraph::ops
