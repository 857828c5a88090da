#include "ops/pending.h"
namespace sgraph::ops {
SG_PENDING(MatMul);
SG_PENDING(Gemm);
SG_PENDING(Conv);
SG_PENDING(ConvTranspose);
SG_PENDING(MaxPool);
SG_PENDING(AveragePool);
SG_PENDING(GlobalAveragePool);
SG_PENDING(BatchNormalization);
}  // namespace sgraph::ops
