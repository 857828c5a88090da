// SGD (with momentum) and Adam updates as primitive elementwise ops (see optimizer.h).
#include "runtime/optimizer.h"

#include <cmath>

namespace sgraph {

namespace {

ValueId scalar_like(GraphBuilder& b, double x, ValueId like) {
  Tensor t(b.graph().values.at(like).dtype, {});
  visit_dtype(t.dtype(), [&]<class T>() { t.data<T>()[0] = static_cast<T>(x); });
  return b.constant("", std::move(t));
}

}  // namespace

void check_optimizer(const Optimizer& opt) {
  SG_CHECK(std::isfinite(opt.learning_rate) && opt.learning_rate > 0)
      << "learning rate must be positive and finite, got " << opt.learning_rate;
  if (opt.kind == Optimizer::Kind::sgd) {
    SG_CHECK(opt.momentum >= 0 && opt.momentum < 1)
        << "SGD momentum must be in [0, 1), got " << opt.momentum;
    return;
  }
  SG_CHECK(opt.beta1 >= 0 && opt.beta1 < 1) << "Adam beta1 must be in [0, 1), got " << opt.beta1;
  SG_CHECK(opt.beta2 >= 0 && opt.beta2 < 1) << "Adam beta2 must be in [0, 1), got " << opt.beta2;
  SG_CHECK(std::isfinite(opt.epsilon) && opt.epsilon > 0)
      << "Adam epsilon must be positive and finite, got " << opt.epsilon;
}

std::vector<std::string> state_slots(const Optimizer& opt) {
  if (opt.kind == Optimizer::Kind::adam) return {"adam_m", "adam_v"};
  if (opt.momentum != 0) return {"momentum"};
  return {};
}

bool counts_steps(const Optimizer& opt) { return opt.kind == Optimizer::Kind::adam; }

Update append_update(GraphBuilder& b, const Optimizer& opt, ValueId param, ValueId grad,
                     const std::vector<ValueId>& slots, ValueId step) {
  auto c = [&](double x) { return scalar_like(b, x, param); };
  const ValueId lr = c(opt.learning_rate);
  Update u;
  if (opt.kind == Optimizer::Kind::sgd) {
    if (opt.momentum == 0) {  // p - lr * g
      u.parameter = b.sub(param, b.mul(grad, lr));
      return u;
    }
    const ValueId v = b.add(b.mul(slots.at(0), c(opt.momentum)), grad);  // mu * v + g
    u.parameter = b.sub(param, b.mul(v, lr));                            // p - lr * v
    u.slots = {v};
    return u;
  }
  // Adam: moments, then the bias corrections 1 - beta^t for this step t (the count plus one).
  const ValueId m = b.add(b.mul(slots.at(0), c(opt.beta1)), b.mul(grad, c(1 - opt.beta1)));
  const ValueId v =
      b.add(b.mul(slots.at(1), c(opt.beta2)), b.mul(b.mul(grad, grad), c(1 - opt.beta2)));
  const ValueId t = b.add(step, b.scalar<int64_t>(1));
  const ValueId bc1 = b.sub(c(1), b.pow(c(opt.beta1), t));
  const ValueId bc2 = b.sub(c(1), b.pow(c(opt.beta2), t));
  const ValueId denom = b.add(b.sqrt(b.div(v, bc2)), c(opt.epsilon));  // sqrt(v / bc2) + eps
  u.parameter = b.sub(param, b.div(b.mul(m, b.div(lr, bc1)), denom));  // p - lr/bc1 * m / denom
  u.slots = {m, v};
  return u;
}

}  // namespace sgraph
