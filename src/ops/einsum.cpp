// Einsum(inputs...) {equation}: the sum of products of the inputs' elements over the index labels
// the output does not keep, in Einstein notation ("ij,jk->ik" is MatMul).
//   - each input's term names its dims with letters (a-z, A-Z); a letter repeated in one term
//     takes that term's diagonal ("ii->i"), a letter shared by terms must have one size;
//   - "..." stands for the dims the letters leave unnamed; those broadcast across the inputs
//     (numpy rules), and an explicit output must place them with a "..." of its own;
//   - without "->" the output is the ellipsis dims, then the letters used exactly once, in
//     increasing (ASCII) order; with "->" it is what follows, and the letters left out are summed.
// The reference kernel walks the full index space of every label once.
#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "ops/int_math.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

constexpr int kEllipsis = -1;  // a term's "..." among its labels

// A term: its labels in dim order, kEllipsis at most once.
using Term = std::vector<int>;

struct Equation {
  std::vector<Term> inputs;
  Term output;
};

int label_of(char ch) {
  SG_CHECK((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))
      << "equation labels must be letters, got '" << ch << "'";
  return static_cast<unsigned char>(ch);
}

Term parse_term(std::string_view s) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      SG_CHECK(s.substr(i, 3) == "...") << "a '.' in the equation must be part of '...'";
      SG_CHECK(std::find(t.begin(), t.end(), kEllipsis) == t.end())
          << "a term has '...' more than once";
      t.push_back(kEllipsis);
      i += 2;
    } else {
      t.push_back(label_of(s[i]));
    }
  }
  return t;
}

Equation parse(const std::string& text, size_t num_inputs) {
  std::string eq;
  for (char ch : text)
    if (ch != ' ') eq += ch;
  Equation e;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    e.inputs.push_back(parse_term(std::string_view(lhs).substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  SG_CHECK(e.inputs.size() == num_inputs) << "equation '" << text << "' has " << e.inputs.size()
                                          << " input terms for " << num_inputs << " inputs";
  std::array<int, 256> uses{};
  bool ellipsis = false;
  for (const Term& t : e.inputs)
    for (int l : t) {
      if (l == kEllipsis)
        ellipsis = true;
      else
        ++uses[l];
    }
  if (arrow == std::string::npos) {
    if (ellipsis) e.output.push_back(kEllipsis);
    for (int l = 0; l < 256; ++l)
      if (uses[l] == 1) e.output.push_back(l);
    return e;
  }
  const std::string rhs = eq.substr(arrow + 2);
  SG_CHECK(rhs.find("->") == std::string::npos && rhs.find(',') == std::string::npos)
      << "equation '" << text << "' must have one output term";
  e.output = parse_term(rhs);
  std::array<bool, 256> seen{};
  for (int l : e.output) {
    if (l == kEllipsis) continue;
    SG_CHECK(uses[l] > 0) << "output label '" << char(l) << "' is not in any input term";
    SG_CHECK(!seen[l]) << "output label '" << char(l) << "' appears more than once";
    seen[l] = true;
  }
  return e;
}

// The equation bound to the inputs' shapes: one loop variable per label and per ellipsis dim.
struct Plan {
  Equation eq;
  Shape ellipsis;                   // the broadcast shape of the inputs' "..." dims
  std::array<int64_t, 256> size{};  // per letter; -1: unused
  Shape out_shape;
};

// The dims input k's "..." covers (its rank minus its letters), checked.
int64_t ellipsis_rank(const Term& t, int64_t rank, size_t k) {
  const int64_t letters =
      static_cast<int64_t>(t.size()) - (std::count(t.begin(), t.end(), kEllipsis) > 0 ? 1 : 0);
  const bool has = letters != static_cast<int64_t>(t.size());
  SG_CHECK(has ? rank >= letters : rank == letters)
      << "input " << k << " has rank " << rank << " but its term names " << letters << " dims"
      << (has ? " (plus '...')" : "");
  return rank - letters;
}

Plan plan_of(const Node& node, std::span<const Shape* const> shapes) {
  Plan p;
  p.eq = parse(node.attrs.get_string("equation"), shapes.size());
  p.size.fill(-1);
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Shape& s = *shapes[k];
    const Term& t = p.eq.inputs[k];
    const int64_t er = ellipsis_rank(t, static_cast<int64_t>(s.size()), k);
    size_t d = 0;
    for (int l : t) {
      if (l == kEllipsis) {
        p.ellipsis = broadcast_shapes(p.ellipsis, Shape(s.begin() + d, s.begin() + d + er));
        d += er;
        continue;
      }
      SG_CHECK(p.size[l] < 0 || p.size[l] == s[d])
          << "label '" << char(l) << "' has size " << p.size[l] << " and " << s[d] << " (input "
          << k << ", dim " << d << ")";
      p.size[l] = s[d++];
    }
  }
  for (int l : p.eq.output) {
    if (l == kEllipsis)
      p.out_shape.insert(p.out_shape.end(), p.ellipsis.begin(), p.ellipsis.end());
    else
      p.out_shape.push_back(p.size[l]);
  }
  SG_CHECK(p.ellipsis.empty() ||
           std::find(p.eq.output.begin(), p.eq.output.end(), kEllipsis) != p.eq.output.end())
      << "the inputs' '...' covers " << p.ellipsis.size()
      << " dims, but the output term has no '...' to place them";
  return p;
}

void types_einsum(TypeCtx& c) {
  SG_CHECK(!c.in.empty()) << "Einsum needs at least one input";
  c.expect_numeric(0);
  for (size_t k = 1; k < c.in.size(); ++k) c.expect_same(0, k);
  c.out[0] = c.in[0];
}

void shapes_einsum(ShapeCtx& c) {
  for (size_t k = 0; k < c.in.size(); ++k)
    SG_CHECK(c.has(k)) << "Einsum input " << k << " is absent";
  c.out[0] = plan_of(c.node, c.in).out_shape;
}

void run_einsum(KernelCtx& c) {
  std::vector<const Shape*> shapes;
  for (const Tensor& t : c.in) shapes.push_back(&t.shape());
  const Plan p = plan_of(c.node, shapes);
  // Loop variables: the ellipsis dims, then each letter used.
  const int64_t ne = static_cast<int64_t>(p.ellipsis.size());
  Shape sizes = p.ellipsis;
  std::array<int, 256> var{};
  for (int l = 0; l < 256; ++l)
    if (p.size[l] >= 0) {
      var[l] = static_cast<int>(sizes.size());
      sizes.push_back(p.size[l]);
    }
  const size_t nv = sizes.size(), ni = c.in.size();
  // Per operand (inputs, then the output), the stride each variable moves it by: repeated labels
  // add up (a diagonal), broadcast ellipsis dims and summed variables move it by 0.
  auto strides_for = [&](const Term& t, const Shape& s, bool is_out) {
    std::vector<int64_t> st(nv, 0);
    const Shape rm = strides_of(s);
    const int64_t er = is_out ? ne : ellipsis_rank(t, static_cast<int64_t>(s.size()), 0);
    size_t d = 0;
    auto ellipsis_dims = [&] {
      for (int64_t j = 0; j < er; ++j, ++d)
        if (s[d] != 1 || is_out) st[ne - er + j] += rm[d];
    };
    for (int l : t) {
      if (l == kEllipsis)
        ellipsis_dims();
      else
        st[var[l]] += rm[d++];
    }
    return st;
  };
  std::vector<std::vector<int64_t>> st;
  for (size_t k = 0; k < ni; ++k) st.push_back(strides_for(p.eq.inputs[k], c.in[k].shape(), false));
  st.push_back(strides_for(p.eq.output, c.out[0].shape(), true));
  int64_t total = 1;
  for (int64_t n : sizes) total = checked_mul(total, n, "Einsum's index space");
  visit_dtype(c.out[0].dtype(), [&]<class T>() {
    T* y = c.out[0].data<T>();
    std::fill_n(y, c.out[0].numel(), T(0));
    if (total == 0) return;
    std::vector<const T*> x(ni);
    for (size_t k = 0; k < ni; ++k) x[k] = c.in[k].data<T>();
    std::vector<int64_t> idx(nv, 0), off(ni + 1, 0);
    for (int64_t it = 0; it < total; ++it) {
      T prod = x[0][off[0]];
      for (size_t k = 1; k < ni; ++k) prod = wrap_mul(prod, x[k][off[k]]);
      y[off[ni]] = wrap_add(y[off[ni]], prod);
      // advance the odometer, last variable fastest
      for (size_t v = nv; v-- > 0;) {
        for (size_t k = 0; k <= ni; ++k) off[k] += st[k][v];
        if (++idx[v] < sizes[v]) break;
        for (size_t k = 0; k <= ni; ++k) off[k] -= st[k][v] * sizes[v];
        idx[v] = 0;
      }
    }
  });
}

}  // namespace

extern const OpDef kEinsum;
const OpDef kEinsum{"Einsum", 1, 1 << 16, 1, 1, types_einsum, shapes_einsum, run_einsum};

}  // namespace sgraph::ops
