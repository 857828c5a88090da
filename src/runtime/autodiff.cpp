// Reverse-mode differentiation (append_gradients, sgraph/train.h): walks the nodes between the
// differentiated values and the loss from the last to the first, calls each op's gradient rule
// (OpDef::grad, in the op's own file; see src/ops/grad.h) with the gradients flowing into its
// outputs, and sums the gradients of a value read by several nodes.
#include <string>

#include "ops/grad.h"
#include "ops/op.h"
#include "sgraph/train.h"

namespace sgraph {

namespace {

// The sum of a value's gradient contributions, kNoValue when there are none.
ValueId total(GraphBuilder& b, const std::vector<ValueId>& parts) {
  if (parts.empty()) return kNoValue;
  ValueId sum = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) sum = b.add(sum, parts[i]);
  return sum;
}

// A rule's result must have its input's dtype and, where both are known, its dims.
void check_gradient(const Graph& g, const Node& n, size_t i, ValueId grad) {
  const ValueInfo &x = g.values[n.inputs[i]], &d = g.values[grad];
  bool ok = x.dtype == d.dtype;
  if (ok && x.shape && d.shape) {
    ok = x.shape->size() == d.shape->size();
    for (size_t k = 0; ok && k < x.shape->size(); ++k) {
      const Dim &a = (*x.shape)[k], &c = (*d.shape)[k];
      ok = !a.is_static() || !c.is_static() || a.size == c.size;
    }
  }
  SG_ASSERT(ok) << "the gradient rule of " << op_name(n.op) << " gave input " << i << " ("
                << dtype_name(x.dtype) << (x.shape ? dims_str(*x.shape) : "") << ") a gradient "
                << dtype_name(d.dtype) << (d.shape ? dims_str(*d.shape) : "");
}

Tensor ones(DType t, const Shape& shape) {
  Tensor one(t, shape);
  ops::visit_float(t, [&]<class T>() {
    for (int64_t i = 0; i < one.numel(); ++i) one.data<T>()[i] = T(1);
  });
  return one;
}

}  // namespace

std::vector<ValueId> append_gradients(GraphBuilder& b, ValueId loss,
                                      const std::vector<ValueId>& wrt) {
  const Graph& g = b.graph();  // grows as rules append ops: no references into it are kept
  const auto n_values = static_cast<ValueId>(g.values.size());
  const size_t n_nodes = g.nodes.size();
  SG_CHECK(loss >= 0 && loss < n_values) << "loss: value id " << loss << " does not exist";
  const std::string loss_name = g.values[loss].name;
  SG_CHECK(is_float(g.values[loss].dtype))
      << "loss '" << loss_name << "' must be a float value, not "
      << dtype_name(g.values[loss].dtype);
  std::optional<Shape> loss_shape;
  if (const auto& s = g.values[loss].shape) {
    loss_shape.emplace();
    for (const Dim& d : *s)
      if (d.is_static()) loss_shape->push_back(d.size);
    if (loss_shape->size() != s->size()) loss_shape.reset();
  }
  SG_CHECK(loss_shape && numel(*loss_shape) == 1)
      << "loss '" << loss_name << "' must have one element, but its shape is "
      << (g.values[loss].shape ? dims_str(*g.values[loss].shape) : "unknown");

  // Which values depend on `wrt`; gradients flow back from the loss only to those.
  std::vector<bool> from_wrt(n_values, false);
  for (ValueId v : wrt) {
    SG_CHECK(v >= 0 && v < n_values) << "value id " << v << " does not exist";
    SG_CHECK(is_float(g.values[v].dtype))
        << "cannot differentiate with respect to '" << g.values[v].name << "': it is "
        << dtype_name(g.values[v].dtype) << ", not float";
    from_wrt[v] = true;
  }
  for (const Node& n : g.nodes) {
    bool any = false;
    for (ValueId v : n.inputs) any = any || (v != kNoValue && from_wrt[v]);
    for (ValueId v : n.outputs) from_wrt[v] = from_wrt[v] || any;
  }

  // Per value: its gradient contributions so far. A node is visited after every node reading its
  // outputs, so its outputs' gradients are complete; one without any is not on the loss's path.
  std::vector<std::vector<ValueId>> parts(n_values);
  parts[loss].push_back(b.constant("", ones(g.values[loss].dtype, *loss_shape)));
  for (size_t i = n_nodes; i-- > 0;) {
    const Node node = g.nodes[i];  // a copy: rules append to g.nodes
    bool flows = false;
    for (ValueId v : node.outputs) flows = flows || !parts[v].empty();
    std::vector<bool> wanted(node.inputs.size(), false);
    bool any_wanted = false;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId v = node.inputs[k];
      wanted[k] = v != kNoValue && from_wrt[v] && is_float(g.values[v].dtype);
      any_wanted = any_wanted || wanted[k];
    }
    if (!flows || !any_wanted) continue;
    const ops::OpDef& def = ops::op_def(node.op);
    if (def.grad == nullptr) {
      Error e("cannot differentiate: " + std::string(op_name(node.op)) +
              " has no gradient rule (it lies between the parameters and loss '" + loss_name +
              "')");
      e.at_node(node.name, std::string(op_name(node.op)));
      throw e;
    }
    b.name_prefix(node.name + "/grad/");
    std::vector<ValueId> douts, dins(node.inputs.size(), kNoValue);
    for (ValueId v : node.outputs) douts.push_back(total(b, parts[v]));
    try {
      ops::GradCtx c{b, node, douts, wanted, dins};
      def.grad(c);
    } catch (Error& e) {
      b.name_prefix("");
      e.at_node(node.name, std::string(op_name(node.op)));
      throw;
    }
    b.name_prefix("");
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (!wanted[k] || dins[k] == kNoValue) continue;
      check_gradient(g, node, k, dins[k]);
      parts[node.inputs[k]].push_back(dins[k]);
    }
  }

  std::vector<ValueId> grads;
  for (ValueId v : wrt) {
    grads.push_back(total(b, parts[v]));
    SG_CHECK(grads.back() != kNoValue)
        << "loss '" << loss_name << "' does not depend on '" << g.values[v].name << "'";
  }
  return grads;
}

}  // namespace sgraph
