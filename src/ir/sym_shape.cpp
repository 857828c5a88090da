#include "ir/sym_shape.h"

#include <algorithm>

#include "sgraph/error.h"

namespace sgraph {

std::string sym_dim_str(const SymDim& d, const std::vector<Symbol>& symbols) {
  if (!d.symbolic()) return std::to_string(d.offset);
  const size_t k = static_cast<size_t>(d.sym);
  std::string s = k < symbols.size() ? symbols[k].name : "s" + std::to_string(k);
  if (d.scale != 1) s = std::to_string(d.scale) + "*" + s;
  if (d.offset > 0) s += "+" + std::to_string(d.offset);
  if (d.offset < 0) s += std::to_string(d.offset);
  if (d.div != 1) s = (d.offset != 0 ? "(" + s + ")" : s) + "/" + std::to_string(d.div);
  return s;
}

std::string sym_shape_str(const SymShape& s, const std::vector<Symbol>& symbols) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += sym_dim_str(s[i], symbols);
  }
  return out + "]";
}

bool is_static(const SymShape& s) {
  for (const SymDim& d : s)
    if (d.symbolic()) return false;
  return true;
}

Shape eval_shape(const SymShape& s, std::span<const int64_t> syms) {
  Shape out;
  out.reserve(s.size());
  for (const SymDim& d : s) {
    SG_ASSERT(static_cast<size_t>(d.sym + 1) <= syms.size())
        << "symbol " << d.sym << " evaluated with " << syms.size() << " symbols";
    out.push_back(d.value(syms));
  }
  return out;
}

bool bind_symbols(const SymShape& pattern, const Shape& actual, std::vector<int64_t>& syms,
                  std::vector<bool>& bound) {
  if (pattern.size() != actual.size()) return false;
  // Affine dims first (they bind), then divided ones (they only check, once bound).
  for (int divided = 0; divided < 2; ++divided)
    for (size_t i = 0; i < pattern.size(); ++i) {
      const SymDim& d = pattern[i];
      if (d.affine() == (divided == 1)) continue;
      if (!d.symbolic()) {
        if (actual[i] != d.offset) return false;
        continue;
      }
      const auto k = static_cast<size_t>(d.sym);
      if (k >= syms.size() || k >= bound.size() || d.scale <= 0 || d.div < 1) return false;
      if (!d.affine() && !bound[k]) continue;  // (checked by a later call)
      if (!bound[k]) {
        int64_t rest = 0;
        if (__builtin_sub_overflow(actual[i], d.offset, &rest) || rest % d.scale != 0 || rest < 0)
          return false;
        syms[k] = rest / d.scale;
        bound[k] = true;
      }
      int64_t v = 0;
      if (__builtin_mul_overflow(d.scale, syms[k], &v) || __builtin_add_overflow(v, d.offset, &v) ||
          (d.affine() ? v : SymDim::floor_div(v, d.div)) != actual[i])
        return false;
    }
  return true;
}

bool bind_all(std::span<const SymShape* const> patterns, std::span<const Shape* const> actual,
              std::vector<int64_t>& syms, std::vector<bool>& bound) {
  if (patterns.size() != actual.size()) return false;
  for (int pass = 0; pass < 2; ++pass)  // the second checks the divided dims skipped by the first
    for (size_t i = 0; i < patterns.size(); ++i)
      if (!bind_symbols(*patterns[i], *actual[i], syms, bound)) return false;
  return std::all_of(bound.begin(), bound.end(), [](bool b) { return b; });
}

}  // namespace sgraph
