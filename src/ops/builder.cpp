#include <algorithm>
#include <cctype>

#include "ops/infer.h"
#include "sgraph/graph.h"

namespace sgraph {

GraphBuilder::GraphBuilder(std::string name) { graph_.name = std::move(name); }

GraphBuilder::GraphBuilder(Graph g) : graph_(std::move(g)) {
  for (const ValueInfo& v : graph_.values) names_.insert(v.name);
}

void GraphBuilder::claim(const std::string& name) {
  SG_CHECK(names_.insert(name).second) << "a value named '" << name << "' exists already";
}

ValueId GraphBuilder::input(std::string name, DType dtype, DimList shape) {
  SG_CHECK(!name.empty()) << "graph inputs need a name";
  claim(name);
  const ValueId v = graph_.add_value(std::move(name), dtype, std::move(shape));
  graph_.inputs.push_back(v);
  return v;
}

ValueId GraphBuilder::constant(std::string name, Tensor value) {
  bool generated = false;
  while (name.empty() || (generated && names_.count(name))) {
    name = prefix_ + "const_" + std::to_string(name_counts_[prefix_ + "const"]++);
    generated = true;
  }
  claim(name);
  return graph_.add_constant(std::move(name), std::move(value));
}

void GraphBuilder::output(ValueId v, std::string name) {
  SG_CHECK(v >= 0 && v < static_cast<ValueId>(graph_.values.size()))
      << "output(): value id " << v << " does not exist";
  if (!name.empty() && graph_.values[v].name != name) {
    SG_CHECK(!names_.count(name)) << "a value named '" << name << "' exists already";
    if (graph_.values[v].producer >= 0 &&
        std::find(graph_.outputs.begin(), graph_.outputs.end(), v) == graph_.outputs.end()) {
      // Rename the value, and its node when that still has the generated name.
      Node& producer = graph_.nodes[graph_.values[v].producer];
      if (producer.outputs.size() == 1 && producer.name == graph_.values[v].name)
        producer.name = name;
      names_.erase(graph_.values[v].name);
      claim(name);
      graph_.values[v].name = std::move(name);
    } else {  // an input, constant or already-named output: give it a second name
      v = node(OpKind::Identity, {v}, {}, 1, std::move(name)).front();
    }
  }
  graph_.outputs.push_back(v);
}

std::vector<ValueId> GraphBuilder::node(OpKind op, std::vector<ValueId> inputs, Attributes attrs,
                                        int num_outputs, std::string name) {
  std::string base(op_name(op));
  for (char& c : base) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.empty()) {
    do  // a generated name skips the names taken (a continued graph has its own)
      name = prefix_ + base + "_" + std::to_string(name_counts_[prefix_ + base]++);
    while (names_.count(name));
  }
  Node n{op, name, std::move(inputs), {}, std::move(attrs)};
  for (int i = 0; i < num_outputs; ++i) {
    std::string vname = num_outputs == 1 ? name : name + ":" + std::to_string(i);
    if (names_.count(vname)) {
      for (ValueId made : n.outputs) names_.erase(graph_.values[made].name);
      graph_.values.resize(graph_.values.size() - n.outputs.size());
      SG_FAIL() << "a value named '" << vname << "' exists already";
    }
    names_.insert(vname);
    n.outputs.push_back(graph_.add_value(std::move(vname)));
  }
  std::vector<ValueId> outs = n.outputs;
  const int32_t index = graph_.add_node(std::move(n));
  auto rollback = [&] {  // leave the builder as it was before the failed call
    for (ValueId made : outs) names_.erase(graph_.values[made].name);
    graph_.nodes.pop_back();
    graph_.values.resize(graph_.values.size() - outs.size());
  };
  const Node& added = graph_.nodes[index];
  try {
    check_arity(added);
    for (size_t i = 0; i < added.inputs.size(); ++i) {
      const ValueId v = added.inputs[i];
      SG_CHECK(v == kNoValue || (v >= 0 && v < static_cast<ValueId>(graph_.values.size()) &&
                                 graph_.values[v].producer < index))
          << "input " << i << " (id " << v << ") is not a value built before this node";
    }
  } catch (Error& e) {
    e.at_node(added.name, std::string(op_name(op)));
    rollback();
    throw;
  }
  try {
    infer_node(graph_, index);  // type-check now, so the error points at this call
  } catch (...) {
    rollback();
    throw;
  }
  return outs;
}

Graph GraphBuilder::build() {
  graph_.infer_and_verify();
  Graph g = std::move(graph_);
  graph_ = Graph{};
  name_counts_.clear();
  names_.clear();
  return g;
}

}  // namespace sgraph
