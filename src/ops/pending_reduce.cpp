#include "ops/pending.h"
namespace sgraph::ops {
SG_PENDING(ReduceSum);
SG_PENDING(ReduceMean);
SG_PENDING(ReduceMax);
SG_PENDING(Softmax);
SG_PENDING(LogSoftmax);
SG_PENDING(LayerNormalization);
}  // namespace sgraph::ops
