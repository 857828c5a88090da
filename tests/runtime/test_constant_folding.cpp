// Constant folding when a Session is made (SessionOptions::fold_constants).
#include <climits>

#include "runtime/constant_folding.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// x[batch, 4, 10] -> Pad(x, pads) -> Relu -> y, the pads computed as PyTorch exports F.pad(x,
// (2, 3)): ConstantOfShape -> Concat -> Reshape -> Slice (reversed rows) -> Transpose -> Reshape
// -> Cast, all over constants: [0, 0, 2, 0, 0, 3].
Graph exported_pad() {
  GraphBuilder b("exported_pad");
  ValueId x = b.input("x", DType::f32, {Dim("batch"), 4, 10});
  ValueId zeros = b.node(OpKind::ConstantOfShape, {b.ints({4})},
                         {{"value", Tensor::from<int64_t>({1}, {0})}}, 1, "zeros")[0];
  ValueId cat =
      b.node(OpKind::Concat, {b.ints({2, 3}), zeros}, {{"axis", int64_t{0}}}, 1, "cat")[0];
  ValueId rows = b.node(OpKind::Reshape, {cat, b.ints({-1, 2})}, {}, 1, "rows")[0];
  ValueId rev =
      b.node(OpKind::Slice, {rows, b.ints({-1}), b.ints({INT64_MIN}), b.ints({0}), b.ints({-1})},
             {}, 1, "reversed")[0];
  ValueId tr = b.node(OpKind::Transpose, {rev}, {}, 1, "transposed")[0];
  ValueId flat = b.node(OpKind::Reshape, {tr, b.ints({-1})}, {}, 1, "flat")[0];
  ValueId pads = b.node(OpKind::Cast, {flat}, {{"to", int64_t{7}}}, 1, "pads")[0];
  ValueId padded = b.node(OpKind::Pad, {x, pads}, {}, 1, "pad")[0];
  b.output(b.node(OpKind::Relu, {padded}, {}, 1, "act")[0], "y");
  return b.build();
}

int nodes_named(const Graph& g, const std::string& name) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.name == name;
  return n;
}

}  // namespace

TEST_CASE("Constant folding: an exported F.pad's pads become a constant, and the Pad compiles") {
  Session s(exported_pad(), SessionOptions{.warmup_runs = 3});
  Session unfolded(exported_pad(), SessionOptions{.warmup_runs = 3, .fold_constants = false});
  Session ref(exported_pad(), SessionOptions{.interpret_only = true});
  CHECK(s.report().folded_ops == 7);
  CHECK(s.graph().nodes.size() == 2);
  CHECK(s.graph().find_value("zeros") == kNoValue);
  CHECK(unfolded.report().folded_ops == 0);
  CHECK(unfolded.graph().nodes.size() == 9);
  CHECK(ref.graph().nodes.size() == 9);  // interpret_only runs the graph as given
  for (int64_t batch : {2, 2, 2, 2, 3}) {
    const Tensor x = random_f32({batch, 4, 10}, static_cast<uint32_t>(batch + 20));
    const Tensor want = ref.run({x})[0];
    CHECK(want.shape() == Shape{batch, 4, 15});
    check_tensors_close(s.run({x})[0], want);
    check_tensors_close(unfolded.run({x})[0], want);
  }
  const Report r = s.report();
  REQUIRE(r.regions.size() == 1);
  CHECK(r.regions[0].nodes == std::vector<std::string>{"pad", "y"});
  CHECK(r.regions[0].compiled);
  CHECK(r.regions[0].kernel_calls >= 1);
  CHECK(contains(r.to_text(), "folded: 7 ops"));
  // Unfolded, the Pad reads a computed operand and stays out of the region its reader is in.
  const Report u = unfolded.report();
  CHECK(op_named(u, "pad").region == -1);
  CHECK(contains(op_named(u, "pad").reason, "its pads input is not a constant"));
}

TEST_CASE("Constant folding: graph outputs, failing kernels and growth are left alone") {
  SUBCASE("a node making a graph output stays a node") {
    GraphBuilder b("out");
    ValueId x = b.input("x", DType::f32, {2, 3});
    ValueId w = b.constant("w", random_f32({3, 2}, 1));
    ValueId wt = b.node(OpKind::Transpose, {w}, {}, 1, "w_t")[0];
    b.output(b.add(x, wt), "y");
    b.output(wt, "w_t_out");
    Session s(b.build());
    CHECK(s.report().folded_ops == 0);
    CHECK(nodes_named(s.graph(), "w_t_out") == 1);  // (the builder names it after its output)
  }
  SUBCASE("a node whose kernel raises keeps raising it when a call runs it") {
    GraphBuilder b("bad");
    ValueId x = b.input("x", DType::f32, {1});
    ValueId c = b.constant("c", random_f32({3}, 2));
    ValueId r = b.node(OpKind::Gather, {c, b.ints({5})}, {}, 1, "bad_gather")[0];  // out of range
    b.output(b.add(x, r), "y");
    const Graph g = b.build();
    Session s(g);
    Session ref(g, SessionOptions{.interpret_only = true});
    CHECK(s.report().folded_ops == 0);
    CHECK(nodes_named(s.graph(), "bad_gather") == 1);
    const Tensor in = random_f32({1}, 3);
    const std::string got = error_of([&] { s.run({in}); });
    CHECK(contains(got, "bad_gather"));
    CHECK(got == error_of([&] { ref.run({in}); }));
  }
  SUBCASE("a large value is not made from a small one; a weight's Transpose replaces it") {
    GraphBuilder b("sizes");
    ValueId x = b.input("x", DType::f32, {128, 256});
    ValueId big = b.node(OpKind::ConstantOfShape, {b.ints({128, 256})},
                         {{"value", Tensor::from<float>({1}, {1.5f})}}, 1, "big")[0];
    ValueId w = b.constant("w", random_f32({256, 128}, 4));  // 128 KiB, read once
    ValueId wt = b.node(OpKind::Transpose, {w}, {}, 1, "w_t")[0];
    ValueId v = b.constant("v", random_f32({256, 128}, 5));  // read twice
    ValueId vt = b.node(OpKind::Transpose, {v}, {}, 1, "v_t")[0];
    ValueId sum = b.add(b.add(b.add(x, big), wt), vt);
    b.output(b.add(sum, b.node(OpKind::ReduceSum, {v}, {}, 1, "v_sum")[0]), "y");
    const Graph g = b.build();
    Session s(g);
    Session ref(g, SessionOptions{.interpret_only = true});
    const Graph& f = s.graph();
    CHECK(nodes_named(f, "big") == 1);  // 128 KiB from nothing
    CHECK(nodes_named(f, "w_t") == 0);  // in the weight's place
    CHECK(f.find_value("w") == kNoValue);
    CHECK(nodes_named(f, "v_t") == 1);    // beside v, which another node reads
    CHECK(nodes_named(f, "v_sum") == 0);  // 512 bytes
    CHECK(s.report().folded_ops == 2);
    const Tensor in = random_f32({128, 256}, 6);
    check_tensors_close(s.run({in})[0], ref.run({in})[0]);
  }
}

TEST_CASE("Constant folding: a node of several outputs, and folding again finds nothing") {
  GraphBuilder b("split");
  ValueId x = b.input("x", DType::f32, {3});
  ValueId c = b.constant("c", Tensor::from<float>({6}, {1, 2, 3, 4, 5, 6}));
  std::vector<ValueId> parts = b.node(OpKind::Split, {c, b.ints({3, 3})}, {}, 2, "halves");
  b.output(b.mul(b.add(x, parts[0]), parts[1]), "y");
  const Graph g = b.build();
  Graph folded = g;
  CHECK(fold_constants(folded) == 1);
  CHECK(folded.nodes.size() == 2);
  const ValueId first = folded.find_value(g.values[parts[0]].name);
  REQUIRE(first != kNoValue);
  CHECK(folded.is_constant(first));
  check_close(folded.value(first).initializer, {3}, {1, 2, 3});
  const Tensor in = Tensor::from<float>({3}, {1, 1, 1});
  check_close(Session(folded, SessionOptions{.interpret_only = true}).run({in})[0], {3},
              {8, 15, 24});
  // Folding again finds nothing: a planned model written from the folded graph reads back the same.
  Graph again = folded;
  CHECK(fold_constants(again) == 0);
  CHECK(again.to_string() == folded.to_string());
}
