// Row statistics of Softmax and LayerNormalization lowerings: rows are the input's dims from
// `axis` on (LayerNormalization) or just `axis` (Softmax); a statistic has one element per row.
#pragma once

#include "ops/lowering.h"

namespace sgraph::ops {

// The shape of a row statistic: the input's shape with dim `axis` (through_last: and every dim
// after it) set to 1.
SymShape row_shape(Emitter& e, const Node& n, bool through_last);
// The offset of the statistic of the row holding input index idx.
llvm::Value* row_offset(Emitter& e, const Index& idx, const SymShape& rs);

}  // namespace sgraph::ops
