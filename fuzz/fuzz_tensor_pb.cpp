// libFuzzer target: a serialized onnx.TensorProto (a test data set's .pb file) to a Tensor.
#include <cstddef>
#include <cstdint>

#include "onnx/tensor_proto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::TensorProto p;
  if (size > (size_t{1} << 30) || !p.ParseFromArray(data, static_cast<int>(size))) return 0;
  try {
    const sgraph::Tensor t = sgraph::onnx_import::tensor_from_proto(p);
    (void)t.numel();
  } catch (const sgraph::Error&) {
  }
  return 0;
}
