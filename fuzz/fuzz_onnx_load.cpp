// libFuzzer target: an ONNX model's bytes through the loader (parse, validation, conversion,
// type and shape inference). Any outcome but a Graph or an sgraph::Error is a bug: a crash, a
// sanitizer report, another exception, a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sgraph/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sgraph::load_onnx_bytes(std::string_view(reinterpret_cast<const char*>(data), size),
                            "fuzz.onnx");
  } catch (const sgraph::Error&) {
  }
  return 0;
}
