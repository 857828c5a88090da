// If(cond, outer...) {then_branch, else_branch}: runs one of two subgraphs. A branch reads outer
// values only through its graph inputs, which this node passes as inputs 1..n in the same order
// (the ONNX importer turns captured names into such inputs), so liveness and dependences stay
// explicit in the outer graph. Branch outputs become this node's outputs.
#include "ops/op.h"

namespace sgraph::ops {
namespace {

const Graph& branch(const Node& n, bool then) {
  return n.attrs.get_graph(then ? "then_branch" : "else_branch");
}

void types_if(TypeCtx& c) {
  c.expect_one_of(0, {DType::boolean});
  const Graph& t = branch(c.node, true);
  const Graph& e = branch(c.node, false);
  const size_t outer = c.in.size() - 1;
  for (const Graph* g : {&t, &e}) {
    SG_CHECK(g->outputs.size() == c.out.size())
        << "branch '" << g->name << "' has " << g->outputs.size() << " outputs, the node has "
        << c.out.size();
    SG_CHECK(g->inputs.size() == outer) << "branch '" << g->name << "' reads " << g->inputs.size()
                                        << " outer values, the node passes " << outer;
    for (size_t i = 0; i < outer; ++i)
      SG_CHECK(g->values[g->inputs[i]].dtype == c.in[i + 1])
          << "branch '" << g->name << "' input " << i << " is "
          << dtype_name(g->values[g->inputs[i]].dtype) << ", the node passes "
          << dtype_name(c.in[i + 1]);
  }
  for (size_t k = 0; k < c.out.size(); ++k) {
    const DType a = t.values[t.outputs[k]].dtype, b = e.values[e.outputs[k]].dtype;
    SG_CHECK(a == b) << "output " << k << " is " << dtype_name(a) << " in then_branch but "
                     << dtype_name(b) << " in else_branch";
    c.out[k] = a;
  }
}

// Output shapes are known before running only when both branches declare the same static ones.
void shapes_if(ShapeCtx& c) {
  const Graph& t = branch(c.node, true);
  const Graph& e = branch(c.node, false);
  for (size_t k = 0; k < c.out.size(); ++k) {
    const auto& a = t.values[t.outputs[k]].shape;
    const auto& b = e.values[e.outputs[k]].shape;
    if (!a || !b || *a != *b) throw ValueUnknown{};
    for (const Dim& d : *a) {
      if (!d.is_static()) throw ValueUnknown{};
      c.out[k].push_back(d.size);
    }
  }
}

void run_if(KernelCtx& c) {
  SG_CHECK(c.in[0].numel() == 1) << "condition must have one element, got shape "
                                 << shape_str(c.in[0].shape());
  const Graph& g = branch(c.node, c.in[0].data<bool>()[0]);
  SG_ASSERT(c.subgraphs) << "If runs without a subgraph runner";
  std::vector<Tensor> outs = c.subgraphs->run(c.node, g, c.in.subspan(1));
  for (size_t k = 0; k < outs.size(); ++k) c.out[k] = std::move(outs[k]);
}

}  // namespace

extern const OpDef kIf;
const OpDef kIf{"If", 1, 1024, 1, 1024, types_if, shapes_if, run_if, false, true};

}  // namespace sgraph::ops
