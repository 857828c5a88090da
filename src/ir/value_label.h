// How messages and printouts name a value: its name, or %id when it has none.
#pragma once

#include <string>

#include "sgraph/graph.h"

namespace sgraph {

std::string value_label(const Graph& g, ValueId id);

}  // namespace sgraph
