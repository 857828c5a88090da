// sgraph/onnx.h — ONNX import.
//
//   Graph g = sgraph::load_onnx("model.onnx");   // verified; errors name the file, node and op
//   Session s(std::move(g));
//
// Supports the default (ai.onnx) domain up to opset 18, mapping older op versions onto sgraph's
// ops (e.g. Softmax before 13, Clip-6, Slice-1, Pad-2, Upsample, Resize-10), Constant nodes,
// initializers (raw or typed data), named and unnamed symbolic dims, and If subgraphs that read
// outer values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph {

Graph load_onnx(const std::string& path);
// `bytes` is a serialized ModelProto; `origin` names it in errors.
Graph load_onnx_bytes(std::string_view bytes, const std::string& origin);

// A serialized onnx.TensorProto file (the input_<i>.pb / output_<j>.pb of ONNX test folders).
Tensor load_tensor_pb(const std::string& path);
void save_tensor_pb(const Tensor& t, const std::string& path, const std::string& name = "");

// The inputs of the data sets in `dir`, as in ONNX's test layout: test_data_set_<k>/input_<i>.pb
// for k = 0, 1, ... (until one is missing), or, without test_data_set_0, the input_<i>.pb files in
// `dir` itself as one data set. Empty when there are none; throws sgraph::Error on a bad file.
std::vector<std::vector<Tensor>> load_data_set_inputs(const std::string& dir);

}  // namespace sgraph
