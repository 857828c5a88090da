// Session: warm-up, classification, planning and the report, end to end.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "onnx/backend_test.h"
#include "runtime/executable_graph.h"
#include "runtime/session_graphs.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("Session: variable batch marks batch-dependent ops changed, weight ops form a region") {
  // The method's first tier alone: changed ops are interpreted.
  Session s(split_mlp(), unfolded({.warmup_runs = 3, .dynamic = false}));
  CHECK_FALSE(s.planned());
  for (int64_t batch : {2, 2, 5}) s.run({random_f32({batch, 4}, 10)});
  REQUIRE(s.planned());
  const Report r = s.report();
  CHECK(r.warmup_runs == 3);
  for (const char* n : {"fc", "bias", "y"}) {
    CAPTURE(n);
    CHECK_FALSE(op_named(r, n).stable);
    CHECK(op_named(r, n).changed_at_run == 3);
    CHECK(op_named(r, n).reason == "changed");
  }
  CHECK(contains(op_named(r, "fc").change, "input 0 'x': [2,4] -> [5,4]"));
  CHECK(op_named(r, "w_t").stable);
  CHECK(op_named(r, "w_scaled").stable);
  REQUIRE(r.regions.size() == 1);
  CHECK(r.regions[0].nodes == std::vector<std::string>{"w_t", "w_scaled"});
  CHECK(r.regions[0].outputs == std::vector<std::string>{"w_scaled"});
  CHECK(r.regions[0].compiled);
  CHECK(op_named(r, "w_t").region == 0);
  // Runs after planning still give correct results (interpreted until the JIT lands).
  const Tensor x = random_f32({7, 4}, 11);
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  check_tensors_close(s.run({x})[0], ref.run({x})[0]);
  CHECK_FALSE(ref.planned());
}

TEST_CASE("Session: the same shapes every run leave every op stable, both regions compile") {
  Session s(split_mlp(), unfolded({.warmup_runs = 2}));
  s.run({random_f32({3, 4}, 1)});
  s.run({random_f32({3, 4}, 2)});
  const Report r = s.report();
  for (const OpReport& o : r.ops) CHECK(o.stable);
  // The ReduceLogSumExp splits the graph: {w_t, w_scaled} and {fc, bias, y}.
  REQUIRE(r.regions.size() == 2);
  CHECK(r.regions[0].nodes == std::vector<std::string>{"w_t", "w_scaled"});
  CHECK(r.regions[1].nodes == std::vector<std::string>{"fc", "bias", "y"});
  std::vector<std::string> inputs = r.regions[1].inputs;
  std::sort(inputs.begin(), inputs.end());
  CHECK(inputs == std::vector<std::string>{"b", "w_opaque", "x"});
  CHECK(r.regions[1].outputs == std::vector<std::string>{"y"});
  CHECK(r.steps == 3);  // two kernels and the ReduceLogSumExp
  for (const RegionReport& reg : r.regions) {
    CHECK_MESSAGE(reg.compiled, reg.why_interpreted);
    CHECK(reg.compiles == 1);
  }
  // Served through the kernels, the results match the interpreter.
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  for (uint32_t seed : {3, 4}) {
    const Tensor x = random_f32({3, 4}, seed);
    check_tensors_close(s.run({x})[0], ref.run({x})[0]);
  }
  CHECK(s.report().regions[1].kernel_calls == 2);
}

TEST_CASE("Session: guard misses fall back, then re-plan only the changed region") {
  Session s(split_mlp(), unfolded({.warmup_runs = 2, .max_guard_misses = 2}));
  for (int i = 0; i < 2; ++i) s.run({random_f32({3, 4}, 1)});
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  for (uint32_t seed : {5, 6, 7}) {  // batch 6: the {bias, y} region's guard fails
    const Tensor x = random_f32({6, 4}, seed);
    check_tensors_close(s.run({x})[0], ref.run({x})[0]);
  }
  const Report r = s.report();
  CHECK(r.replans == 1);
  // fc, bias and y changed while serving. The weight region was kept as is.
  for (const char* n : {"bias", "y", "fc"}) {
    CAPTURE(n);
    CHECK_FALSE(op_named(r, n).stable);
    CHECK(op_named(r, n).changed_at_run == 4);
    CHECK(contains(op_named(r, n).change, "[6,"));
  }
  // The second miss's inputs were observed like a warm-up run, so the batch is now a symbol:
  // fc, bias and y are a dynamic region (its kernel served the third call), the weight region
  // was kept as is.
  REQUIRE(r.regions.size() == 2);
  CHECK(r.regions[0].nodes == std::vector<std::string>{"w_t", "w_scaled"});
  CHECK(r.regions[0].compiles == 1);
  CHECK(r.regions[0].kernel_calls == 3);
  CHECK(r.regions[1].kernel_calls == 1);
  CHECK(r.regions[1].nodes == std::vector<std::string>{"fc", "bias", "y"});
  CHECK(r.regions[1].dynamic);
  CHECK(r.warmup_runs == 3);
  // Every batch now runs both kernels: no miss, no re-plan, nothing compiled.
  const int compilations = r.compilations;
  for (int64_t batch : {6, 3, 11, 1}) {
    const Tensor x = random_f32({batch, 4}, 40);
    check_tensors_close(s.run({x})[0], ref.run({x})[0]);
  }
  const Report after = s.report();
  CHECK(after.replans == 1);
  CHECK(after.compilations == compilations);
  CHECK(after.regions[1].kernel_calls == 5);
  CHECK(after.regions[1].guard_misses == 0);
}

TEST_CASE("Session: the encoder block with a changing sequence length") {
  const std::string dir = SGRAPH_SOURCE_DIR "/examples/models/tiny_encoder_block";
  const std::vector<std::string> sets = data_sets(dir);
  REQUIRE(sets.size() == 5);
  // Data sets 1 and 2 share batch 2; their sequence lengths are 8 and 17.
  Session s(load_onnx(dir + "/model.onnx"));
  for (int k : {1, 1, 2}) {
    const std::vector<Tensor> out = s.run(load_inputs(sets[k]));
    CHECK(compare_tensors(out[0], load_tensor_pb(sets[k] + "/output_0.pb"), Tolerance{}).ok);
  }
  const Report r = s.report();
  int changed = 0;
  for (const OpReport& o : r.ops) {
    if (o.stable) continue;
    ++changed;
    CHECK(o.changed_at_run == 3);
    CHECK(contains(o.change, "17"));
  }
  CHECK(changed == static_cast<int>(r.ops.size()));  // every op depends on the sequence
  CHECK(contains(r.to_text(), "0 stable, 54 changed;"));
  // The second tier: every region is dynamic (over the sequence length), none static.
  REQUIRE_FALSE(r.regions.empty());
  for (const RegionReport& reg : r.regions) CHECK(reg.dynamic);
}

TEST_CASE("Session: changed ops form a dynamic region, compiled once and hit for every batch") {
  Session s(split_mlp(), unfolded({.warmup_runs = 3, .threads = 1}));
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  for (int64_t batch : {2, 3, 5}) s.run({random_f32({batch, 4}, 10)});
  Report r = s.report();
  REQUIRE(r.regions.size() == 2);
  const RegionReport& weights = r.regions[0];
  const RegionReport& dyn = r.regions[1];
  CHECK_FALSE(weights.dynamic);
  CHECK(dyn.dynamic);
  CHECK(dyn.nodes == std::vector<std::string>{"fc", "bias", "y"});
  CHECK(dyn.symbols == std::vector<std::string>{"batch"});
  CHECK(dyn.compiled);
  CHECK(r.symbols == std::vector<std::string>{"batch = 2,3,5"});
  // fc (MatMul [batch,4] x [4,3]) changed too: the GEMM takes M at run time.
  CHECK(op_named(r, "fc").why_not_dynamic.empty());
  CHECK(op_named(r, "fc").symbolic_shapes == "x[batch,4], w_opaque[4,3] -> fc[batch,3]");
  CHECK(op_named(r, "y").symbolic_shapes == "bias[batch,3] -> y[batch,3]");
  const int compilations = r.compilations;
  for (int64_t batch : {7, 1, 33, 2, 1023, 7}) {
    CAPTURE(batch);
    const Tensor x = random_f32({batch, 4}, static_cast<uint32_t>(batch));
    check_tensors_close(s.run({x})[0], ref.run({x})[0]);
  }
  r = s.report();
  CHECK(r.compilations == compilations);  // no batch compiled anything
  CHECK(r.regions[1].kernel_calls == 6);
  CHECK(r.regions[1].guard_misses == 0);
  CHECK(r.regions[1].compiles == 1);
  CHECK(r.regions[1].dynamic_bytes >= 1023 * 3 * 4);  // grown to the largest batch
  CHECK(r.replans == 0);
  CHECK(contains(r.to_text(), "region 1 (dynamic: batch)"));
}

TEST_CASE(
    "Session: a dynamic region whose inputs give its symbol only divided binds the quotient") {
  // x [1, 4, w] -> MaxPool stride 2 -> [1, 4, w/2] -> Hardmax (interpreted) -> Relu, Add: the
  // second region's inputs name w only as w/2, from which w cannot be bound. Its dims are all w/2,
  // so w/2 is its symbol; with a dim of another form of w it is interpreted, not missed on every
  // call.
  for (const bool other_form : {false, true}) {
    CAPTURE(other_form);
    GraphBuilder b("divided");
    const ValueId x = b.input("x", DType::f32, {1, 4, Dim("w")});
    const ValueId p =
        b.max_pool(x, Attributes{{"kernel_shape", Ints{2}}, {"strides", Ints{2}}});  // [1,4,w/2]
    const ValueId c = b.hardmax(p);
    ValueId y = b.add(b.relu(c), b.scalar(0.5f));
    if (other_form)  // ([1, 4, w/2 - 1]: a dim of the form (w-2)/2)
      y = b.relu(b.slice(y, b.ints({1}), b.ints({INT64_MAX}), b.ints({2})));
    b.output(y, "y");
    const Graph g = b.build();
    Session s(g, SessionOptions{.warmup_runs = 3, .min_region_ops = 1});
    Session ref(g, SessionOptions{.interpret_only = true});
    for (int64_t w : {8, 12, 20, 10, 31, 7, 64}) {
      CAPTURE(w);
      const Tensor in = random_f32({1, 4, w}, static_cast<uint32_t>(w));
      check_tensors_close(s.run({in})[0], ref.run({in})[0]);
    }
    const Report r = s.report();
    const RegionReport* after = nullptr;  // the region of the Relu
    for (const RegionReport& reg : r.regions)
      if (std::find(reg.nodes.begin(), reg.nodes.end(), op_named(r, "relu_0").node) !=
          reg.nodes.end())
        after = &reg;
    REQUIRE(after != nullptr);
    CHECK(after->dynamic);
    CHECK(after->guard_misses == 0);
    if (!other_form) {
      CHECK_MESSAGE(after->compiled, after->why_interpreted);
      CHECK(after->symbols == std::vector<std::string>{"w/2"});
      CHECK(after->kernel_calls == 4);
    } else {
      CHECK_FALSE(after->compiled);
      CHECK(contains(after->why_interpreted, "only divided"));
    }
  }
}

TEST_CASE("Report: JSON and DOT carry the same decisions") {
  Session s(split_mlp(), unfolded({.warmup_runs = 2}));
  for (int64_t batch : {2, 5}) s.run({random_f32({batch, 4}, 3)});
  const Report r = s.report();
  const auto j = nlohmann::json::parse(r.to_json());
  CHECK(j["graph"] == "mlp");
  CHECK(j["planned"] == true);
  REQUIRE(j["ops"].size() == r.ops.size());
  for (const auto& o : j["ops"]) {
    if (o["node"] == "fc") {
      CHECK(o["stable"] == false);
      CHECK(o["changed_at_run"] == 2);
      CHECK(o["region"] == 1);  // changed: in the dynamic region
    }
    if (o["node"] == "w_t") CHECK(o["region"] == 0);
  }
  CHECK(j["regions"][0]["nodes"].size() == 2);
  const std::string dot = r.to_dot();
  CHECK(contains(dot, "subgraph cluster_0 {"));
  CHECK(contains(dot, "changed at run 2"));
  CHECK(contains(dot, "fillcolor=\"#f4a6a6\""));  // changed ops are marked
  CHECK(dot.back() == '\n');
}

TEST_CASE("Session: option errors and the report before planning") {
  CHECK(contains(error_of([] { Session(split_mlp(), SessionOptions{.warmup_runs = 0}); }),
                 "warmup_runs must be at least 1"));
  Session s(split_mlp(), unfolded({}));
  s.run({random_f32({1, 4}, 1)});
  const Report r = s.report();
  CHECK_FALSE(r.planned);
  CHECK(r.warmup_runs == 1);
  CHECK(r.regions.empty());
  CHECK(contains(r.to_text(), "(not planned yet)"));
}

TEST_CASE("Session: identical regions share one kernel (the kernel cache)") {
  // Two unconnected branches with the same structure and shapes but different (non-scalar)
  // biases: two regions, one kernel.
  auto twins = [] {
    GraphBuilder b("twins");
    ValueId x = b.input("x", DType::f32, {4, 8});
    ValueId y = b.input("y", DType::f32, {4, 8});
    ValueId p = b.relu(b.add(x, b.constant("bx", random_f32({8}, 1))));
    ValueId q = b.relu(b.add(y, b.constant("by", random_f32({8}, 2))));
    b.output(p, "p");
    b.output(q, "q");
    return b.build();
  };
  // One thread: a region's thread count (part of its code) comes from its measured time.
  Session s(twins(), SessionOptions{.warmup_runs = 1, .threads = 1});
  const std::vector<Tensor> in{random_f32({4, 8}, 3), random_f32({4, 8}, 4)};
  s.run(in);
  const Report r = s.report();
  REQUIRE(r.regions.size() == 2);
  // (Compiled at once, either may be the one compiling: test_compile_threads.cpp.)
  CHECK(r.regions[0].compiles + r.regions[1].compiles == 1);
  CHECK(r.regions[0].cache_hit != r.regions[1].cache_hit);
  CHECK(r.regions[0].compiled);
  CHECK(r.regions[1].compiled);
  // The shared kernel reads each region's own bias.
  Session ref(twins(), SessionOptions{.interpret_only = true});
  const std::vector<Tensor> got = s.run(in), want = ref.run(in);
  check_tensors_close(got[0], want[0]);
  check_tensors_close(got[1], want[1]);
  CHECK(s.report().kernel_calls == 2);
}

TEST_CASE("Session: a node the JIT refuses stays out of regions, with the JIT's reason") {
  // Add -> MatMul (i64: no GEMM) -> Mul -> Sub: the MatMul's op is compilable, this node is not,
  // so it splits the chain instead of making one region fall back as a whole.
  GraphBuilder b("ints");
  const ValueId x = b.input("x", DType::i64, {3, 3});
  const ValueId a = b.node(OpKind::Add, {x, x}, {}, 1, "add")[0];
  const ValueId neg = b.node(OpKind::Neg, {a}, {}, 1, "neg")[0];
  const ValueId m = b.node(OpKind::MatMul, {neg, x}, {}, 1, "mm")[0];
  const ValueId y = b.node(OpKind::Mul, {m, x}, {}, 1, "mul")[0];
  b.output(b.node(OpKind::Sub, {y, x}, {}, 1, "sub")[0], "out");
  const Graph g = b.build();
  Session s(g, SessionOptions{.warmup_runs = 1});
  Tensor in(DType::i64, {3, 3});
  for (int64_t i = 0; i < 9; ++i) in.data<int64_t>()[i] = i - 4;
  s.run({in});
  const Report r = s.report();
  CHECK(op_named(r, "mm").region == -1);
  CHECK(contains(op_named(r, "mm").reason, "not compilable"));
  CHECK(contains(op_named(r, "mm").reason, "contraction of i64"));
  REQUIRE(r.regions.size() == 2);
  for (const RegionReport& reg : r.regions) CHECK_MESSAGE(reg.compiled, reg.why_interpreted);
  Session ref(g, SessionOptions{.interpret_only = true});
  const Tensor got = s.run({in})[0], want = ref.run({in})[0];
  for (int64_t i = 0; i < 9; ++i) CHECK(got.data<int64_t>()[i] == want.data<int64_t>()[i]);
  CHECK(s.report().kernel_calls == 2);
}

TEST_CASE("Session: an occasional other shape falls back without losing the kernel") {
  // Batch 3 nine calls in ten, batch 5 the tenth (an epoch's smaller last batch): the region
  // misses its guard each tenth call and is interpreted then, but it is never re-planned, since
  // its kernel runs far more often than it misses.
  Session s(split_mlp(), unfolded({.warmup_runs = 2, .max_guard_misses = 2}));
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  for (int i = 0; i < 2; ++i) s.run({random_f32({3, 4}, 1)});
  for (uint32_t call = 0; call < 40; ++call) {
    const Tensor x = random_f32({call % 10 == 9 ? 5 : 3, 4}, 100 + call);
    check_tensors_close(s.run({x})[0], ref.run({x})[0]);
  }
  const Report r = s.report();
  CHECK(r.replans == 0);
  REQUIRE(r.regions.size() == 2);
  CHECK(r.regions[1].nodes == std::vector<std::string>{"fc", "bias", "y"});
  CHECK(r.regions[1].guard_misses == 4);
  CHECK(r.regions[1].kernel_calls == 36);
  CHECK(r.regions[1].compiles == 1);
  // Once misses are as frequent as hits, the changed ops are re-planned.
  for (uint32_t call = 0; call < 40; ++call) s.run({random_f32({5, 4}, 200 + call)});
  CHECK(s.report().replans == 1);
}

TEST_CASE("Session: traffic moving to another shape re-plans soon, however long the old one ran") {
  // 5,000 calls at batch 3, then batch 5 only: the totals would need 5,000 misses before misses
  // outnumber hits; the recent counts (halved every RegionStats::kRecentWindow calls) need about
  // one window. An epoch's occasional other batch still keeps the kernel (test above).
  Session s(split_mlp(), unfolded({.warmup_runs = 2, .max_guard_misses = 2}));
  for (int i = 0; i < 2; ++i) s.run({random_f32({3, 4}, 1)});
  const Tensor x3 = random_f32({3, 4}, 2);
  for (int call = 0; call < 5000; ++call) s.run({x3});
  REQUIRE(s.report().replans == 0);
  Session ref(split_mlp(), SessionOptions{.interpret_only = true});
  int calls = 0;
  while (s.report().replans == 0 && calls < 5000) {
    const Tensor x5 = random_f32({5, 4}, 100 + uint32_t(calls++));
    check_tensors_close(s.run({x5})[0], ref.run({x5})[0]);
  }
  CHECK(s.report().replans == 1);
  CHECK(calls <= 2 * RegionStats::kRecentWindow);
  CHECK(calls >= 2);
}

TEST_CASE("Session: merge_tiers makes a static region and the dynamic one next to it one kernel") {
  // y = relu(x * exp(tanh(c)) + x): the ops on c[4] are stable, those on x[batch, 4] changed.
  const auto graph = [] {
    GraphBuilder b("tiers");
    const ValueId x = b.input("x", DType::f32, {Dim("batch"), Dim("f")});
    const ValueId v = b.exp(b.tanh(b.input("c", DType::f32, {Dim("k")})));
    b.output(b.relu(b.add(b.mul(x, v), x)), "y");
    return b.build();
  };
  Session ref(graph(), SessionOptions{.interpret_only = true});
  for (bool merge : {false, true}) {
    CAPTURE(merge);
    SessionOptions o{.max_guard_misses = 100, .threads = 1};
    o.merge_tiers = merge;
    Session s(graph(), o);
    const Tensor c = random_f32({4}, 3);
    for (int64_t batch : {2, 3, 5}) s.run(std::vector<Tensor>{random_f32({batch, 4}, 1), c});
    Report r = s.report();
    REQUIRE(r.regions.size() == (merge ? 1u : 2u));
    const RegionReport& dyn = r.regions.back();
    CHECK(dyn.dynamic);
    CHECK(dyn.compiled);
    CHECK(dyn.stable_ops == (merge ? 2 : 0));
    CHECK(dyn.nodes.size() == (merge ? 5u : 3u));
    int calls = 0;
    for (int64_t batch : {1, 7, 64, 2}) {
      const std::vector<Tensor> in = {random_f32({batch, 4}, static_cast<uint32_t>(++calls)), c};
      check_tensors_close(s.run(in)[0], ref.run(in)[0]);
    }
    // c's length was stable: c[1] misses the merged region's guard (or the static one's and the
    // dynamic one's), x[3, 1] the dynamic part's static dim: interpreted, right.
    const std::vector<Tensor> other = {random_f32({3, 1}, 9), random_f32({4}, 8)};
    const std::vector<Tensor> bad = {random_f32({3, 4}, 9), random_f32({1}, 8)};
    check_tensors_close(s.run(bad)[0], ref.run(bad)[0]);
    check_tensors_close(s.run(other)[0], ref.run(other)[0]);
    r = s.report();
    CHECK(r.compilations == (merge ? 1 : 2));
    CHECK(r.regions.back().kernel_calls == 4);
    CHECK(r.guard_misses == (merge ? 2 : 3));
  }
}

TEST_CASE("Session: a dynamic region re-plans once on a dim warm-up held static, amid hits") {
  // x [batch, f] -> Tanh -> *2 -> Sigmoid: warm-up varies the batch only, serving then sends f = 6
  // once in four calls (the rest hits): misses fewer than hits still make f a symbol, once.
  const auto chain = [] {
    GraphBuilder b("chain");
    const ValueId x = b.input("x", DType::f32, {Dim("batch"), Dim("f")});
    b.output(b.sigmoid(b.mul(b.tanh(x), b.scalar(2.0f))), "y");
    return b.build();
  };
  Session s(chain(), SessionOptions{.warmup_runs = 3, .max_guard_misses = 2, .threads = 1});
  Session ref(chain(), SessionOptions{.interpret_only = true});
  for (int64_t batch : {2, 3, 5}) s.run({random_f32({batch, 4}, 1)});
  REQUIRE(s.report().regions.size() == 1);
  CHECK(s.report().regions[0].symbols == std::vector<std::string>{"batch"});
  int calls = 0;
  for (int round = 0; round < 3; ++round)
    for (const Shape& shape : {Shape{7, 4}, Shape{2, 4}, Shape{9, 4}, Shape{3, 6}}) {
      CAPTURE(shape_str(shape));
      const Tensor x = random_f32(shape, static_cast<uint32_t>(++calls));
      check_tensors_close(s.run({x})[0], ref.run({x})[0]);
    }
  const Report r = s.report();
  CHECK(r.replans == 1);
  REQUIRE(r.regions.size() == 1);
  CHECK(r.regions[0].symbols == std::vector<std::string>{"batch", "f"});
  CHECK(r.regions[0].guard_misses == 0);  // since the re-plan: every shape hit
  CHECK(r.regions[0].kernel_calls >= 4);
  CHECK(r.compilations == 2);  // the batch-dynamic kernel, then the batch- and f-dynamic one
}
