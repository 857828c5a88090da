#include "ops/pending.h"
namespace sgraph::ops {
SG_PENDING(Resize);
SG_PENDING(If);
}  // namespace sgraph::ops
