// onnx.TensorProto <-> Tensor. Internal: keeps protobuf headers out of the public API.
#pragma once

#include <onnx/onnx_pb.h>

#include "sgraph/tensor.h"

namespace sgraph::onnx_import {

// Throws sgraph::Error naming the tensor when its dtype is unsupported, it uses external data,
// or its data does not match its dims.
Tensor tensor_from_proto(const onnx::TensorProto& p);
onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name);

}  // namespace sgraph::onnx_import
