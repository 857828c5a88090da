// Integer arithmetic on tensor data with defined results everywhere: what the reference kernels
// compute for integers, and what the JIT's element emitters compute too (LLVM's add, sub, mul
// without nsw/nuw wrap; its fptosi.sat saturates), so the two agree on every input.
//   - add, sub, mul, neg wrap around (two's complement), as the JIT's instructions do; C++'s
//     signed overflow would be undefined behaviour;
//   - lowest / -1 is lowest (the wrapped quotient; the hardware instruction traps), and
//     lowest % -1 is 0; division and remainder by zero are errors, raised by the callers;
//   - a float converted to an integer saturates to the type's range, NaN gives 0 (a C++ cast of
//     an out-of-range value is undefined behaviour, LLVM's fptosi gives poison).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "sgraph/error.h"

namespace sgraph::ops {

template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;  // (bool sums saturate, as numpy's do)
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <class T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}

template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a && b;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    // Unsigned types narrower than int promote to (signed) int: multiply in unsigned int or wider.
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

template <class T>
T wrap_neg(T a) {
  return wrap_sub(T(0), a);
}

// Truncating integer division, b != 0 (checked by the caller).
template <class T>
T int_div(T a, T b) {
  if constexpr (std::is_signed_v<T>)
    if (b == -1) return wrap_neg(a);
  return static_cast<T>(a / b);
}

// Float to integer T: truncation toward zero, saturated to T's range, NaN to 0.
template <class T, class F>
T saturate_cast(F x) {
  if (std::isnan(x)) return T(0);
  // The bounds as F: lowest is a power of two (exact); max + 1 is a power of two (exact), and
  // every F below it converts.
  constexpr F lo = static_cast<F>(std::numeric_limits<T>::lowest());
  constexpr F hi = static_cast<F>(std::numeric_limits<T>::max()) + F(1);
  if (x <= lo) return std::numeric_limits<T>::lowest();
  if (x >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(x);
}

// A double (an attribute's value) as element type T: saturated as above for an integer T, a
// plain conversion for floats and bool.
template <class T>
T from_double(double v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return saturate_cast<T>(v);
  else
    return static_cast<T>(v);
}

// Shape arithmetic on sizes and attributes (kernel sizes, dilations, pads, strides) that a model
// sets: an overflow is the model's error, never a wrapped size.
inline int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  SG_CHECK(!__builtin_add_overflow(a, b, &r))
      << what << " overflows int64 (" << a << " + " << b << ")";
  return r;
}
inline int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  SG_CHECK(!__builtin_mul_overflow(a, b, &r))
      << what << " overflows int64 (" << a << " * " << b << ")";
  return r;
}

}  // namespace sgraph::ops
