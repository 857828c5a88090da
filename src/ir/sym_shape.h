// Symbolic shapes, for the dynamic tier: a dim that changed during warm-up is an affine function of
// one symbol, scale * s + offset (the symbol itself, "seq + 1", "2 * h"), or such a function
// divided by a constant, rounded down ("(w + 1) / 2": a strided Conv's output width); a dim that
// never changed is a constant. The ShapeTracker finds the symbols and relations (shape_tracker.h);
// a dynamic region's guard binds its symbols from the actual shapes (bind_symbols) and its kernel
// takes their values.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph {

struct SymDim {
  int32_t sym = -1;  // < 0: the constant `offset`
  int64_t scale = 1, offset = 0;
  int64_t div = 1;  // >= 1: floor((scale * s + offset) / div); 1 for a constant

  static SymDim constant(int64_t v) { return SymDim{-1, 1, v}; }
  bool symbolic() const { return sym >= 0; }
  bool is_one() const { return sym < 0 && offset == 1; }  // a static 1: broadcast, no loop
  bool affine() const { return div == 1; }
  int64_t value(std::span<const int64_t> syms) const {
    if (sym < 0) return offset;
    const int64_t x = scale * syms[static_cast<size_t>(sym)] + offset;
    return div == 1 ? x : floor_div(x, div);
  }
  // This dim plus c (still of the form above).
  SymDim plus(int64_t c) const {
    return sym < 0 ? constant(offset + c) : SymDim{sym, scale, offset + c * div, div}.normalized();
  }
  // This dim times c, when still of the form above: a constant's product, the dim itself (c = 1),
  // 0 (c = 0), or an affine dim scaled (c > 1); nullopt otherwise (c < 0, or a floor division
  // multiplied, which is no such form).
  std::optional<SymDim> times(int64_t c) const {
    if (sym < 0) return constant(offset * c);
    if (c == 1) return *this;
    if (c == 0) return constant(0);
    if (c < 0 || div != 1) return std::nullopt;
    return SymDim{sym, scale * c, offset * c, 1};
  }
  // floor(this / d), for d >= 1.
  SymDim divided(int64_t d) const {
    return sym < 0 ? constant(floor_div(offset, d))
                   : SymDim{sym, scale, offset, div * d}.normalized();
  }
  // The same function in lowest terms, so that equal dims compare equal: with g = gcd(scale, div),
  // floor((scale*s + offset) / div) = floor((scale/g * s + floor(offset/g)) / (div/g)); "(2*s+1)/2"
  // is s.
  SymDim normalized() const {
    if (sym < 0 || div == 1) return *this;
    int64_t g = scale, h = div;
    while (h != 0) g = std::exchange(h, g % h);
    return {sym, scale / g, floor_div(offset, g), div / g};
  }
  static int64_t floor_div(int64_t x, int64_t d) { return x / d - (x % d != 0 && x < 0); }
  bool operator==(const SymDim&) const = default;
};
using SymShape = std::vector<SymDim>;

struct Symbol {
  std::string name;  // a declared dim name (ONNX dim_param) where one was found, else "s<k>"
  Ints seen;         // its value in each warm-up run
};

// "7", "seq", "seq+1", "2*h-1", "(w+1)/2" (rounded down).
std::string sym_dim_str(const SymDim& d, const std::vector<Symbol>& symbols);
// "[2,seq,32]".
std::string sym_shape_str(const SymShape& s, const std::vector<Symbol>& symbols);
bool is_static(const SymShape& s);
Shape eval_shape(const SymShape& s, std::span<const int64_t> syms);

// Matches `actual` against `pattern`, binding symbols not bound yet (bound[k] false) from the
// affine dims that name them: every constant dim must be equal, every symbolic dim equal to its
// expression of the (possibly just bound) symbol, and a bound symbol non-negative. A divided dim
// binds nothing and is skipped while its symbol is unbound (bind_all checks it once bound).
// False on any mismatch (the symbols bound before the mismatch stay bound).
bool bind_symbols(const SymShape& pattern, const Shape& actual, std::vector<int64_t>& syms,
                  std::vector<bool>& bound);
// Binds the symbols from every (pattern, actual) pair, then checks every dim with all of them
// bound: true when all match and every symbol got bound.
bool bind_all(std::span<const SymShape* const> patterns, std::span<const Shape* const> actual,
              std::vector<int64_t>& syms, std::vector<bool>& bound);

}  // namespace sgraph
