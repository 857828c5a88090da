// OpProfiler: per-op time (median, min), bytes read and written, allocations.
#include "runtime/op_profiler.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
// z = x + y (node 0, [1000] f32); r = Reshape(z, [10,100]) (node 1, a view); s = z + z (node 2).
Graph add_reshape() {
  GraphBuilder b("add_reshape");
  ValueId x = b.input("x", DType::f32, {1000});
  ValueId y = b.input("y", DType::f32, {1000});
  ValueId z = b.add(x, y);
  b.output(b.reshape(z, b.ints({10, 100})), "r");
  b.output(b.add(z, z), "s");
  return b.build();
}
}  // namespace

TEST_CASE("OpProfiler: bytes read and written, allocations, runs, through the interpreter") {
  Graph g = add_reshape();
  REQUIRE(g.nodes.size() == 3);
  OpProfiler prof(g);
  Interpreter interp(g);
  OpObserver* obs[] = {&prof};
  const std::vector<Tensor> feed = {random_f32({1000}, 1), random_f32({1000}, 2)};
  for (int r = 0; r < 3; ++r) interp.run(feed, obs);

  const OpProfile& add = prof.profile(0);
  CHECK(add.bytes_read == 8000);
  CHECK(add.bytes_written == 4000);
  CHECK(add.allocations == 1);
  CHECK(add.runs == 3);
  CHECK(add.min_ns > 0);
  CHECK(add.min_ns <= add.median_ns);

  const OpProfile& reshape = prof.profile(1);
  CHECK(reshape.bytes_read == 4000 + 2 * 8);  // the data and the i64[2] shape
  CHECK(reshape.bytes_written == 0);          // a view of its input
  CHECK(reshape.allocations == 0);

  const OpProfile& twice = prof.profile(2);
  CHECK(twice.bytes_read == 4000);  // z + z reads z once
  CHECK(twice.bytes_written == 4000);
  CHECK(twice.allocations == 1);

  CHECK(prof.size() == 3);
}

TEST_CASE("OpProfiler: median and min over known times") {
  Graph g = add_reshape();
  OpProfiler prof(g, 4);
  const Tensor a = Tensor::zeros(DType::f32, {1000}), b = Tensor::zeros(DType::f32, {1000});
  const Tensor out = Tensor::zeros(DType::f32, {1000});
  const Tensor ins[] = {a, b};
  auto observe = [&](int32_t node, int64_t ns) {
    prof.on_op(OpEvent{node, g.nodes[node], ins, std::span<const Tensor>(&out, 1), ns});
  };
  CHECK(prof.profile(0).runs == 0);
  CHECK(prof.profile(0).median_ns == 0);

  for (int64_t ns : {30, 10, 20}) observe(0, ns);
  CHECK(prof.profile(0).runs == 3);
  CHECK(prof.profile(0).median_ns == 20);
  CHECK(prof.profile(0).min_ns == 10);
  observe(0, 45);  // an even count: the mean of the middle two
  CHECK(prof.profile(0).runs == 4);
  CHECK(prof.profile(0).median_ns == 25);
  CHECK(prof.profile(0).min_ns == 10);

  observe(2, 1000);
  CHECK(prof.profile(1).median_ns == 0);  // never observed
  CHECK(prof.profile(2).median_ns == 1000);
  CHECK(prof.profile(0).bytes_read == 8000);
  CHECK(prof.profile(0).allocations == 1);
}

TEST_CASE("OpProfiler: outputs sharing a buffer, and absent inputs") {
  Graph g = add_reshape();
  OpProfiler prof(g);
  const Tensor x = Tensor::zeros(DType::f32, {10, 100});
  const Tensor view = x.reshape({1000});
  SUBCASE("an output that is a view of an input is no allocation") {
    const Tensor ins[] = {x, Tensor{}};  // an absent input reads nothing
    prof.on_op(OpEvent{1, g.nodes[1], ins, std::span<const Tensor>(&view, 1), 5});
    CHECK(prof.profile(1).bytes_read == 4000);
    CHECK(prof.profile(1).allocations == 0);
    CHECK(prof.profile(1).bytes_written == 0);
  }
  SUBCASE("two outputs on one fresh buffer are one allocation") {
    const Tensor y = Tensor::zeros(DType::f32, {1000});
    const Tensor outs[] = {y, y.reshape({10, 100})};
    prof.on_op(OpEvent{0, g.nodes[0], std::span<const Tensor>(&x, 1), outs, 5});
    CHECK(prof.profile(0).allocations == 1);
    CHECK(prof.profile(0).bytes_written == 4000);
  }
  SUBCASE("an input and its view are read once") {
    const Tensor ins[] = {x, view};
    const Tensor out = Tensor::zeros(DType::f32, {1000});
    prof.on_op(OpEvent{2, g.nodes[2], ins, std::span<const Tensor>(&out, 1), 5});
    CHECK(prof.profile(2).bytes_read == 4000);
  }
}

TEST_CASE("OpProfiler: an unknown node is an internal error") {
  Graph g = add_reshape();
  OpProfiler prof(g);
  CHECK(contains(error_of([&] { (void)prof.profile(3); }), "node 3 out of range (3 nodes)"));
}
