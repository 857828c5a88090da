// Constant folding (see constant_folding.h).
#include "runtime/constant_folding.h"

#include <algorithm>
#include <exception>
#include <variant>
#include <vector>

#include "ops/op.h"
#include "runtime/interpreter.h"

namespace sgraph {
namespace {

bool holds_subgraph(const Node& n) {
  return std::any_of(n.attrs.begin(), n.attrs.end(), [](const auto& item) {
    return std::holds_alternative<std::shared_ptr<const Graph>>(item.second);
  });
}

int64_t bytes_of(DType t, const Shape& s) { return numel(s) * static_cast<int64_t>(dtype_size(t)); }

// g without the folded nodes, the folded outputs constants, and without the constants no node or
// graph output reads; value ids renumbered in their order.
Graph rebuilt(const Graph& g, const std::vector<bool>& folded, const std::vector<Tensor>& env) {
  std::vector<bool> read(g.values.size(), false), produced(g.values.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (folded[i]) continue;
    for (ValueId v : g.nodes[i].inputs)
      if (v != kNoValue) read[static_cast<size_t>(v)] = true;
    for (ValueId v : g.nodes[i].outputs) produced[static_cast<size_t>(v)] = true;
  }
  for (ValueId v : g.outputs) read[static_cast<size_t>(v)] = true;
  std::vector<bool> input(g.values.size(), false);
  for (ValueId v : g.inputs) input[static_cast<size_t>(v)] = true;

  Graph out;
  out.name = g.name;
  out.metadata = g.metadata;
  std::vector<ValueId> id(g.values.size(), kNoValue);
  for (size_t v = 0; v < g.values.size(); ++v) {
    ValueInfo info = g.values[v];
    const bool constant = !input[v] && !produced[v] && env[v].defined();
    if (!(input[v] || produced[v] || (constant && read[v]))) continue;
    if (constant && !info.initializer.defined()) {  // a folded output
      info.initializer = env[v];
      info.shape = to_dims(env[v].shape());
    }
    info.producer = -1;
    id[v] = static_cast<ValueId>(out.values.size());
    out.values.push_back(std::move(info));
  }
  for (ValueId v : g.inputs) out.inputs.push_back(id[static_cast<size_t>(v)]);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (folded[i]) continue;
    Node n = g.nodes[i];
    for (ValueId& v : n.inputs)
      if (v != kNoValue) v = id[static_cast<size_t>(v)];
    for (ValueId& v : n.outputs) v = id[static_cast<size_t>(v)];
    out.add_node(std::move(n));
  }
  for (ValueId v : g.outputs) out.outputs.push_back(id[static_cast<size_t>(v)]);
  return out;
}

}  // namespace

int fold_constants(Graph& g) {
  const size_t nv = g.values.size();
  std::vector<int> readers(nv, 0);  // node inputs reading each value, not yet folded
  for (const Node& n : g.nodes) {
    for (ValueId v : n.inputs)
      if (v != kNoValue) ++readers[static_cast<size_t>(v)];
  }
  std::vector<bool> graph_output(nv, false);
  for (ValueId v : g.outputs) graph_output[static_cast<size_t>(v)] = true;

  std::vector<Tensor> env = bind_constants(g);
  std::vector<bool> folded(g.nodes.size(), false);
  NodeRunner runner;
  std::vector<Shape> shapes;
  int count = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (ops::op_def(n.op).makes_outputs || holds_subgraph(n)) continue;
    bool constant = true, outputs_free = true;
    for (ValueId v : n.inputs) constant = constant && (v == kNoValue || env[v].defined());
    for (ValueId v : n.outputs) outputs_free = outputs_free && !graph_output[v];
    if (!constant || !outputs_free) continue;
    try {
      shapes = runner.output_shapes(g, static_cast<int32_t>(i), env);
    } catch (const std::exception&) {  // (sgraph::Error, or whatever an op's helpers throw)
      continue;                        // left to raise it when a call runs the node
    }
    // The bytes the fold adds, less those of the constants only this node reads (dropped).
    int64_t grows = 0;
    for (size_t k = 0; k < shapes.size(); ++k)
      grows += bytes_of(g.values[static_cast<size_t>(n.outputs[k])].dtype, shapes[k]);
    std::vector<ValueId> seen;
    for (ValueId v : n.inputs) {
      if (v == kNoValue || graph_output[v] || std::count(seen.begin(), seen.end(), v)) continue;
      seen.push_back(v);
      if (readers[v] == std::count(n.inputs.begin(), n.inputs.end(), v))
        grows -= static_cast<int64_t>(env[v].nbytes());
    }
    if (grows > kMaxFoldedBytes) continue;
    try {
      runner.run(g, static_cast<int32_t>(i), env);
    } catch (const std::exception&) {
      for (ValueId v : n.outputs) env[v] = Tensor();
      continue;  // left to raise its error when a call runs it
    }
    folded[i] = true;
    ++count;
    for (ValueId v : n.inputs)
      if (v != kNoValue) --readers[v];
  }
  if (count == 0) return 0;
  g = rebuilt(g, folded, env);
  g.infer_and_verify();
  return count;
}

}  // namespace sgraph
