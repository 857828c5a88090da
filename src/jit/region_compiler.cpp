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

CompiledRegion compile_region(Jit& jit, const Graph& g, const Region& r,
                              const std::vector<Shape>& value_shapes, const std::string& name,
                              Jit::Reuse reuse) {
  CompiledRegion result;
  result.why_not = why_not_compilable(g, r);
  if (!result.why_not.empty()) return result;
  const auto start = std::chrono::steady_clock::now();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = std::make_unique<llvm::Module>(name, *ctx);
  m->setTargetTriple(jit.target_triple());
  m->setDataLayout(jit.data_layout());
  KernelBuilder builder(g, r, value_shapes, *m);
  builder.build(name);
  result.scratch_bytes = builder.scratch_bytes();
  result.kernel = jit.add(std::move(ctx), std::move(m), name, reuse);
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  SG_LOG(2) << (result.kernel.reused ? "reused the kernel of the same code for " : "compiled ")
            << name << " (" << r.nodes.size() << " ops) in " << result.compile_ms << " ms";
  return result;
}

}  // namespace sgraph::jit
