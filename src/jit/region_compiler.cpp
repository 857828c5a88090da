// The region compiler (see region_compiler.h): what can be compiled, and compiling it.
#include "jit/region_compiler.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <chrono>

#include "ir/debug.h"
#include "jit/kernel_builder.h"
#include "ops/element.h"
#include "ops/lowering.h"
#include "ops/op.h"

namespace sgraph::jit {
namespace {

// Calls the node's emitter on placeholder operands: "" when it handles the node's dtypes.
std::string probe_emitter(llvm::Module& m, const Node& n, const std::vector<DType>& in, DType out) {
  llvm::LLVMContext& ctx = m.getContext();
  std::vector<llvm::Type*> params;
  for (DType t : in) {
    if (t == DType::undefined) continue;
    params.push_back(ops::element_type(ctx, t));
    if (!params.back()) return "unsupported dtype " + std::string(dtype_name(t));
  }
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false);
  auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "probe", m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  std::vector<llvm::Value*> operands;
  for (size_t i = 0, arg = 0; i < in.size(); ++i)
    operands.push_back(in[i] == DType::undefined ? nullptr : f->getArg(arg++));
  ops::ElementCtx c{b, n, in, out};
  llvm::Value* x = nullptr;
  try {
    x = ops::op_def(n.op).element(c, operands);
  } catch (const Error& e) {
    return e.message();
  }
  if (x && x->getType() == ops::element_type(ctx, out)) return "";
  std::string types;
  for (DType t : in) types += (types.empty() ? "" : ", ") + std::string(dtype_name(t));
  return "no element emitter for operands (" + types + ")";
}

}  // namespace

std::string why_not_compilable(const Graph& g, const Region& r) {
  llvm::LLVMContext ctx;
  llvm::Module m("probe", ctx);
  for (int32_t i : r.nodes) {
    const Node& n = g.nodes.at(i);
    const auto why = [&](const std::string& s) { return ops::node_str(n) + ": " + s; };
    if (n.outputs.size() != 1) return why("several outputs");
    const DType out = g.values[n.outputs[0]].dtype;
    if (!ops::element_type(ctx, out))
      return why("unsupported dtype " + std::string(dtype_name(out)));
    if (!ops::is_compilable(n.op)) return why("no lowering");
    const ops::OpDef& def = ops::op_def(n.op);
    if (def.lowering && def.lowering->why_not)
      if (std::string s = def.lowering->why_not(g, n); !s.empty()) return why(s);
    if (def.lowering && def.lowering->generate) continue;
    if (def.element)
      if (std::string s = probe_emitter(m, n, ops::operand_dtypes(g, n), out); !s.empty())
        return why(s);
  }
  return "";
}

namespace {

CompiledRegion not_compiled(std::string why) {
  CompiledRegion c;
  c.why_not = std::move(why);
  return c;
}

// Builds the module with `make` (a KernelBuilder) and compiles it.
template <class Make>
CompiledRegion compile_with(Jit& jit, const Region& r, const std::string& name, Jit::Reuse reuse,
                            bool serial, const Make& make) {
  CompiledRegion result;
  const auto start = std::chrono::steady_clock::now();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = std::make_unique<llvm::Module>(name, *ctx);
  m->setTargetTriple(jit.target_triple());
  m->setDataLayout(jit.data_layout());
  KernelBuilder builder = make(*m);
  builder.set_serial(serial);
  builder.build(name);
  result.scratch_bytes = builder.scratch_bytes();
  result.scratch_sym = builder.scratch_sym();
  result.kernel = jit.add(std::move(ctx), std::move(m), name, reuse);
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  SG_LOG(2) << (result.kernel.reused ? "reused the kernel of the same code for " : "compiled ")
            << name << " (" << r.nodes.size() << " ops) in " << result.compile_ms << " ms";
  return result;
}

}  // namespace

CompiledRegion compile_region(Jit& jit, const Graph& g, const Region& r,
                              const std::vector<Shape>& value_shapes, const std::string& name,
                              Jit::Reuse reuse, bool serial) {
  if (std::string why = why_not_compilable(g, r); !why.empty()) return not_compiled(why);
  return compile_with(jit, r, name, reuse, serial,
                      [&](llvm::Module& m) { return KernelBuilder(g, r, value_shapes, m); });
}

// v's symbolic shape in `shapes`, nullptr where unknown.
static const SymShape* sym_shape_of(const std::vector<std::optional<SymShape>>& shapes, ValueId v) {
  return v >= 0 && static_cast<size_t>(v) < shapes.size() && shapes[v] ? &*shapes[v] : nullptr;
}

std::vector<std::pair<SymDim, int64_t>> dynamic_needs(
    const Graph& g, const Node& n, const std::vector<std::optional<SymShape>>& shapes) {
  std::vector<std::pair<SymDim, int64_t>> least;
  const ops::Lowering* l = ops::op_def(n.op).lowering;
  if (!l || !l->dynamic_needs || n.outputs.empty()) return least;
  const auto shape_of = [&](ValueId v) { return sym_shape_of(shapes, v); };
  const SymShape* out = shape_of(n.outputs[0]);
  if (!out) return least;
  std::vector<const SymShape*> in;
  for (ValueId v : n.inputs) in.push_back(v == kNoValue ? nullptr : shape_of(v));
  l->dynamic_needs(g, n, in, *out, least);
  return least;
}

bool takes_symbolic_dims(OpKind op) {
  const ops::OpDef& def = ops::op_def(op);
  const ops::Lowering* l = def.lowering;
  if (l && l->why_not_dynamic) return true;
  return def.element && !(l && (l->generate || l->materialise));
}

std::string why_not_dynamic(const Graph& g, const Node& n,
                            const std::vector<std::optional<SymShape>>& shapes) {
  const auto shape_of = [&](ValueId v) { return sym_shape_of(shapes, v); };
  for (ValueId v : n.inputs)
    if (v != kNoValue && !shape_of(v)) return "the rank of '" + g.values[v].name + "' changed";
  if (n.outputs.size() != 1 || !shape_of(n.outputs[0])) return "the rank of its output changed";
  const ops::Lowering* l = ops::op_def(n.op).lowering;
  const SymShape& out = *shape_of(n.outputs[0]);
  // A stable op merged into a dynamic region: its static lowering serves, dims all constants.
  bool all_static = is_static(out);
  for (ValueId v : n.inputs) all_static &= v == kNoValue || is_static(*shape_of(v));
  if (all_static) return "";
  if (l && l->why_not_dynamic) {
    std::vector<const SymShape*> in;
    for (ValueId v : n.inputs) in.push_back(v == kNoValue ? nullptr : shape_of(v));
    return l->why_not_dynamic(g, n, in, out);
  }
  if (!takes_symbolic_dims(n.op)) return "its lowering takes no symbolic dims yet";
  std::vector<bool> made(out.size(), false);  // output dim d is some operand's
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ValueId v = n.inputs[i];
    if (v == kNoValue) continue;
    const SymShape& in = *shape_of(v);
    if (l && l->per_channel && l->per_channel(n, i)) {  // [C] read at the output's dim 1
      const bool one = is_static(in) && numel(eval_shape(in, {})) == 1;
      if (!one && !(in.size() == 1 && !in[0].symbolic() && out.size() >= 2 && in[0] == out[1]))
        return "per-channel operand '" + g.values[v].name + "' is not [C] of static C";
      continue;
    }
    if (in.size() > out.size()) return "an operand of higher rank than its output";
    const size_t lead = out.size() - in.size();
    for (size_t j = 0; j < in.size(); ++j) {
      if (in[j] == out[lead + j]) {
        made[lead + j] = true;
      } else if (!in[j].is_one()) {
        return "operand '" + g.values[v].name + "' dim " + std::to_string(j) +
               " neither the output's nor 1";
      }
    }
  }
  for (size_t d = 0; d < out.size(); ++d)
    if (out[d].symbolic() && !made[d])
      return "output dim " + std::to_string(d) + " is no operand's";
  return "";
}

CompiledRegion compile_dynamic_region(Jit& jit, const Graph& g, const Region& r,
                                      const std::vector<std::optional<SymShape>>& sym_shapes,
                                      size_t num_symbols, const std::string& name, Jit::Reuse reuse,
                                      bool serial) {
  if (std::string why = why_not_compilable(g, r); !why.empty()) return not_compiled(why);
  for (int32_t i : r.nodes)
    if (std::string why = why_not_dynamic(g, g.nodes[i], sym_shapes); !why.empty())
      return not_compiled(ops::node_str(g.nodes[i]) + ": " + why);
  std::vector<SymShape> shapes(g.values.size());
  for (const std::vector<ValueId>* vs : {&r.inputs, &r.outputs})
    for (ValueId v : *vs) shapes[v] = *sym_shapes.at(v);
  for (int32_t i : r.nodes)
    for (ValueId v : g.nodes[i].outputs) shapes[v] = *sym_shapes.at(v);
  for (const SymShape& s : shapes)
    for (const SymDim& d : s)
      SG_CHECK(d.sym < static_cast<int32_t>(num_symbols) &&
               (!d.symbolic() || (d.scale > 0 && d.div >= 1)))
          << "a symbolic dim out of range";
  return compile_with(jit, r, name, reuse, serial,
                      [&](llvm::Module& m) { return KernelBuilder(g, r, shapes, num_symbols, m); });
}

std::optional<int64_t> scratch_need(int64_t static_bytes, const SymScratch& sym,
                                    std::span<const int64_t> syms) {
  int64_t need = static_bytes;
  for (const auto& group : sym) {
    int64_t part = 0;
    for (const SymScratchBuffer& b : group) {
      int64_t bytes = b.elem_bytes;
      for (const SymDim& d : b.dims)
        if (__builtin_mul_overflow(bytes, d.value(syms), &bytes)) return std::nullopt;
      if (__builtin_add_overflow(bytes, 63, &bytes)) return std::nullopt;
      part = std::max(part, bytes / 64 * 64);
    }
    if (__builtin_add_overflow(need, part, &need)) return std::nullopt;
  }
  return need;
}

}  // namespace sgraph::jit
