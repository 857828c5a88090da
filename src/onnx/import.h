// What the ONNX importer knows, for callers that classify a model before (or instead of)
// loading it. Internal.
#pragma once

#include <string_view>

namespace sgraph::onnx_import {

// Whether load_onnx converts nodes of this op type from this domain ("" and "ai.onnx" are the
// default domain). A known op may still reject some of its attributes, inputs or dtypes.
bool knows_op(std::string_view domain, std::string_view type);

}  // namespace sgraph::onnx_import
