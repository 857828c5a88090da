// The ORC wrapper on its own; kernels themselves are tested through the region compiler.
#include "jit/jit.h"

#include "test_util.h"

namespace sgraph::jit {

TEST_CASE("JIT: creates a JIT for the host") {
  std::unique_ptr<Jit> jit = Jit::create();
  REQUIRE(jit);
  CHECK(!jit->target_triple().empty());
  CHECK(!jit->data_layout().empty());
  // (libmvec in use: "JIT: elementwise f32 regions vectorise, libm calls through libmvec")
  jit->remove(12345);             // an unknown handle is ignored
  CHECK(jit->last_ir().empty());  // kept only after keep_ir(true)
}

}  // namespace sgraph::jit
