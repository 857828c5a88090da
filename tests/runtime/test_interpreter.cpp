// The interpreter: observers, release of intermediates, input checking, Session by name.
#include <algorithm>

#include "runtime/interpreter.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
struct Recorder : OpObserver {
  std::vector<std::string> names;
  std::vector<Shape> in0, out0;
  int64_t total_ns = 0;
  void on_op(const OpEvent& e) override {
    names.push_back(e.node.name);
    in0.push_back(e.inputs[0].shape());
    out0.push_back(e.outputs[0].shape());
    total_ns += e.elapsed_ns;
  }
};

Graph chain() {
  GraphBuilder b("chain");
  ValueId x = b.input("x", DType::f32, {Dim("n"), 2});
  ValueId y = b.input("y", DType::f32, {Dim("n"), 1});
  ValueId a = b.add(x, y);    // node 0
  ValueId e = b.exp(a);       // node 1
  ValueId m = b.mul(e, a);    // node 2: last use of a and e
  b.output(b.neg(m), "out");  // node 3
  return b.build();
}
}  // namespace

TEST_CASE("Interpreter: results and observer events per op") {
  Graph g = chain();
  Interpreter interp(g);
  Recorder rec;
  OpObserver* obs[] = {&rec};
  auto out = interp.run(
      std::vector<Tensor>{Tensor::from<float>({1, 2}, {0, 1}), Tensor::from<float>({1, 1}, {1})},
      obs);
  // a = [1, 2]; -exp(a) * a
  test::check_close(out[0], {1, 2}, {-2.718281828, -2 * 7.389056099});
  CHECK(rec.names == std::vector<std::string>{"add_0", "exp_0", "mul_0", "out"});
  CHECK(rec.in0[0] == Shape{1, 2});
  CHECK(rec.out0[3] == Shape{1, 2});
  CHECK(rec.total_ns > 0);
}

TEST_CASE("Interpreter: each intermediate is released after its last use") {
  Graph g = chain();
  Interpreter interp(g);
  const ValueId a = g.nodes[0].outputs[0], e = g.nodes[1].outputs[0], m = g.nodes[2].outputs[0];
  std::vector<ValueId> at0 = interp.released_after(0);  // the graph inputs' last use
  std::sort(at0.begin(), at0.end());
  CHECK(at0 == std::vector<ValueId>{g.inputs[0], g.inputs[1]});
  CHECK(interp.released_after(1).empty());
  std::vector<ValueId> at2 = interp.released_after(2);
  std::sort(at2.begin(), at2.end());
  CHECK(at2 == std::vector<ValueId>{a, e});
  CHECK(interp.released_after(3) == std::vector<ValueId>{m});  // graph output is kept
}

TEST_CASE("Interpreter: input errors name the input") {
  Graph g = chain();
  Interpreter interp(g);
  auto run = [&](std::vector<Tensor> in) { return error_of([&] { interp.run(in); }); };
  const Tensor ok_x = Tensor::zeros(DType::f32, {3, 2}), ok_y = Tensor::zeros(DType::f32, {3, 1});
  CHECK(contains(run({ok_x}), "takes 2 inputs, got 1"));
  CHECK(contains(run({Tensor::zeros(DType::f64, {3, 2}), ok_y}), "input 'x' must be f32, got f64"));
  CHECK(contains(run({Tensor::zeros(DType::f32, {3}), ok_y}),
                 "input 'x' must have shape [n,2], got [3] (rank 1)"));
  CHECK(contains(run({Tensor::zeros(DType::f32, {3, 5}), ok_y}), "got [3,5] (dimension 1)"));
  CHECK(contains(run({ok_x, Tensor::zeros(DType::f32, {4, 1})}),
                 "dimension 'n' is 3 in input 'x' but 4 in input 'y'"));
  CHECK(contains(run({ok_x, Tensor()}), "input 'y' is missing"));
  CHECK(run({ok_x, ok_y}).empty());
}

TEST_CASE("Session: named inputs and outputs, per-op times") {
  Session s(chain(), SessionOptions{.op_times = true});
  auto out = s.run(std::map<std::string, Tensor>{{"x", Tensor::from<float>({1, 2}, {0, 0})},
                                                 {"y", Tensor::from<float>({1, 1}, {0})}});
  REQUIRE(out.count("out") == 1);
  test::check_close(out["out"], {1, 2}, {0, 0});
  CHECK(s.last_op_times().size() == 4);
  CHECK(s.last_op_times()[1].op == OpKind::Exp);
  // Without op times (the default), a call collects none.
  Session quiet(chain());
  quiet.run(std::map<std::string, Tensor>{{"x", Tensor::from<float>({1, 2}, {0, 0})},
                                          {"y", Tensor::from<float>({1, 1}, {0})}});
  CHECK(quiet.last_op_times().empty());
  CHECK(contains(error_of([&] {
                   s.run(std::map<std::string, Tensor>{{"x", Tensor()}});
                 }),
                 "input 'y' is missing"));
  CHECK(contains(
      error_of([&] {
        s.run(std::map<std::string, Tensor>{{"x", Tensor()}, {"y", Tensor()}, {"z", Tensor()}});
      }),
      "has no input named 'z'"));
}

TEST_CASE("Session: a kernel error carries node and op, the session stays usable") {
  GraphBuilder b("div");
  ValueId x = b.input("x", DType::i32, {2});
  b.output(b.div(b.scalar<int32_t>(10), x), "q");
  Session s(b.build());
  const std::string e = error_of([&] { s.run({Tensor::from<int32_t>({2}, {1, 0})}); });
  CHECK(contains(e, "node 'q' (Div): integer division by zero"));
  test::check_close(s.run({Tensor::from<int32_t>({2}, {3, -5})})[0], {2}, {3, -2});
}
