// A large kernel module compiled in parts on several threads (Jit::split_compiles,
// src/jit/split_compile.cpp): the linked parts compute what the interpreter does, serial and
// parallel kernels alike; the disk cache keeps every part, a second JIT loads them all, and an
// entry with one damaged part is ignored and rewritten.
#include <filesystem>
#include <fstream>

#include "ir/threads.h"
#include "jit/region_test_util.h"

using namespace sgraph;
using namespace sgraph::jit;
using namespace sgraph::test::region;
namespace fs = std::filesystem;
using test::TempDir;

namespace test_split_compile {  // this file's own names (the tests build as unity sources)

namespace {

// Several different loop nests (two Softmaxes, a product's epilogue, elementwise math, a
// LogSoftmax over the other axis), so the module has functions to spread over parts.
Graph many_nests() {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {6, 96});
  const ValueId w = b.constant("w", test::random_f32({96, 48}, 11, -0.5f, 0.5f));
  const ValueId s = b.node(OpKind::Softmax, {x}, {{"axis", int64_t{-1}}}).front();
  const ValueId m = b.matmul(s, w);
  const ValueId t = b.mul(b.tanh(m), b.erf(b.add(m, b.scalar(0.25f))));
  b.output(b.node(OpKind::LogSoftmax, {t}, {{"axis", int64_t{0}}}).front(), "a");
  b.output(
      b.add(b.node(OpKind::Softmax, {b.mul(x, b.scalar(3.0f))}, {{"axis", int64_t{-1}}}).front(),
            x),
      "b");
  return b.build();
}

std::vector<Tensor> feeds() { return {test::random_f32({6, 96}, 5, -3, 3)}; }

void check_run(const RegionRun& run) {
  REQUIRE(run.got.size() == run.want.size());
  for (size_t i = 0; i < run.got.size(); ++i)
    test::check_tensors_close(run.got[i], run.want[i], 1e-5, 1e-6);
}

}  // namespace

TEST_CASE("JIT: a module compiled in parts on several threads computes what the interpreter does") {
  const Graph g = many_nests();
  for (const bool serial : {true, false}) {
    for (const int parts : {1, 2, 3}) {
      INFO((serial ? "serial kernel" : "nests through sgraph_parallel_for")
           << ", " << parts << " parts");
      std::unique_ptr<Jit> jit = Jit::create();
      jit->split_compiles(parts, 1);  // split whatever its size
      const RegionRun run = run_region(g, feeds(), *jit, serial ? 1 : 2, fresh_name(), serial);
      CHECK(run.compiled.kernel.parts == parts);
      check_run(run);
    }
  }
  // Below the size limit a module is compiled whole, whatever the threads.
  std::unique_ptr<Jit> jit = Jit::create();
  jit->split_compiles(3, 1'000'000);
  const RegionRun whole = run_region(g, feeds(), *jit);
  CHECK(whole.compiled.kernel.parts == 1);
  check_run(whole);
}

TEST_CASE("JIT: a module in parts with no thread to be had compiles every part on the caller") {
  fail_thread_starts_for_testing(1'000'000);
  std::unique_ptr<Jit> jit = Jit::create();
  jit->split_compiles(3, 1);
  const RegionRun run = run_region(many_nests(), feeds(), *jit, 1, fresh_name(), true);
  fail_thread_starts_for_testing(0);
  CHECK(run.compiled.kernel.parts == 3);  // split as before; the parts ran one after another
  check_run(run);
}

TEST_CASE("JIT disk cache: a kernel compiled in parts is kept and loaded with all its parts") {
  TempDir dir;
  const Graph g = many_nests();
  {
    std::unique_ptr<Jit> jit = Jit::create({dir.path.string()});
    jit->split_compiles(3, 1);
    const RegionRun run = run_region(g, feeds(), *jit, 2, "split_region");
    CHECK_FALSE(run.compiled.kernel.from_disk);
    CHECK(run.compiled.kernel.parts == 3);
    check_run(run);
  }
  REQUIRE(test::cache_entries(dir.path).size() == 1);
  const fs::path entry = test::cache_entries(dir.path)[0];
  const std::string good = test::read_file(entry);
  {  // a second JIT, compiling on one thread, loads the three objects
    std::unique_ptr<Jit> jit = Jit::create({dir.path.string()});
    jit->split_compiles(1);
    const RegionRun run = run_region(g, feeds(), *jit, 2, "split_region");
    CHECK(run.compiled.kernel.from_disk);
    CHECK(run.compiled.kernel.parts == 3);
    check_run(run);
  }
  // A byte of the last part flipped, or the entry cut inside its parts: ignored, compiled (on one
  // thread, so whole), and rewritten.
  std::string flipped = good;
  flipped[flipped.size() - 100] ^= 0x5a;
  for (const std::string& damaged : {flipped, good.substr(0, good.size() - 1000)}) {
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << damaged;
    std::unique_ptr<Jit> jit = Jit::create({dir.path.string()});
    jit->split_compiles(1);
    const RegionRun run = run_region(g, feeds(), *jit, 2, "split_region");
    CHECK_FALSE(run.compiled.kernel.from_disk);
    CHECK(run.compiled.kernel.parts == 1);
    check_run(run);
    std::unique_ptr<Jit> again = Jit::create({dir.path.string()});
    const RegionRun reloaded = run_region(g, feeds(), *again, 2, "split_region");
    CHECK(reloaded.compiled.kernel.from_disk);
    CHECK(reloaded.compiled.kernel.parts == 1);
    check_run(reloaded);
  }
}

}  // namespace test_split_compile
