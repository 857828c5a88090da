// onnx.TensorProto <-> Tensor. Internal: keeps protobuf headers out of the public API.
#pragma once

#include <onnx/onnx_pb.h>

#include "sgraph/tensor.h"

namespace sgraph::onnx_import {

// Throws sgraph::Error naming the tensor when its dtype is unsupported, it uses external data,
// or its data does not match its dims.
Tensor tensor_from_proto(const onnx::TensorProto& p);
onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name);

// A scalar of dtype t holding v (an attribute's value), converted as the interpreter converts it
// (ops::from_double): an integer t saturates (Clip-6's default bounds are +-inf, and a Pad-2
// `value` may be any double), a float t rounds.
Tensor scalar_from_double(DType t, double v);

}  // namespace sgraph::onnx_import
