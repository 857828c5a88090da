// Test helpers: building tensors and comparing them.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "sgraph/sgraph.h"

namespace sgraph::test {

// Checks `got` has `shape` and elementwise |got - want| <= atol + rtol * |want| (NaN matches NaN,
// an infinity matches only itself).
inline void check_close(const Tensor& got, const Shape& shape, const std::vector<double>& want,
                        double rtol = 1e-5, double atol = 1e-6) {
  REQUIRE(got.defined());
  CHECK_MESSAGE(got.shape() == shape, "shape " << shape_str(got.shape()) << " != " << shape_str(shape));
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.at_double(i), w = want[i];
    if (std::isnan(w) || std::isinf(w)) {
      CHECK_MESSAGE((std::isnan(w) ? std::isnan(g) : g == w),
                    "element " << i << ": got " << g << ", want " << w);
      continue;
    }
    CHECK_MESSAGE(std::abs(g - w) <= atol + rtol * std::abs(w),
                  "element " << i << ": got " << g << ", want " << w);
  }
}

inline void check_tensors_close(const Tensor& got, const Tensor& want, double rtol = 1e-5,
                                double atol = 1e-6) {
  std::vector<double> w(want.numel());
  for (int64_t i = 0; i < want.numel(); ++i) w[i] = want.at_double(i);
  CHECK(got.dtype() == want.dtype());
  check_close(got, want.shape(), w, rtol, atol);
}

// Two-argument form (no tolerances, so it cannot be confused with the shape/value form).
inline void check_close(const Tensor& got, const Tensor& want) { check_tensors_close(got, want); }

inline Tensor random_f32(Shape shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  Tensor t(DType::f32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Runs a single-node graph: inputs become graph inputs unless given as constants.
// Returns the node's outputs.
inline std::vector<Tensor> run_op(OpKind op, const std::vector<Tensor>& inputs,
                                  Attributes attrs = {}, int num_outputs = 1,
                                  const std::vector<bool>& constant = {}) {
  GraphBuilder b("op_test");
  std::vector<ValueId> ins;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      ins.push_back(kNoValue);
    } else if (i < constant.size() && constant[i]) {
      ins.push_back(b.constant("in" + std::to_string(i), inputs[i]));
    } else {
      ins.push_back(b.input("in" + std::to_string(i), inputs[i].dtype(), to_dims(inputs[i].shape())));
      feeds.push_back(inputs[i]);
    }
  }
  for (ValueId v : b.node(op, ins, std::move(attrs), num_outputs)) b.output(v);
  Session s(b.build());
  return s.run(feeds);
}

// The error message run_op throws, or "" if it does not throw.
inline std::string op_error(OpKind op, const std::vector<Tensor>& inputs, Attributes attrs = {},
                            int num_outputs = 1, const std::vector<bool>& constant = {}) {
  try {
    run_op(op, inputs, std::move(attrs), num_outputs, constant);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace sgraph::test
