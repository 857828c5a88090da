#include "runtime/value_guards.h"

#include <algorithm>

#include "ops/op.h"

namespace sgraph {
namespace {

// The inputs of node `n` whose values its shape rule reads, at the planned shapes and the known
// values (constants, recorded values).
std::vector<bool> shape_value_inputs(const Graph& g, const Node& n,
                                     const std::vector<Shape>& shapes,
                                     const std::vector<Tensor>& values) {
  const size_t nin = n.inputs.size();
  std::vector<const Shape*> in(nin, nullptr);
  std::vector<const Tensor*> val(nin, nullptr);
  std::vector<DType> dtypes(nin, DType::undefined);
  for (size_t i = 0; i < nin; ++i) {
    const ValueId v = n.inputs[i];
    if (v == kNoValue) continue;
    in[i] = &shapes.at(v);
    dtypes[i] = g.values[v].dtype;
    if (g.values[v].initializer.defined())
      val[i] = &g.values[v].initializer;
    else if (static_cast<size_t>(v) < values.size() && values[v].defined())
      val[i] = &values[v];
  }
  std::vector<Shape> out(n.outputs.size());
  std::vector<bool> read(nin, false);
  ops::ShapeCtx c{n, in, val, dtypes, out, &read};
  try {
    ops::op_def(n.op).shapes(c);
  } catch (const ops::ValueUnknown&) {          // read is marked before the throw
  } catch (const Error&) {                      // the rule disagrees with the recorded values: the
    std::fill(read.begin(), read.end(), true);  // guard must then cover every input
  }
  return read;
}

}  // namespace

ValueGuards value_guards(const Graph& g, const Region& r, const std::vector<Shape>& shapes,
                         const std::vector<Tensor>& values) {
  ValueGuards result;
  std::vector<int32_t> producer(g.values.size(), -1);  // inside the region
  for (int32_t i : r.nodes)
    for (ValueId v : g.nodes[i].outputs) producer[v] = i;
  std::vector<ValueId> todo;
  for (int32_t i : r.nodes) {
    const Node& n = g.nodes[i];
    const std::vector<bool> read = shape_value_inputs(g, n, shapes, values);
    for (size_t k = 0; k < read.size(); ++k)
      if (read[k] && n.inputs[k] != kNoValue) {
        todo.push_back(n.inputs[k]);
        result.reads.emplace_back(i, k);
      }
  }
  std::vector<bool> seen(g.values.size(), false);
  while (!todo.empty()) {
    const ValueId v = todo.back();
    todo.pop_back();
    if (seen[v] || g.values[v].initializer.defined()) continue;  // constants: in the code
    seen[v] = true;
    if (producer[v] >= 0 && ops::op_def(g.nodes[producer[v]].op).value_of_shapes) {
      result.of_shapes = true;  // (made from shapes the region's guard fixes or binds)
      continue;
    }
    if (producer[v] >= 0) {  // made in the region: guard what it is computed from
      for (ValueId in : g.nodes[producer[v]].inputs)
        if (in != kNoValue) todo.push_back(in);
      continue;
    }
    const auto at = std::find(r.inputs.begin(), r.inputs.end(), v);
    SG_ASSERT(at != r.inputs.end()) << "value '" << g.values[v].name << "' is not a region input";
    if (static_cast<size_t>(v) >= values.size() || !values[v].defined()) {
      result.why_not = "its shapes depend on the values of '" + g.values[v].name +
                       "', which are too large to guard";
      return result;
    }
    result.guards.emplace_back(static_cast<size_t>(at - r.inputs.begin()), values[v]);
  }
  std::sort(result.guards.begin(), result.guards.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return result;
}

}  // namespace sgraph
