// The optimizers of ONNX domain ai.onnx.preview.training (Adagrad, Adam, Momentum; version 1)
// share one layout, decoded here for their dtype and shape rules and kernels:
//   inputs:  R (the learning rate: an f32 or f64 scalar), T (the update count: an i64 scalar),
//            then `in_lists` lists of n tensors each: the optimized tensors X1..Xn, their
//            gradients G1..Gn, then the op's state lists (e.g. Adagrad's H1..Hn);
//   outputs: `out_lists` lists of n: the new X1..Xn, then the new state lists.
// Each list's i-th tensor has Xi's shape and dtype (f32 or f64); so do the outputs.
#pragma once

#include <array>

#include "ops/op.h"

namespace sgraph::ops {

// The domain these ops belong to (OpDef::domain).
inline constexpr std::string_view kPreviewTraining = "ai.onnx.preview.training";

// The most inputs (and outputs) a node of these ops takes.
inline constexpr int kMaxOptimizerInputs = 1024;

struct OptimizerLayout {
  int in_lists, out_lists;
};

void types_optimizer(TypeCtx& c, OptimizerLayout l);
void shapes_optimizer(ShapeCtx& c, OptimizerLayout l);

// R and T of a running node.
struct OptimizerStep {
  double r;
  int64_t t;
};
OptimizerStep optimizer_step(const KernelCtx& c);

// Runs `update(in, out)` on every element of every optimized tensor: `in` holds the element's
// values in the input lists (X, G, then the states), `update` sets `out` (the new X, then the new
// states). Computed in double; each tensor's elements are read before they are written.
template <int In, int Out, class F>
void update_elements(KernelCtx& c, F&& update) {
  const size_t n = c.out.size() / Out;
  for (size_t i = 0; i < n; ++i)
    visit_float(c.in[2 + i].dtype(), [&]<class T>() {
      std::array<const T*, In> src;
      std::array<T*, Out> dst;
      for (int k = 0; k < In; ++k) src[k] = c.in[2 + k * n + i].template data<T>();
      for (int k = 0; k < Out; ++k) dst[k] = c.out[k * n + i].template data<T>();
      std::array<double, In> a;
      std::array<double, Out> b;
      for (int64_t e = 0, m = c.in [2 + i].numel(); e < m; ++e) {
        for (int k = 0; k < In; ++k) a[k] = static_cast<double>(src[k][e]);
        update(a, b);
        for (int k = 0; k < Out; ++k) dst[k][e] = static_cast<T>(b[k]);
      }
    });
}

}  // namespace sgraph::ops
