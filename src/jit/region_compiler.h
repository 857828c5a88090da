// RegionCompiler: one fused LLVM kernel per region, from the graph and the region's static shapes.
//
//   std::string why = why_not_compilable(g, region);     // "" when it can be compiled
//   CompiledRegion c = compile_region(jit, g, region, value_shapes, "region_0");
//   void* buffers[] = {in0.raw_data(), ..., out0.raw_data(), ...};
//   c.kernel.fn(buffers, nullptr, &kernel_context);   // or nullptr: one thread
//
// Fusion composes element generators (the idea of XLA's elemental IR emitter): for each region
// output the kernel runs one loop nest over the output's static shape (one loop per dim, the
// innermost contiguous, constant trip counts) and generates the element at the current index:
//   - a region input is loaded from its buffer, the index mapped by numpy broadcasting (leading
//     dims dropped, size-1 dims read at 0; a one-element input at its only element), so the
//     address stays affine in the loop counters and the innermost loop vectorises; one-element
//     constants become IR constants;
//   - a value made inside the region by an op with an element emitter (OpDef::element) is that
//     emitter applied to its operands' elements, each at the broadcast-mapped index;
//   - index ops are index maps: Identity/Reshape/Flatten/Squeeze/Unsqueeze read the input element
//     at the same row-major offset (an affine load from a region input; delinearised with div/mod
//     when the input is computed, unless the reshape only adds or drops size-1 dims), Transpose
//     permutes the index, Expand broadcasts it, Slice/Pad/Concat/Gather map it (with constant
//     parameters; see index_maps.cpp);
//   - a reduction (ReduceSum/ReduceMean/ReduceMax) is materialised: before the output nests, a
//     loop nest over its operand's shape accumulates into a kernel-local buffer (stack when at
//     most 64 KiB, else in the caller's scratch block; f64 for float sums, i64 for integer sums)
//     and its consumers read that buffer like a region input; Softmax/LogSoftmax materialise the
//     row max and then the row sum of exp(x - max), LayerNormalization the row mean and inverse
//     standard deviation, the same way; MatMul/Gemm call the runtime GEMM into a local buffer and
//     their consumers (bias, activation, ...) are the epilogue; GlobalAveragePool is a mean over
//     the spatial dims;
//   - Conv, MaxPool and AveragePool read windows of a source: their input, or a local copy of it
//     (padded when windows reach outside). A Conv with short dot products (depthwise) and the
//     pools are straight-line sums/maxima over the window in the consumer's loop; other Convs go
//     through im2col and the runtime GEMM into a local buffer, their consumers the epilogue
//     (see conv.cpp). BatchNormalization's parameters and Conv's bias are read per channel.
//   These nests run in the region's node order; each is outlined and, when its outer iterations
//   write disjoint memory, split over the region's threads (see kernel_builder.h).
// Within one loop nest each (value, index) is generated once; with several outputs each output has
// its own loop nest and values they share are computed again in each. Buffer arguments are
// `noalias`: outputs must not overlap inputs.
#pragma once

#include <string>
#include <vector>

#include "jit/jit.h"
#include "runtime/region_builder.h"
#include "sgraph/graph.h"

namespace sgraph::jit {

// True for the index ops the compiler maps itself (views, Transpose, Expand, Slice, Pad, Concat,
// Gather); whether a node of them compiles also depends on its parameters being constants.
bool maps_indices(OpKind op);

// True for the ops the compiler prepares with nests (and kernel-local buffers) of their own before
// the loop nests that read them: reductions, GlobalAveragePool, Softmax/LogSoftmax,
// LayerNormalization, MatMul/Gemm, Conv, MaxPool, AveragePool.
bool materialises(OpKind op);

// Why the region cannot be compiled, naming the first node at fault (an op with no element
// emitter and no index map, an emitter that does not handle the node's dtypes, several outputs,
// an unsupported dtype); "" when it can. Needs only the graph's dtypes, not shapes.
std::string why_not_compilable(const Graph& g, const Region& r);
inline bool can_compile(const Graph& g, const Region& r) {
  return why_not_compilable(g, r).empty();
}

struct CompiledRegion {
  Jit::Kernel kernel;         // kernel.fn is nullptr when the region was not compiled
  double compile_ms = 0;      // building the IR, optimising, generating code
  std::string why_not;        // why_not_compilable's answer when not compiled
  int64_t scratch_bytes = 0;  // the scratch block the kernel needs (0: none)
};

// Compiles the region into a kernel named after `name` (the JIT makes the name unique). The kernel
// is shared with any earlier region whose emitted code is the same (Jit::Reuse::same_code, the
// JIT's cache: the key is the code, see jit.h), unless `reuse` is never.
// value_shapes[v] is the static shape of value v, for every value the region reads or writes.
// Kernel arguments: the data of r.inputs then of r.outputs, in that order (constants included,
// even those folded into the code), then, when scratch_bytes > 0, a 64-byte aligned block of that
// size for kernel-local buffers (its contents need not survive between calls). Throws
// sgraph::Error when the shapes are inconsistent with the graph (e.g. operands that do not
// broadcast) or LLVM fails.
CompiledRegion compile_region(Jit& jit, const Graph& g, const Region& r,
                              const std::vector<Shape>& value_shapes, const std::string& name,
                              Jit::Reuse reuse = Jit::Reuse::same_code);

}  // namespace sgraph::jit
