// Symbolic shapes, for the dynamic tier: a dim that changed during warm-up is an affine function of
// one symbol, scale * s + offset (the symbol itself, "seq + 1", "2 * h"); a dim that never changed
// is a constant. The ShapeTracker finds the symbols and relations (shape_tracker.h); a dynamic
// region's guard binds its symbols from the actual shapes (bind_symbols) and its kernel takes their
// values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph {

struct SymDim {
  int32_t sym = -1;  // < 0: the constant `offset`
  int64_t scale = 1, offset = 0;

  static SymDim constant(int64_t v) { return SymDim{-1, 1, v}; }
  bool symbolic() const { return sym >= 0; }
  bool is_one() const { return sym < 0 && offset == 1; }  // a static 1: broadcast, no loop
  int64_t value(std::span<const int64_t> syms) const {
    return sym < 0 ? offset : scale * syms[static_cast<size_t>(sym)] + offset;
  }
  bool operator==(const SymDim&) const = default;
};
using SymShape = std::vector<SymDim>;

struct Symbol {
  std::string name;  // a declared dim name (ONNX dim_param) where one was found, else "s<k>"
  Ints seen;         // its value in each warm-up run
};

// "7", "seq", "seq+1", "2*h-1".
std::string sym_dim_str(const SymDim& d, const std::vector<Symbol>& symbols);
// "[2,seq,32]".
std::string sym_shape_str(const SymShape& s, const std::vector<Symbol>& symbols);
bool is_static(const SymShape& s);
Shape eval_shape(const SymShape& s, std::span<const int64_t> syms);

// Matches `actual` against `pattern`, binding symbols not bound yet (bound[k] false) from the dims
// that name them: every constant dim must be equal, every symbolic dim equal to its expression of
// the (possibly just bound) symbol, and a bound symbol non-negative. False on any mismatch (the
// symbols bound before the mismatch stay bound).
bool bind_symbols(const SymShape& pattern, const Shape& actual, std::vector<int64_t>& syms,
                  std::vector<bool>& bound);

}  // namespace sgraph
