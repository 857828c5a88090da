// src/ops/params.h — each op's non-trivial parameters, decoded once.
//
// An op whose attributes and parameter inputs need resolving (defaults, negative axes, clamping,
// the opset-1 attribute form next to the later input form) has one function here, used by its
// shape rule, its reference kernel, its gradient and its JIT lowering alike, so they cannot
// disagree. (Conv and the pools have theirs in src/ops/window.h.) Each is defined in its op's
// file; op_axis, shared by several ops, in common.cpp. Parameter inputs are passed as tensors,
// nullptr when absent: the caller knows where the values come from (a shape rule's known values, a
// kernel's inputs, a graph's constants). Errors are sgraph::Error without node context: the caller
// adds it.
//
//   const std::vector<SliceAxis> axes = slice_params(node, x.shape(), starts, ends, nullptr,
//                                                    nullptr);
//   for (const SliceAxis& a : axes) out.push_back(a.count);
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph::ops {

// ---- Slice (slice.cpp) ---------------------------------------------------------------------

// Slice on one input dim: the first element read, the step between reads, how many are read
// (start clamped as ONNX says: forward to [0, dim], backward to [0, dim - 1]; count >= 0).
// When fewer than two elements are read the step is 1 (so start + step * i never overflows); an
// empty backward slice of an empty dim has start 0.
struct SliceAxis {
  int64_t start = 0, step = 1, count = 0;
};
// Slice's parameters for an input of shape `in`: one SliceAxis per input dim (dims not sliced:
// start 0, step 1, count dim). Read from inputs 1..4 (opset 10+; nullptr when absent) or, when
// `starts` is null, from the attributes (opset 1). Ends are clamped as starts are, a backward one
// to [-1, dim - 1] (-1: past element 0). Throws sgraph::Error (no node context) on bad
// parameters (step 0, size mismatch, axis out of range or repeated, ends missing).
std::vector<SliceAxis> slice_params(const Node& n, const Shape& in, const Tensor* starts,
                                    const Tensor* ends, const Tensor* axes, const Tensor* steps);

// A Slice whose ends are computed (not known where the code is made) and whose starts, axes
// (nullptr: 0, 1, ...) and steps (nullptr: 1s) are: per (start, end) pair, the axis it slices
// and its start, when every start is >= 0, every step 1 and no axis repeats in an input of rank
// `rank`. Then element start + i is read on each sliced axis whatever the ends, and only the
// output's size depends on them. nullopt (with why) otherwise. Used alike by the JIT lowering
// and by the planner that checks the ends (runtime/session.cpp).
struct SliceFromStarts {
  std::vector<size_t> axis;
  Ints start;
};
std::optional<SliceFromStarts> slice_from_starts(size_t rank, const Tensor& starts,
                                                 const Tensor* axes, const Tensor* steps,
                                                 std::string& why);

// ---- Shape, ConstantOfShape (shape_ops.cpp) ------------------------------------------------

// Shape's [start, end) of an input of rank `rank`: its attributes, negative ones counting from the
// end, clamped to [0, rank]; end >= start.
std::pair<int64_t, int64_t> shape_range(const Attributes& a, int64_t rank);

// Its fill: attribute `value` (one element), f32 0 when absent; throws on another element count.
Tensor constant_of_shape_fill(const Attributes& a);

// ---- DepthToSpace, SpaceToDepth (depth_to_space.cpp) ---------------------------------------

// Its `blocksize`; throws unless at least 1.
int64_t block_size(const Node& n);
// Whether DepthToSpace's `mode` is CRD (else DCR, the default); throws on another mode.
bool crd_mode(const Node& n);

// ---- Pad (pad.cpp) -------------------------------------------------------------------------

enum class PadMode { constant, edge, reflect };
// Pad's parameters for an input of rank `rank`: per dim the pads before/after (negative ones
// crop) and the mode; from inputs pads/axes (opset 11+; nullptr when absent) or attributes.
// `value` is the opset-2 `value` attribute when the pads are attributes, else 0; a
// constant_value input (input 2), when present, replaces it. Throws on an unknown mode, a pads
// size that is not twice the axes', an axis out of range or repeated. Whether the pads fit the
// input's sizes (crops, reflect and edge pads) is the caller's check: it needs the shape.
struct PadParams {
  PadMode mode = PadMode::constant;
  Ints begin, end;
  double value = 0;
};
PadParams pad_params(const Node& n, size_t rank, const Tensor* pads, const Tensor* axes);
// The mode attribute parsed; std::nullopt for a mode sgraph does not know.
std::optional<PadMode> pad_mode(const Node& n);

// ---- Reduce* (reduce.cpp) ------------------------------------------------------------------

// A reduction's reduced dims for an input of rank `rank`: from the `axes` input (opset 13/18+;
// nullptr when absent) or attribute; empty axes reduce all dims unless noop_with_empty_axes.
// Throws on an axes input of rank > 1, an axis out of range or repeated.
std::vector<bool> reduced_dims(const Node& n, size_t rank, const Tensor* axes);

// ---- Gemm (matmul.cpp) ---------------------------------------------------------------------

// Gemm: transA, transB, alpha, beta (ONNX defaults). beta applies only when C is present.
struct GemmParams {
  bool trans_a = false, trans_b = false;
  double alpha = 1, beta = 1;
};
GemmParams gemm_params(const Node& n);

// ---- MatMul (matmul.cpp) -------------------------------------------------------------------

// MatMul's geometry (numpy matmul), checked: operands as [batch..., M, K] x [batch..., K, N], a
// 1-D A read as [1, K] and a 1-D B as [K, 1] (their unit dim dropped from `out`); the batch dims
// broadcast. MatMulInteger and QLinearMatMul share it.
struct MatMulDims {
  Shape batch_a, batch_b, batch, out;
  int64_t M, K, N;
};
MatMulDims matmul_dims(const Shape& a, const Shape& b);

// ---- Transpose (transpose.cpp) -------------------------------------------------------------

// Transpose's perm for an input of rank `rank`: output dim d is input dim perm[d]; the reversed
// dims when the attribute is absent. Throws when perm is not a permutation of 0..rank-1.
Ints transpose_perm(const Node& n, size_t rank);

// ---- one `axis` (common.cpp) -----------------------------------------------------------------

// The `axis` attribute of Softmax, LogSoftmax, LayerNormalization (default -1), Gather, Split,
// ArgMax, ArgMin (default 0) or Concat (required), normalised against `rank`; throws when it is
// out of range.
int64_t op_axis(const Node& n, size_t rank);

}  // namespace sgraph::ops
