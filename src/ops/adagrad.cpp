// Adagrad(R, T, X1..Xn, G1..Gn, H1..Hn) {decay_factor = 0, epsilon = 1e-6, norm_coefficient = 0}
// -> X1_new..Xn_new, H1_new..Hn_new (domain ai.onnx.preview.training, version 1): one ADAGRAD
// step of each Xi from its gradient Gi and accumulated squared gradient Hi, elementwise:
//   r = R / (1 + T * decay_factor)
//   g = norm_coefficient * X + G            (the gradient of the L2 regularization added)
//   H_new = H + g * g
//   X_new = X - r * g / (sqrt(H_new) + epsilon)
#include <cmath>

#include "ops/preview_training.h"

namespace sgraph::ops {
namespace {

constexpr OptimizerLayout kAdagradLayout{3, 2};

struct AdagradParams {
  double decay, epsilon, norm;
};

AdagradParams adagrad_params(const Attributes& a) {
  return {a.get_float("decay_factor", 0.0), a.get_float("epsilon", 1e-6),
          a.get_float("norm_coefficient", 0.0)};
}

void shapes_adagrad(ShapeCtx& c) {
  adagrad_params(c.attrs());
  shapes_optimizer(c, kAdagradLayout);
}

void run_adagrad(KernelCtx& c) {
  const OptimizerStep s = optimizer_step(c);
  const AdagradParams p = adagrad_params(c.attrs());
  const double r = s.r / (1 + static_cast<double>(s.t) * p.decay);
  update_elements<3, 2>(c, [&](const auto& in, auto& out) {
    const double g = p.norm * in[0] + in[1];
    out[1] = in[2] + g * g;
    out[0] = in[0] - r * g / (std::sqrt(out[1]) + p.epsilon);
  });
}

}  // namespace

extern const OpDef kAdagrad;
const OpDef kAdagrad =
    with_domain(kPreviewTraining, {"Adagrad", 5, kMaxOptimizerInputs, 2, kMaxOptimizerInputs,
                                   [](TypeCtx& c) { types_optimizer(c, kAdagradLayout); },
                                   shapes_adagrad, run_adagrad});

}  // namespace sgraph::ops
