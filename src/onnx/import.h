// What the ONNX importer knows, for callers that classify a model before (or instead of)
// loading it. Internal.
#pragma once

#include <string_view>

namespace onnx {
class ModelProto;
class GraphProto;
class TensorProto;
}  // namespace onnx

namespace sgraph {
class Graph;
}  // namespace sgraph

namespace sgraph::onnx_import {

// Whether load_onnx converts nodes of this op type from this domain ("" and "ai.onnx" are the
// default domain). A known op may still reject some of its attributes, inputs or dtypes.
bool knows_op(std::string_view domain, std::string_view type);

// Model validation (src/onnx/validate.cpp); each throws sgraph::Error naming the rule broken.
// Before the model is converted: its ir_version, opset imports, Constant values and function
// calls (no recursion).
void validate_model(const onnx::ModelProto& model);
// After it is converted (so the checker sees only models sgraph's importer accepted): the main
// graph's nodes against ONNX's op schemas, its initializers against ONNX's tensor rules (unless
// `initializers` is false: the importer checks each one as it converts it, before freeing its
// data, with check_initializer).
void check_with_onnx_checker(const onnx::ModelProto& model, bool initializers = true);
// Initializer t of model's main graph against ONNX's tensor rules (where the checker applies to
// the model's opset).
void check_initializer(const onnx::ModelProto& model, const onnx::TensorProto& t);
// Throws when a graph output or value_info of `gp` declares an element type, rank or size that
// contradicts what `g`, converted from it and inferred, computes.
void check_declared_types(const onnx::GraphProto& gp, const Graph& g);

}  // namespace sgraph::onnx_import
