#include "ops/pending.h"
namespace sgraph::ops {
SG_PENDING(Identity);
SG_PENDING(Reshape);
SG_PENDING(Flatten);
SG_PENDING(Squeeze);
SG_PENDING(Unsqueeze);
SG_PENDING(Transpose);
SG_PENDING(Concat);
SG_PENDING(Split);
SG_PENDING(Slice);
SG_PENDING(Gather);
SG_PENDING(Expand);
SG_PENDING(Pad);
SG_PENDING(Shape);
SG_PENDING(Range);
SG_PENDING(ConstantOfShape);
}  // namespace sgraph::ops
