// TEMPORARY: placeholder definitions for ops whose files are being written. Each family's
// pending_*.cpp is deleted when its real op files land. Weak, so a real definition wins.
#pragma once
#include "ops/op.h"
#define SG_PENDING(Name)                                            \
  [[gnu::weak]] extern const OpDef k##Name {                        \
#Name, 0, 64, 0, 64,                                              \
                      [](TypeCtx&) { SG_FAIL() << #Name " is not implemented yet"; },   \
                      [](ShapeCtx&) { SG_FAIL() << #Name " is not implemented yet"; },  \
                      [](KernelCtx&) { SG_FAIL() << #Name " is not implemented yet"; } \
  }
