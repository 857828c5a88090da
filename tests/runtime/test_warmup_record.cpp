// The warm-up record: a Session made from a graph carrying another Session's record plans at once,
// as that Session did; a record that does not fit is ignored, never trusted.
#include <algorithm>

#include "runtime/session_graphs.h"
#include "runtime/warmup_record.h"
#include "sgraph/session.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace test_warmup_record {  // this file's own names (the tests build as unity sources)

namespace {

// split_mlp warmed up at batches 2, 2, 5: the weight branch stable, the batch-dependent ops
// changed (a dynamic region over `batch`). Returns its record.
std::string recorded_mlp(Report* report = nullptr) {
  Session s(split_mlp(), unfolded({.warmup_runs = 3}));
  for (int64_t batch : {2, 2, 5}) s.run({random_f32({batch, 4}, 10)});
  REQUIRE(s.planned());
  if (report) *report = s.report();
  return s.warmup_record(node_names(s.graph()), value_names(s.graph()));
}

Graph with_record(Graph g, std::string record) {
  g.metadata[kWarmupRecordKey] = std::move(record);
  return g;
}

}  // namespace

TEST_CASE("Warm-up record: a Session made with it is planned at once, as the recorded one was") {
  Report want;
  const std::string record = recorded_mlp(&want);
  Session s(with_record(split_mlp(), record), unfolded({}));
  REQUIRE(s.planned());
  const Report got = s.report();
  CHECK(got.warmup_record == "loaded");
  CHECK(got.warmup_runs == 3);
  CHECK(got.symbols == want.symbols);
  REQUIRE(got.ops.size() == want.ops.size());
  for (size_t i = 0; i < got.ops.size(); ++i) {
    CAPTURE(got.ops[i].node);
    CHECK(got.ops[i].stable == want.ops[i].stable);
    CHECK(got.ops[i].changed_at_run == want.ops[i].changed_at_run);
    CHECK(got.ops[i].change == want.ops[i].change);
    CHECK(got.ops[i].region == want.ops[i].region);
    CHECK(got.ops[i].median_ns == want.ops[i].median_ns);
    CHECK(got.ops[i].bytes_read == want.ops[i].bytes_read);
  }
  REQUIRE(got.regions.size() == want.regions.size());
  for (size_t r = 0; r < got.regions.size(); ++r) {
    CHECK(got.regions[r].nodes == want.regions[r].nodes);
    CHECK(got.regions[r].node_ids == want.regions[r].node_ids);
    CHECK(got.regions[r].dynamic == want.regions[r].dynamic);
    CHECK(got.regions[r].symbols == want.regions[r].symbols);
    CHECK_MESSAGE(got.regions[r].compiled, got.regions[r].why_interpreted);
    CHECK(got.regions[r].active_from_call == 1);  // the first call runs the kernels
  }
  // The first calls already run kernels, at the warm-up's batches and at others (dynamic), and
  // give the interpreter's results.
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  for (int64_t batch : {5, 1, 9, 2}) {
    const Tensor x = random_f32({batch, 4}, static_cast<uint32_t>(20 + batch));
    check_tensors_close(s.run({x})[0], ref.run({x})[0]);
  }
  const Report after = s.report();
  CHECK(after.warmup_runs == 3);  // no call was a warm-up run
  int64_t kernel_calls = 0;
  for (const RegionReport& r : after.regions) kernel_calls += r.kernel_calls;
  CHECK(kernel_calls >= 4);
  CHECK(after.guard_misses == 0);
}

TEST_CASE(
    "Warm-up record: a damaged, foreign or unwanted record is ignored, the Session warms up") {
  const std::string record = recorded_mlp();
  const auto check_ignored = [&](Graph g, SessionOptions o, const std::string& why) {
    Session ref(g, SessionOptions{.interpret_only = true});
    Session s(std::move(g), o);
    CHECK_FALSE(s.planned());
    const Report r = s.report();
    CHECK(r.warmup_runs == 0);
    CAPTURE(r.warmup_record);
    CHECK(contains(r.warmup_record, "ignored: "));
    CHECK(contains(r.warmup_record, why));
    // It warms up as usual, and serves correctly.
    for (int i = 0; i < 4; ++i) {
      const Tensor x = random_f32({3, 4}, static_cast<uint32_t>(40 + i));
      check_tensors_close(s.run({x})[0], ref.run({x})[0]);
    }
    CHECK(s.planned());
  };
  SUBCASE("one character changed") {
    std::string bad = record;
    const size_t at = bad.find("\"last_run\":3");
    REQUIRE(at != std::string::npos);
    bad[at + 11] = '2';
    check_ignored(with_record(split_mlp(), bad), {}, "checksum");
  }
  SUBCASE("cut short") {
    check_ignored(with_record(split_mlp(), record.substr(0, record.size() / 2)), {}, "malformed");
  }
  SUBCASE("not JSON, or another format") {
    check_ignored(with_record(split_mlp(), "\x01\x02 not a record"), {}, "malformed");
    check_ignored(with_record(split_mlp(), "{\"format\":\"other\"}"), {}, "format");
  }
  SUBCASE("made for another graph: a constant changed") {
    Graph g = split_mlp();
    const ValueId b = g.find_value("b");
    REQUIRE(b != kNoValue);
    g.values[b].initializer = random_f32({3}, 99);
    check_ignored(with_record(std::move(g), record), {}, "another graph");
  }
  SUBCASE("made for another graph: a node renamed") {
    Graph g = split_mlp();
    g.nodes.back().name = "act2";
    check_ignored(with_record(std::move(g), record), {}, "another graph");
  }
  SUBCASE("not wanted") {
    check_ignored(with_record(split_mlp(), record), SessionOptions{.use_warmup_record = false},
                  "use_warmup_record");
  }
}

TEST_CASE("Warm-up record: a dynamic Reshape's shape operand is recorded as forms of the batch") {
  // x.view(batch, -1) with the shape given by the caller: the loaded Session's plan needs the
  // operand's elements from every warm-up run to guard them as [batch, -1]. (Made by Shape ->
  // Gather -> Concat in the region, the operand would need no record: the region computes it.)
  const auto graph = [] {
    GraphBuilder b("flatten_by_shape");
    const ValueId x = b.input("x", DType::f32, {Dim("batch"), 4, 3});
    const ValueId spec = b.input("spec", DType::i64, {2});
    b.output(b.relu(b.reshape(b.mul(x, b.scalar(2.0f)), spec)), "y");
    return b.build();
  };
  const auto inputs = [](int64_t batch) {
    return std::vector<Tensor>{random_f32({batch, 4, 3}, static_cast<uint32_t>(batch)),
                               Tensor::from<int64_t>({2}, {batch, -1})};
  };
  Session first(graph(), SessionOptions{.warmup_runs = 3, .min_region_ops = 1});
  for (int64_t batch : {2, 3, 5}) first.run(inputs(batch));
  REQUIRE(first.planned());
  const std::string record =
      first.warmup_record(node_names(first.graph()), value_names(first.graph()));
  const auto reshape_region = [](const Report& rep) -> const RegionReport* {
    for (const OpReport& o : rep.ops)
      if (o.op == OpKind::Reshape && o.region >= 0)
        return &rep.regions.at(static_cast<size_t>(o.region));
    return nullptr;
  };
  Session s(with_record(graph(), record), SessionOptions{.min_region_ops = 1});
  REQUIRE(s.planned());
  const Report planned = s.report();
  const RegionReport* r = reshape_region(planned);
  REQUIRE(r != nullptr);
  CHECK(r->dynamic);
  CHECK_MESSAGE(r->compiled, r->why_interpreted);
  REQUIRE(r->value_guarded.size() == 1);
  CHECK(contains(r->value_guarded[0], "= [batch,-1]"));
  Session ref(graph(), SessionOptions{.interpret_only = true});
  for (int64_t batch : {4, 1, 9})
    check_tensors_close(s.run(inputs(batch))[0], ref.run(inputs(batch))[0]);
  const Report served = s.report();
  const RegionReport* after = reshape_region(served);
  REQUIRE(after != nullptr);
  CHECK(after->kernel_calls == 3);
  CHECK(after->guard_misses == 0);
}

TEST_CASE("Warm-up record: names given at saving are those a graph must have to load it") {
  Session a(split_mlp(), unfolded({.warmup_runs = 2}));
  for (int i = 0; i < 2; ++i) a.run({random_f32({3, 4}, 5)});
  REQUIRE(a.planned());
  std::vector<std::string> nodes = node_names(a.graph()), values = value_names(a.graph());
  for (std::string& n : nodes) n = "n/" + n;
  for (std::string& v : values) v = "v/" + v;
  const std::string record = a.warmup_record(nodes, values);
  // The same graph under those names loads it; under its own names it is another graph.
  Graph renamed = split_mlp();
  for (size_t i = 0; i < renamed.nodes.size(); ++i) renamed.nodes[i].name = nodes[i];
  for (size_t v = 0; v < renamed.values.size(); ++v) renamed.values[v].name = values[v];
  CHECK(graph_fingerprint(renamed, node_names(renamed), value_names(renamed)) ==
        graph_fingerprint(a.graph(), nodes, values));
  Session s(with_record(std::move(renamed), record), unfolded({}));
  REQUIRE(s.planned());
  CHECK(s.report().warmup_record == "loaded");
  CHECK(s.report().regions.size() == a.report().regions.size());
  const Tensor in = random_f32({3, 4}, 6);
  check_tensors_close(s.run({in})[0], a.run({in})[0]);
  Session other(with_record(split_mlp(), record), unfolded({}));
  CHECK_FALSE(other.planned());
  CHECK(contains(other.report().warmup_record, "another graph"));
}

TEST_CASE("Warm-up record: none before the first warm-up run, none in interpret_only mode") {
  Session s(split_mlp(), unfolded({}));
  const Graph& g = s.graph();
  CHECK(contains(error_of([&] { (void)s.warmup_record(node_names(g), value_names(g)); }),
                 "before the Session's first warm-up run"));
  Session i(split_mlp(), SessionOptions{.interpret_only = true});
  CHECK(contains(error_of([&] { (void)i.warmup_record(node_names(g), value_names(g)); }),
                 "interpret_only"));
}

TEST_CASE("Warm-up record: one of fewer runs than the warm-up is where the warm-up goes on from") {
  // Batches 2, 2, 5 as recorded_mlp, split: the record holds the first two runs.
  Session first(split_mlp(), unfolded({.warmup_runs = 3}));
  for (int64_t batch : {2, 2}) first.run({random_f32({batch, 4}, 10)});
  REQUIRE_FALSE(first.planned());
  const std::string partial =
      first.warmup_record(node_names(first.graph()), value_names(first.graph()));
  Session s(with_record(split_mlp(), partial), unfolded({.warmup_runs = 3}));
  CHECK_FALSE(s.planned());
  Report r = s.report();
  CHECK(r.warmup_record == "loaded: 2 of 3 warm-up runs, warming up on");
  CHECK(r.warmup_runs == 2);
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  const Tensor x = random_f32({5, 4}, 10);
  check_tensors_close(s.run({x})[0], ref.run({x})[0]);
  REQUIRE(s.planned());  // after one more run, as the recorded Session would have
  Report want;
  (void)recorded_mlp(&want);
  r = s.report();
  CHECK(r.warmup_runs == 3);
  CHECK(r.symbols == want.symbols);
  REQUIRE(r.ops.size() == want.ops.size());
  for (size_t i = 0; i < r.ops.size(); ++i) {
    CAPTURE(r.ops[i].node);
    CHECK(r.ops[i].stable == want.ops[i].stable);
    CHECK(r.ops[i].changed_at_run == want.ops[i].changed_at_run);
    CHECK(r.ops[i].region == want.ops[i].region);
  }
  for (int64_t batch : {5, 1, 9}) {
    const Tensor y = random_f32({batch, 4}, static_cast<uint32_t>(40 + batch));
    check_tensors_close(s.run({y})[0], ref.run({y})[0]);
  }
}

}  // namespace test_warmup_record
