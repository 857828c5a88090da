// Optimizer updates (sgraph/train.h: Optimizer) as primitive elementwise ops appended to a graph,
// so the JIT fuses each parameter's whole update chain into one region kernel.
//
//   std::vector<std::string> slots = state_slots(opt);        // {"adam_m", "adam_v"}
//   Update u = append_update(b, opt, w, grad_w, {m, v}, step); // u.parameter: w updated
#pragma once

#include <string>
#include <vector>

#include "sgraph/train.h"

namespace sgraph {

// Throws sgraph::Error naming the setting that is out of range (a learning rate that is not
// positive and finite, a momentum or beta outside [0, 1), a non-positive epsilon).
void check_optimizer(const Optimizer& opt);

// The per-parameter state the optimizer keeps, each slot a tensor of the parameter's shape:
// SGD with momentum {"momentum"}, plain SGD none, Adam {"adam_m", "adam_v"}.
std::vector<std::string> state_slots(const Optimizer& opt);

// Whether the optimizer counts steps (Adam's bias correction): an i64 scalar of state shared by
// every parameter, the number of steps taken before this one.
bool counts_steps(const Optimizer& opt);

struct Update {
  ValueId parameter = kNoValue;  // the updated parameter
  std::vector<ValueId> slots;    // the updated state, in state_slots() order
};

// Appends the update of `param` from its gradient `grad` and its state `slots` (state_slots()
// order); `step` is the step count input when counts_steps(opt), else kNoValue. Every op reads
// only this parameter's values (and the step count input), so each parameter's update chain is a
// connected component of its own.
Update append_update(GraphBuilder& b, const Optimizer& opt, ValueId param, ValueId grad,
                     const std::vector<ValueId>& slots, ValueId step);

}  // namespace sgraph
