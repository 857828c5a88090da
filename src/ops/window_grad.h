// The gradient rules of the sliding-window ops (window_grad.cpp), wired to their OpDefs in
// conv.cpp and pool.cpp. Each needs the spatial dims of X static; batch and channels may be
// symbolic.
#pragma once

#include "ops/grad.h"

namespace sgraph::ops {

void grad_conv(GradCtx& c);
void grad_max_pool(GradCtx& c);  // output 0 only: Indices carry no gradient
void grad_average_pool(GradCtx& c);
void grad_global_average_pool(GradCtx& c);

}  // namespace sgraph::ops
