// One Jit used by several threads at once (Jit::add compiles outside its lock): kernels compiled
// concurrently compute what the interpreter does; the same code added by two threads at once is
// one kernel (with a disk cache, whose names come from the code, a second copy could not even
// link); and a kernel a cache holds is returned while another thread's compile is still running.
#include <chrono>
#include <exception>
#include <thread>

#include "jit/region_test_util.h"

using namespace sgraph;
using namespace sgraph::jit;
using namespace sgraph::test::region;
using test::TempDir;

namespace test_jit_concurrency {  // this file's own names (the tests build as unity sources)

namespace {

// A small elementwise graph with a Softmax; `k` changes its code, so each k is another kernel.
Graph graph_of(float k) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {4, 40});
  const ValueId s =
      b.node(OpKind::Softmax, {b.mul(x, b.scalar(k))}, {{"axis", int64_t{-1}}}).front();
  b.output(b.add(b.tanh(s), x), "y");
  return b.build();
}

std::vector<Tensor> feeds() { return {test::random_f32({4, 40}, 9, -2, 2)}; }

struct Outcome {
  RegionRun run;
  std::exception_ptr error;
};

Outcome run_on(Jit& jit, float k, const std::string& name) {
  Outcome o;
  try {
    o.run = run_region(graph_of(k), feeds(), jit, 1, name);
  } catch (...) {
    o.error = std::current_exception();
  }
  return o;
}

void check_outcome(const Outcome& o) {
  if (o.error) std::rethrow_exception(o.error);
  REQUIRE(o.run.got.size() == 1);
  test::check_tensors_close(o.run.got[0], o.run.want[0], 1e-5, 1e-6);
}

struct NoDelay {
  ~NoDelay() { Jit::delay_compiles_for_testing(0); }
};

}  // namespace

TEST_CASE("JIT: kernels added from several threads at once compile concurrently and correctly") {
  std::unique_ptr<Jit> jit = Jit::create();
  std::vector<Outcome> outcomes(6);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < outcomes.size(); ++i)
    threads.emplace_back(
        [&, i] { outcomes[i] = run_on(*jit, 1.0f + static_cast<float>(i), fresh_name()); });
  for (std::thread& t : threads) t.join();
  for (const Outcome& o : outcomes) check_outcome(o);
  CHECK(jit->live_kernels() == 0);  // every run removed its kernel
}

TEST_CASE("JIT: the same code added by two threads at once is one kernel") {
  TempDir dir;
  std::unique_ptr<Jit> jit = Jit::create({dir.path.string()});
  const Graph g = graph_of(2.5f);
  ShapeRecorder shapes(g);
  OpObserver* observers[] = {&shapes};
  Interpreter(g).run(feeds(), observers);
  NoDelay reset;
  Jit::delay_compiles_for_testing(300);  // the second thread comes while the first compiles
  CompiledRegion a, b;
  std::exception_ptr error_a, error_b;
  const auto compile = [&](CompiledRegion& out, std::exception_ptr& error) {
    try {
      out = compile_region(*jit, g, whole_graph(g), shapes.shapes, "same_region");
    } catch (...) {
      error = std::current_exception();
    }
  };
  std::thread ta([&] { compile(a, error_a); });
  std::thread tb([&] { compile(b, error_b); });
  ta.join();
  tb.join();
  Jit::delay_compiles_for_testing(0);
  if (error_a) std::rethrow_exception(error_a);
  if (error_b) std::rethrow_exception(error_b);
  REQUIRE(compiled(a));
  REQUIRE(compiled(b));
  CHECK(a.kernel.reused != b.kernel.reused);  // one compiled, the other given that kernel
  CHECK(jit->compile_stats().compiles == 1);  // (it waited for that compile: no second one)
  CHECK(reinterpret_cast<void*>(a.kernel.fn) == reinterpret_cast<void*>(b.kernel.fn));
  CHECK(jit->live_kernels() == 1);
  check_outcome(run_on(*jit, 2.5f, "same_region"));  // that kernel computes what it should
  jit->remove(a.kernel.handle);
  jit->remove(b.kernel.handle);
  CHECK(jit->live_kernels() == 0);
}

TEST_CASE("JIT: a kernel in the cache is returned while another thread compiles") {
  std::unique_ptr<Jit> jit = Jit::create();
  const Graph cached = graph_of(7.0f);
  // Compiled once and kept, so that adding its code again is a cache hit.
  const CompiledRegion kept = [&] {
    ShapeRecorder shapes(cached);
    OpObserver* observers[] = {&shapes};
    Interpreter(cached).run(feeds(), observers);
    return compile_region(*jit, cached, whole_graph(cached), shapes.shapes, "kept_region");
  }();
  REQUIRE(compiled(kept));
  NoDelay reset;
  Jit::delay_compiles_for_testing(1500);  // the other thread's compile takes at least 1.5 s
  using Clock = std::chrono::steady_clock;
  Clock::time_point slow_done;
  Outcome slow;
  std::thread t([&] {
    slow = run_on(*jit, 8.0f, fresh_name());
    slow_done = Clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the slow compile is running
  const Outcome hit = run_on(*jit, 7.0f, "kept_region");
  const Clock::time_point hit_done = Clock::now();
  t.join();
  check_outcome(hit);
  CHECK(hit.run.compiled.kernel.reused);
  CHECK(hit_done < slow_done);  // it did not wait for the other compile
  check_outcome(slow);
  jit->remove(kept.kernel.handle);
}

}  // namespace test_jit_concurrency
