// If branches served by Sessions of their own: warmed up, planned and compiled like a top-level
// graph, checked against the interpreter; reports and per-op times cover them.
#include <nlohmann/json.hpp>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// y = If(c, x) with then: Exp(Neg(x * 2)) + 1, else: Tanh(x - 3) * 0.5, inputs of symbolic
// length; the branches are chains the JIT compiles into one region each.
Graph if_model() {
  auto branch = [](bool then) {
    GraphBuilder bb(then ? "pos" : "neg");
    ValueId v = bb.input("v", DType::f32, {Dim("n")});
    ValueId r = then ? bb.add(bb.exp(bb.neg(bb.mul(v, bb.scalar(2.0f)))), bb.scalar(1.0f))
                     : bb.mul(bb.tanh(bb.sub(v, bb.scalar(3.0f))), bb.scalar(0.5f));
    bb.output(r, "out");
    return std::make_shared<const Graph>(bb.build());
  };
  GraphBuilder b("picker");
  ValueId x = b.input("x", DType::f32, {Dim("n")});
  ValueId c = b.input("c", DType::boolean, {});
  ValueId f = b.node(OpKind::If, {c, b.relu(x)},
                     Attributes{{"then_branch", branch(true)}, {"else_branch", branch(false)}}, 1,
                     "pick")[0];
  b.output(b.sqrt(f), "y");
  return b.build();
}

std::vector<Tensor> args(const Tensor& x, bool c) { return {x, Tensor::from<bool>({}, {c})}; }

const Report* subgraph(const Report& r, const std::string& label) {
  for (const Report& s : r.subgraphs)
    if (s.graph == label) return &s;
  return nullptr;
}

}  // namespace

TEST_CASE("Session: an If branch gets a Session of its own and is compiled after its warm-up") {
  Session s(if_model(), SessionOptions{.warmup_runs = 2});
  Session ref(if_model(), SessionOptions{.interpret_only = true});
  for (int run = 0; run < 6; ++run) {
    CAPTURE(run);
    const Tensor x = random_f32({64}, 10 + run);
    check_tensors_close(s.run(args(x, true))[0], ref.run(args(x, true))[0]);
  }
  Report r = s.report();
  REQUIRE(r.subgraphs.size() == 1);  // the else branch never ran: no Session for it
  const Report* then = subgraph(r, "pick/then_branch");
  REQUIRE(then != nullptr);
  CHECK(then->planned);
  CHECK(then->warmup_runs == 2);
  REQUIRE(then->regions.size() == 1);
  CHECK(then->regions[0].nodes.size() == 4);
  CHECK(then->regions[0].compiled);
  CHECK(then->regions[0].kernel_calls == 4);  // runs 3..6
  CHECK(op_named(r, "pick").reason == "control flow or subgraph");

  // The other branch warms up on its own; the first keeps its kernel.
  for (int run = 0; run < 3; ++run) {
    const Tensor x = random_f32({64}, 30 + run);
    check_tensors_close(s.run(args(x, false))[0], ref.run(args(x, false))[0]);
  }
  r = s.report();
  REQUIRE(r.subgraphs.size() == 2);
  const Report* other = subgraph(r, "pick/else_branch");
  REQUIRE(other != nullptr);
  CHECK(other->planned);
  REQUIRE(other->regions.size() == 1);
  CHECK(other->regions[0].kernel_calls == 1);
  CHECK(subgraph(r, "pick/then_branch")->regions[0].kernel_calls == 4);
}

TEST_CASE("Session: a branch whose shapes change is re-planned inside its own Session") {
  Session s(if_model(), SessionOptions{.warmup_runs = 3});
  Session ref(if_model(), SessionOptions{.interpret_only = true});
  for (int64_t n : {16, 16, 40, 16, 40, 7}) {
    CAPTURE(n);
    const Tensor x = random_f32({n}, static_cast<uint32_t>(n));
    check_tensors_close(s.run(args(x, true))[0], ref.run(args(x, true))[0]);
  }
  const Report r = s.report();
  const Report* then = subgraph(r, "pick/then_branch");
  REQUIRE(then != nullptr);
  for (const OpReport& o : then->ops) {
    CAPTURE(o.node);
    CHECK_FALSE(o.stable);
    CHECK(o.changed_at_run == 3);
    CHECK(o.region == 0);
  }
  // Its changed ops are one dynamic region, serving the later lengths without a miss.
  REQUIRE(then->regions.size() == 1);
  CHECK(then->regions[0].dynamic);
  CHECK(then->regions[0].kernel_calls == 3);
  CHECK(then->regions[0].guard_misses == 0);
  // The parent's ops changed too, but the If's report lists its own subgraph.
  CHECK_FALSE(op_named(r, "pick").stable);
}

TEST_CASE("Session: per-op times and the JSON report include the branches") {
  Session s(if_model(), SessionOptions{.interpret_only = true});
  s.run(args(random_f32({8}, 1), false));
  bool seen_branch_op = false, seen_if = false;
  for (const OpTime& t : s.last_op_times()) {
    seen_branch_op =
        seen_branch_op || (t.node.rfind("pick/else_branch/", 0) == 0 && t.op == OpKind::Tanh);
    if (t.node == "pick") {
      seen_if = true;
      CHECK(seen_branch_op);  // listed after the ops its branch ran
      CHECK(t.ns >= 0);
    }
  }
  CHECK(seen_if);
  const auto j = nlohmann::json::parse(s.report().to_json());
  REQUIRE(j["subgraphs"].size() == 1);
  CHECK(j["subgraphs"][0]["graph"] == "pick/else_branch");
  CHECK(j["subgraphs"][0]["mode"] == "interpret");
  CHECK(j["subgraphs"][0]["ops"].size() == 3);
  CHECK(contains(s.report().to_text(), "subgraph graph pick/else_branch: 3 ops"));
}

TEST_CASE("Session: an error inside a branch names the If node and the branch's node") {
  auto bad = [] {
    GraphBuilder bb("bad");
    ValueId v = bb.input("v", DType::f32, {Dim("n")});
    bb.output(bb.relu(bb.node(OpKind::Reshape, {v, bb.ints({3})}, {}, 1, "to3")[0]), "out");
    return std::make_shared<const Graph>(bb.build());
  };
  GraphBuilder b("picker");
  ValueId x = b.input("x", DType::f32, {Dim("n")});
  ValueId c = b.input("c", DType::boolean, {});
  b.output(b.node(OpKind::If, {c, x}, Attributes{{"then_branch", bad()}, {"else_branch", bad()}}, 1,
                  "pick")[0]);
  Session s(b.build());
  const std::string e = error_of([&] { s.run(args(random_f32({4}, 1), true)); });
  CAPTURE(e);
  CHECK(contains(e,
                 "node 'pick' (If): in subgraph 'pick/then_branch': node 'to3' (Reshape): "
                 "cannot reshape [4]"));
}
