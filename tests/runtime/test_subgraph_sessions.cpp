// If branches served by Sessions of their own: warmed up, planned and compiled like a top-level
// graph, checked against the interpreter; reports and per-op times cover them.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace test_subgraph_sessions {  // this file's own names (the tests build as unity sources)

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
  Session s(if_model(), SessionOptions{.interpret_only = true, .op_times = true});
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

TEST_CASE("Session: an outer constant a branch reads is a constant of the branch's Session") {
  // y = If(c, x, W) with then: Relu(MatMul(x, W) + 0.5), else: Relu(x); W a constant of the
  // outer graph. The branch's Session holds W as a constant (its kernel multiplies by W packed
  // once, as a top-level graph's would: silero_vad_legacy's convs all sit in branches), and takes
  // only x.
  const Tensor w = random_f32({64, 64}, 3);
  auto branch = [](bool then) {
    GraphBuilder bb(then ? "mm" : "pass");
    ValueId v = bb.input("v", DType::f32, {4, 64});
    ValueId m = bb.input("m", DType::f32, {64, 64});
    bb.output(then ? bb.relu(bb.add(bb.matmul(v, m), bb.scalar(0.5f))) : bb.relu(v), "out");
    return std::make_shared<const Graph>(bb.build());
  };
  GraphBuilder b("outer");
  ValueId x = b.input("x", DType::f32, {4, 64});
  ValueId c = b.input("c", DType::boolean, {});
  ValueId f = b.node(OpKind::If, {c, b.relu(x), b.constant("w", w)},
                     Attributes{{"then_branch", branch(true)}, {"else_branch", branch(false)}}, 1,
                     "pick")[0];
  b.output(f, "y");
  const Graph g = b.build();
  TempDir ir;
  std::filesystem::create_directories(ir.path);
  setenv("SGRAPH_DUMP_IR", ir.path.c_str(), 1);
  SessionOptions o{.warmup_runs = 2, .runtime = Runtime::create()};
  o.cache_dir = "";
  Session s(g, o);
  Session ref(g, SessionOptions{.interpret_only = true});
  for (int run = 0; run < 6; ++run) {
    const Tensor in = random_f32({4, 64}, 20 + run);
    check_tensors_close(s.run(args(in, run != 5))[0], ref.run(args(in, run != 5))[0]);
  }
  unsetenv("SGRAPH_DUMP_IR");  // (read when the Runtime makes its JIT, at the first compile)
  const Report r = s.report();
  const Report* then = subgraph(r, "y/then_branch");
  REQUIRE(then != nullptr);
  REQUIRE(then->regions.size() == 1);
  CHECK(then->regions[0].compiled);
  std::string emitted;
  for (const auto& f : std::filesystem::directory_iterator(ir.path)) {
    std::ifstream in(f.path());
    emitted += std::string(std::istreambuf_iterator<char>(in), {});
  }
  CHECK(contains(emitted, "@sgraph_gemm_const_b_f32"));  // W packed once: a constant
  CHECK(!contains(emitted, "@sgraph_gemm_f32"));
}

TEST_CASE("Session: a branch returning an outer constant, or computing only from constants") {
  // then: W itself; else: Neg(W) + 1. Both branches' Sessions take no input at all.
  const Tensor w = random_f32({3, 5}, 4);
  auto branch = [](bool then) {
    GraphBuilder bb(then ? "same" : "neg");
    ValueId m = bb.input("m", DType::f32, {3, 5});
    bb.output(then ? m : bb.add(bb.neg(m), bb.scalar(1.0f)), "out");
    return std::make_shared<const Graph>(bb.build());
  };
  GraphBuilder b("outer");
  ValueId c = b.input("c", DType::boolean, {});
  ValueId f =
      b.node(OpKind::If, {c, b.constant("w", w)},
             Attributes{{"then_branch", branch(true)}, {"else_branch", branch(false)}}, 1)[0];
  b.output(b.mul(f, b.scalar(2.0f)), "y");
  const Graph g = b.build();
  Session s(g, SessionOptions{.warmup_runs = 1});
  Session ref(g, SessionOptions{.interpret_only = true});
  for (int run = 0; run < 6; ++run) {
    const std::vector<Tensor> in = {Tensor::from<bool>({}, {run % 3 != 0})};
    check_tensors_close(s.run(in)[0], ref.run(in)[0]);
  }
  std::vector<double> want(15);
  for (size_t i = 0; i < want.size(); ++i) want[i] = 2 * w.data<float>()[i];
  check_close(s.run({Tensor::from<bool>({}, {true})})[0], {3, 5}, want);
}

TEST_CASE("Session: op times are collected only while asked for, branches with their parent") {
  Session s(if_model(), SessionOptions{.warmup_runs = 10});
  const auto branch_ops = [&] {
    int n = 0;
    for (const OpTime& t : s.last_op_times()) n += t.node.rfind("pick/then_branch/", 0) == 0;
    return n;
  };
  s.run(args(random_f32({8}, 1), true));
  CHECK(s.last_op_times().empty());  // off by default
  CHECK_FALSE(s.op_times());
  s.set_op_times(true);
  CHECK(s.op_times());
  CHECK_FALSE(s.options().op_times);  // the options it was made with
  s.run(args(random_f32({8}, 2), true));
  // The branch's Session (made without op times) collects them for its parent's call.
  CHECK(branch_ops() == 4);  // Mul, Neg, Exp, Add
  const size_t listed = s.last_op_times().size();
  CHECK(listed == 4 + 3);  // and the parent's Relu, If, Sqrt
  s.set_op_times(false);
  CHECK_FALSE(s.op_times());
  s.run(args(random_f32({8}, 3), false));
  CHECK(s.last_op_times().size() == listed);  // still those of the last call that collected
  CHECK(branch_ops() == 4);
}

}  // namespace test_subgraph_sessions
