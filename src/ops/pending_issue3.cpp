#include "ops/pending.h"
namespace sgraph::ops {
SG_PENDING(Resize);
}  // namespace sgraph::ops
