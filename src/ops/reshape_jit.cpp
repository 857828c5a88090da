// The lowering of the view ops (Identity, Reshape, Flatten, Squeeze, Unsqueeze): an output element
// is the input's element at the same row-major offset, so a view costs no memory traffic. When
// the shapes differ only in size-1 dims the index maps dim by dim (affine loads).
//
// Otherwise the dims are matched in groups, from the innermost: a run of output dims and a run of
// input dims with the same product (constant factor and symbols alike), e.g. [seq, 4, 64] against
// [seq, 256]. Within a group the output index is linearised and split into the input's dims, so
// div/mod happen only inside groups (by constants where the group's dims are static) and a dim
// matched by itself maps directly: a transformer's heads split off [b, s, 192] as [b, s, 6, 32]
// read it at (b, s, h * 32 + d), affine, where splitting the whole offset took two divisions per
// element (by 192 and s * 192) and kept the copy nests of attention's operands scalar. Static dims
// that do not group ([6, 4] as [3, 8]) split the whole offset back into the input's index (or
// load in place from a region input); in a dynamic region they are one group when the two element
// counts are the same polynomial in the symbols.
#include <algorithm>
#include <map>
#include <tuple>

#include "ops/lowering.h"

namespace sgraph::ops {
namespace {

// A product of dims: a constant factor and the symbolic dims (a pure multiple scale * s counts as
// scale times s), kept sorted so that equal products compare equal.
struct Product {
  int64_t factor = 1;
  // Each symbolic dim as (symbol, scale, offset, div), the scale 1 when the offset is 0 and the
  // dim is not divided.
  std::vector<std::tuple<int32_t, int64_t, int64_t, int64_t>> atoms;
  bool overflow = false;

  void multiply(const SymDim& d) {
    const bool multiple = d.symbolic() && d.offset == 0 && d.affine();
    const int64_t f = !d.symbolic() ? d.offset : multiple ? d.scale : 1;
    if (__builtin_mul_overflow(factor, f, &factor)) overflow = true;
    if (d.symbolic()) {
      atoms.emplace_back(d.sym, multiple ? 1 : d.scale, d.offset, d.div);
      std::sort(atoms.begin(), atoms.end());
    }
  }
  bool operator==(const Product& o) const { return factor == o.factor && atoms == o.atoms; }
  bool divides(const Product& o) const {
    return factor != 0 && o.factor % factor == 0 &&
           std::includes(o.atoms.begin(), o.atoms.end(), atoms.begin(), atoms.end());
  }
};

struct Group {
  size_t out_begin, out_end, in_begin, in_end;  // dims [begin, end) of the output and the input
};

// The groups of `out` and `in` (see the file comment), nullopt when the dims do not group.
std::optional<std::vector<Group>> view_groups(const SymShape& out, const SymShape& in) {
  std::vector<Group> groups;
  size_t i = out.size(), j = in.size();
  for (;;) {
    while (i > 0 && out[i - 1].is_one()) --i;
    while (j > 0 && in[j - 1].is_one()) --j;
    if (i == 0 && j == 0) return groups;
    if (i == 0 || j == 0) return std::nullopt;
    Group g{0, i, 0, j};
    Product po, pi;
    po.multiply(out[--i]);
    pi.multiply(in[--j]);
    while (!(po == pi)) {
      if (po.overflow || pi.overflow) return std::nullopt;
      if (po.divides(pi) && i > 0)
        po.multiply(out[--i]);
      else if (pi.divides(po) && j > 0)
        pi.multiply(in[--j]);
      else
        return std::nullopt;
    }
    if (po.overflow || pi.overflow || po.factor == 0) return std::nullopt;  // (0: an empty dim)
    g.out_begin = i;
    g.in_begin = j;
    groups.push_back(g);
  }
}

// The element count of s as a polynomial in the symbols: monomial (its symbols, sorted, repeated
// by power) -> coefficient. nullopt on overflow.
using Polynomial = std::map<std::vector<int32_t>, int64_t>;
std::optional<Polynomial> count_polynomial(const SymShape& s) {
  Polynomial p = {{{}, 1}};
  for (const SymDim& d : s) {
    if (d.div != 1) return std::nullopt;  // (floor divisions: no polynomial)
    Polynomial q;
    for (const auto& [mono, c] : p) {
      int64_t t = 0;
      if (__builtin_mul_overflow(c, d.offset, &t) || __builtin_add_overflow(q[mono], t, &q[mono]))
        return std::nullopt;
      if (!d.symbolic()) continue;
      std::vector<int32_t> m = mono;
      m.insert(std::upper_bound(m.begin(), m.end(), d.sym), d.sym);
      if (__builtin_mul_overflow(c, d.scale, &t) || __builtin_add_overflow(q[m], t, &q[m]))
        return std::nullopt;
    }
    std::erase_if(q, [](const auto& kv) { return kv.second == 0; });
    p = std::move(q);
  }
  return p;
}

// The dims as groups (view_groups), or else one group of all of them when the element counts are
// equal for every value of the symbols (then the offset is split by run-time dims); nullopt when
// neither.
std::optional<std::vector<Group>> dynamic_groups(const SymShape& out, const SymShape& in) {
  if (std::optional<std::vector<Group>> g = view_groups(out, in)) return g;
  const std::optional<Polynomial> po = count_polynomial(out), pi = count_polynomial(in);
  if (!po || !pi || *po != *pi) return std::nullopt;
  return std::vector<Group>{{0, out.size(), 0, in.size()}};
}

// The input's index of output index idx, group by group: a dim matched by itself maps directly;
// within a larger group the output index is linearised and split into the input's dims (the split
// only where the group has several input dims: [b, s, 192] read as [b, s, 6, 32] is h * 32 + d).
Index grouped_index(Emitter& e, const std::vector<Group>& groups, const SymShape& out,
                    const SymShape& ins, const Index& idx) {
  llvm::IRBuilderBase& b = e.b;
  Index r(ins.size(), e.i64(0));
  for (const Group& g : groups) {
    if (g.out_end - g.out_begin == 1 && g.in_end - g.in_begin == 1) {
      r[g.in_begin] = idx[g.out_begin];
      continue;
    }
    const SymShape os(out.begin() + g.out_begin, out.begin() + g.out_end);
    const Index oi(idx.begin() + g.out_begin, idx.begin() + g.out_end);
    llvm::Value* off = e.offset_of(oi, os);
    for (size_t d = g.in_end; d-- > g.in_begin;) {
      if (ins[d].is_one()) continue;
      if (d == g.in_begin) {
        r[d] = off;
        break;
      }
      llvm::Value* size = e.dim(ins[d]);
      r[d] = b.CreateURem(off, size);
      off = b.CreateUDiv(off, size);
    }
  }
  return r;
}

llvm::Value* generate_static_view(Emitter& e, const Node& n, const Index& idx) {
  const ValueId in = n.inputs[0];
  const Shape& out = e.shape(n.outputs[0]);
  SG_CHECK(numel(e.shape(in)) == numel(out))
      << node_str(n) << ": input shape " << shape_str(e.shape(in)) << " and output shape "
      << shape_str(out) << " differ in size";
  if (std::optional<Index> same = unit_dims_map(e, idx, out, e.shape(in)))
    return e.element(in, *same);
  const SymShape os = to_sym(out), ins = to_sym(e.shape(in));
  if (const std::optional<std::vector<Group>> groups = view_groups(os, ins))
    return e.element(in, grouped_index(e, *groups, os, ins, idx));
  return e.element_at_offset(in, e.offset_of(idx, out));
}

llvm::Value* generate_view(Emitter& e, const Node& n, const Index& idx) {
  if (!e.dynamic()) return generate_static_view(e, n, idx);
  const ValueId in = n.inputs[0];
  const SymShape out = e.dims(n.outputs[0]), ins = e.dims(in);
  const std::optional<std::vector<Group>> groups = dynamic_groups(out, ins);
  SG_ASSERT(groups) << node_str(n) << ": dims that do not group in a dynamic region";
  return e.element(in, grouped_index(e, *groups, out, ins, idx));
}

// The output's dims must group with the input's. The shape (or axes) operand is a constant, or
// its elements are forms of the symbols (a region input the planner guards as such, or a value
// the region computes from its shapes), the planner having checked that the planned output is
// what Reshape makes of them (runtime/session.cpp); any other operand that decides a shape keeps
// the region interpreted.
std::string why_not_dynamic_view(const Graph&, const Node&, const std::vector<const SymShape*>& in,
                                 const SymShape& out) {
  if (in.empty() || !in[0]) return "no input";
  return dynamic_groups(out, *in[0]) ? "" : "its output's size is not its input's for every value";
}

}  // namespace

extern const Lowering kViewLowering;
const Lowering kViewLowering{.why_not_dynamic = why_not_dynamic_view, .generate = generate_view};

}  // namespace sgraph::ops
