// Test helpers that need xtensor: tensors as xtensor arrays, and checks against xtensor results.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>
#include <xtensor/xarray.hpp>

#include "test_util.h"

namespace sgraph::test {

// `t` copied into a row-major xt::xarray<T>: element for element when t has dtype T, otherwise
// converted through double (so a tensor of any dtype can be read as an xt::xarray<double>).
template <class T>
xt::xarray<T> to_xt(const Tensor& t) {
  xt::xarray<T> a(std::vector<size_t>(t.shape().begin(), t.shape().end()));
  if (t.dtype() == dtype_v<T>) {
    std::copy(t.data<T>(), t.data<T>() + t.numel(), a.data());
  } else {
    for (int64_t i = 0; i < t.numel(); ++i) a.data()[i] = static_cast<T>(t.at_double(i));
  }
  return a;
}

// check_close of `got` against the shape and row-major values of the xtensor expression `want`.
template <class E>
void check_xt(const Tensor& got, const xt::xexpression<E>& want, double rtol = 1e-5,
              double atol = 1e-6) {
  const xt::xarray<typename E::value_type> w = want.derived_cast();
  check_close(got, Shape(w.shape().begin(), w.shape().end()),
              std::vector<double>(w.begin(), w.end()), rtol, atol);
}

}  // namespace sgraph::test
