// Momentum(R, T, X1..Xn, G1..Gn, V1..Vn) {alpha, beta, norm_coefficient, mode: all required}
// -> X1_new..Xn_new, V1_new..Vn_new (domain ai.onnx.preview.training, version 1): one step of
// stochastic gradient descent with momentum of each Xi from its gradient Gi and momentum Vi,
// elementwise:
//   g = norm_coefficient * X + G            (the gradient of the L2 regularization added)
//   V_new = alpha * V + (T > 0 ? beta : 1) * g
//   X_new = X - R * V_new                   (mode "standard")
//   X_new = X - R * (g + alpha * V_new)     (mode "nesterov")
#include <array>

#include "ops/preview_training.h"

namespace sgraph::ops {
namespace {

constexpr OptimizerLayout kMomentumLayout{3, 2};

struct MomentumParams {
  double alpha, beta, norm;
  bool nesterov;
};

MomentumParams momentum_params(const Attributes& a) {
  enum class Mode { standard, nesterov };
  constexpr std::array kMomentumModes{"standard", "nesterov"};
  SG_CHECK(a.has("mode")) << "missing required attribute 'mode' (standard or nesterov)";
  return {a.get_float("alpha"), a.get_float("beta"), a.get_float("norm_coefficient"),
          attr_choice<Mode>(a, "Momentum", "mode", kMomentumModes) == Mode::nesterov};
}

void shapes_momentum(ShapeCtx& c) {
  momentum_params(c.attrs());
  shapes_optimizer(c, kMomentumLayout);
}

void run_momentum(KernelCtx& c) {
  const OptimizerStep s = optimizer_step(c);
  const MomentumParams p = momentum_params(c.attrs());
  const double beta = s.t > 0 ? p.beta : 1.0;
  update_elements<3, 2>(c, [&](const auto& in, auto& out) {
    const double g = p.norm * in[0] + in[1];
    out[1] = p.alpha * in[2] + beta * g;
    out[0] = in[0] - s.r * (p.nesterov ? g + p.alpha * out[1] : out[1]);
  });
}

}  // namespace

extern const OpDef kMomentum;
const OpDef kMomentum =
    with_domain(kPreviewTraining, {"Momentum", 5, kMaxOptimizerInputs, 2, kMaxOptimizerInputs,
                                   [](TypeCtx& c) { types_optimizer(c, kMomentumLayout); },
                                   shapes_momentum, run_momentum});

}  // namespace sgraph::ops
