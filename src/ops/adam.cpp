// Adam(R, T, X1..Xn, G1..Gn, V1..Vn, H1..Hn) {alpha = 0.9, beta = 0.999, epsilon = 1e-6,
// norm_coefficient = 0, norm_coefficient_post = 0} -> X1_new..Xn_new, V1_new..Vn_new,
// H1_new..Hn_new (domain ai.onnx.preview.training, version 1): one Adam step of each Xi from its
// gradient Gi and running averages Vi (of the gradient) and Hi (of its square), elementwise:
//   g = norm_coefficient * X + G            (the gradient of the L2 regularization added)
//   V_new = alpha * V + (1 - alpha) * g
//   H_new = beta * H + (1 - beta) * g * g
//   R_adjusted = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R
//   X_new = (1 - norm_coefficient_post) * (X - R_adjusted * V_new / (sqrt(H_new) + epsilon))
#include <cmath>

#include "ops/preview_training.h"

namespace sgraph::ops {
namespace {

constexpr OptimizerLayout kAdamLayout{4, 3};

struct AdamParams {
  double alpha, beta, epsilon, norm, norm_post;
};

AdamParams adam_params(const Attributes& a) {
  return {a.get_float("alpha", 0.9), a.get_float("beta", 0.999), a.get_float("epsilon", 1e-6),
          a.get_float("norm_coefficient", 0.0), a.get_float("norm_coefficient_post", 0.0)};
}

void shapes_adam(ShapeCtx& c) {
  adam_params(c.attrs());
  shapes_optimizer(c, kAdamLayout);
}

void run_adam(KernelCtx& c) {
  const OptimizerStep s = optimizer_step(c);
  const AdamParams p = adam_params(c.attrs());
  const double t = static_cast<double>(s.t);
  const double r =
      s.t > 0 ? s.r * std::sqrt(1 - std::pow(p.beta, t)) / (1 - std::pow(p.alpha, t)) : s.r;
  update_elements<4, 3>(c, [&](const auto& in, auto& out) {
    const double g = p.norm * in[0] + in[1];
    out[1] = p.alpha * in[2] + (1 - p.alpha) * g;
    out[2] = p.beta * in[3] + (1 - p.beta) * g * g;
    out[0] = (1 - p.norm_post) * (in[0] - r * out[1] / (std::sqrt(out[2]) + p.epsilon));
  });
}

}  // namespace

extern const OpDef kAdam;
const OpDef kAdam = with_domain(
    kPreviewTraining, {"Adam", 6, kMaxOptimizerInputs, 3, kMaxOptimizerInputs,
                       [](TypeCtx& c) { types_optimizer(c, kAdamLayout); }, shapes_adam, run_adam});

}  // namespace sgraph::ops
