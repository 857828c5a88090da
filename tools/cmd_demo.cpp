// `sgraph demo [--iters N]`: runs the bundled example model and prints outputs and per-op times.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include "cli.h"
#include "sgraph/sgraph.h"

namespace sgraph::cli {

namespace {

// The bundled example: a 2-layer MLP classifier over a variable batch.
Graph example_model() {
  std::mt19937 rng(7);
  GraphBuilder b("example_mlp");
  ValueId x = b.input("x", DType::f32, {Dim("batch"), 64});
  ValueId w1 = b.constant("w1", random_tensor(DType::f32, {64, 128}, rng, 0.125f));
  ValueId b1 = b.constant("b1", random_tensor(DType::f32, {128}, rng, 0.1f));
  ValueId w2 = b.constant("w2", random_tensor(DType::f32, {128, 10}, rng, 0.09f));
  ValueId b2 = b.constant("b2", random_tensor(DType::f32, {10}, rng, 0.1f));
  ValueId h = b.relu(b.add(b.matmul(x, w1), b1));
  ValueId logits = b.add(b.matmul(h, w2), b2);
  b.output(b.softmax(logits, Attributes{{"axis", int64_t{-1}}}), "probs");
  return b.build();
}

}  // namespace

int cmd_demo(const Args& args) {
  if (!args.positional.empty()) throw UsageError("demo: takes no arguments besides --iters");
  const int iters = static_cast<int>(args.integer("--iters", 20, 1));
  Session session(example_model());
  std::cout << session.graph().to_string() << "\n";
  std::mt19937 rng(1);
  const int64_t batches[] = {8, 8, 8, 32};
  std::map<std::string, std::vector<int64_t>> times;  // node -> ns per run
  for (int it = 0; it < iters; ++it) {
    const int64_t batch = batches[it % 4];
    std::vector<Tensor> out = session.run({random_tensor(DType::f32, {batch, 64}, rng)});
    for (const OpTime& t : session.last_op_times()) times[t.node].push_back(t.ns);
    if (it < 2 || it == iters - 1)
      std::cout << "run " << it + 1 << ": x " << shape_str(Shape{batch, 64}) << " -> probs "
                << to_string(out[0], 10) << "\n";
  }
  std::cout << "\nper-op time (median over " << iters << " runs, interpreter):\n";
  std::printf("  %-14s %-10s %10s\n", "node", "op", "median us");
  for (const Node& n : session.graph().nodes) {
    auto& v = times[n.name];
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    std::printf("  %-14s %-10s %10.2f\n", n.name.c_str(), std::string(op_name(n.op)).c_str(),
                v.empty() ? 0.0 : v[v.size() / 2] / 1e3);
  }
  return 0;
}

}  // namespace sgraph::cli
