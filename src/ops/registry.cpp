// The op table, generated from op_list.h: each op file defines `const OpDef k<Name>`.
#include <array>

#include "ops/op.h"

namespace sgraph::ops {

#define SG_OP_DECLARE(Name, method) extern const OpDef k##Name;
SG_FOR_EACH_OP(SG_OP_DECLARE)
#undef SG_OP_DECLARE

namespace {
const std::array<const OpDef*, kNumOps> kTable = {
#define SG_OP_ENTRY(Name, method) &k##Name,
    SG_FOR_EACH_OP(SG_OP_ENTRY)
#undef SG_OP_ENTRY
};
constexpr std::array<std::string_view, kNumOps> kNames = {
#define SG_OP_NAME(Name, method) #Name,
    SG_FOR_EACH_OP(SG_OP_NAME)
#undef SG_OP_NAME
};
}  // namespace

const OpDef& op_def(OpKind op) { return *kTable[static_cast<size_t>(op)]; }

}  // namespace sgraph::ops

namespace sgraph {

std::string_view op_name(OpKind op) { return ops::kNames[static_cast<size_t>(op)]; }

std::optional<OpKind> op_from_name(std::string_view name) {
  for (size_t i = 0; i < ops::kNames.size(); ++i)
    if (ops::kNames[i] == name) return static_cast<OpKind>(i);
  return std::nullopt;
}

}  // namespace sgraph
