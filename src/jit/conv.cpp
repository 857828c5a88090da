// Convolutions and pools inside a region (Conv, MaxPool, AveragePool): each output element is a
// function of a window of the input, and the region compiler builds it from the window's taps.
//
// The input is read through a source: the input itself (a region input, or its element made in
// the consumer's loop) when every window lies inside it; otherwise a kernel-local copy padded with
// the op's pad value (0; MaxPool: -inf, or the lowest integer), filled by nests of its own before
// the nests that read it. A copy is also made when the input is computed in the region and each of
// its elements is read several times (overlapping windows, or a Conv's several output channels per
// group), so that its producers (a previous conv's epilogue) run once per element, not once per
// read; and when computing it means computing windows (a direct Conv under a pool), so that those
// run in a loop of their own over contiguous positions rather than at strided ones. In the source,
// tap k of output position o reads position o * stride + k * dilation on each spatial dim: always
// in bounds and affine in the loop counters, so the innermost loop vectorises with plain loads (no
// clamps or selects: the copy costs one pass over the input, clamps and selects every tap).
//
// Conv goes one of two ways by the length of its dot products, K = C/group * prod(kernel):
//   - K <= kDirectMax (depthwise convs, small stems): direct. The output element is a
//     straight-line sum of K products weight * source element, made in the consumer's loop, so
//     depthwise conv + BatchNormalization + Relu is one loop. Not when the innermost spatial dim
//     is strided and a group has several output channels: each channel would gather the same
//     strided inputs again (cnn_bn_gap, whose stem is a 3x3 stride-2 conv to 8 channels, ran in 15
//     us so, 12.5 us through the GEMM);
//   - otherwise im2col + GEMM. A nest writes the im2col matrix [N, group, K, out] (none for a 1x1
//     kernel with unit strides and no pads: the source is the matrix), then one call of the
//     runtime GEMM (sgraph_gemm_f32/f64) multiplies each group's weights [M/group, K] (in place;
//     copied when computed in the region) by it, into a local buffer [N, M, out...]. The bias and
//     the consumers (BatchNormalization, Relu, a residual Add) read that buffer as the epilogue,
//     and their loops coalesce like any elementwise nest's. A depthwise conv this way would be one
//     GEMM call per channel of a 1-row matrix: ppocr_mobile_v2_cls ran 2.5x slower so.
// Pools: MaxPool is the max over the window (padding never wins; a window of padding only gives
// the lowest value, as in the interpreter), AveragePool the sum over the window divided by its
// count: the positions inside the input, or with count_include_pad those inside the padded input
// (never past the end pads), a table per spatial dim when it varies.
//
// A per-channel operand (BatchNormalization's parameters, Conv's bias: [C] along dim 1) is read
// at the output element's channel (channel_index).
#include <algorithm>

#include "jit/element.h"
#include "jit/kernel_builder.h"
#include "jit/region_compiler.h"
#include "ops/op.h"

namespace sgraph::jit {

using llvm::Value;

namespace {

constexpr int64_t kDirectMax = 32;  // longest dot product a Conv computes directly

bool is_pool(OpKind op) { return op == OpKind::MaxPool || op == OpKind::AveragePool; }

// Whether the loops around a copy nest's rows may be unrolled: only when rows are short, so the
// loop's overhead per row counts. Unrolled around long rows, the loops of these nests made blocks
// of thousands of instructions: ppocr_mobile_v2_cls took 3 s to compile (the machine scheduler,
// quadratic in a block's size, ~150 MB at its peak), 1 s without them, and ran no slower.
bool short_rows(const Shape& s) { return s.empty() || s.back() < 32; }

// Whether some window reads outside the input on some spatial dim (padding, or past the end).
bool reads_outside(const ops::Window& w) {
  for (size_t d = 0; d < w.rank(); ++d)
    if (w.pad_begin[d] > 0 ||
        (w.out[d] - 1) * w.strides[d] - w.pad_begin[d] + w.extent(d) > w.in[d])
      return true;
  return false;
}

// Whether neighbouring windows may share input positions (conservatively).
bool overlaps(const ops::Window& w) {
  for (size_t d = 0; d < w.rank(); ++d)
    if (w.kernel[d] > 1 && w.strides[d] < w.extent(d)) return true;
  return false;
}

// Per output position o along spatial dim d, how many taps lie inside the input, or (`padded`)
// inside the padded input: the interpreter's window counts (see src/ops/pool.cpp).
Ints tap_counts(const ops::Window& w, size_t d, bool padded) {
  Ints counts(w.out[d], 0);
  for (int64_t o = 0; o < w.out[d]; ++o)
    for (int64_t k = 0; k < w.kernel[d]; ++k) {
      const int64_t i = o * w.strides[d] - w.pad_begin[d] + k * w.dilations[d];
      counts[o] += padded ? i < w.in[d] + w.pad_end[d] : i >= 0 && i < w.in[d];
    }
  return counts;
}

// Calls f(tap) for each tap of `kernel` in row-major order.
template <class F>
void for_each_tap(const Ints& kernel, F&& f) {
  Ints k(kernel.size(), 0);
  for (int64_t t = 0, n = numel(kernel); t < n; ++t) {
    f(k);
    for (size_t d = kernel.size(); d-- > 0 && ++k[d] == kernel[d];) k[d] = 0;
  }
}

}  // namespace

bool windowed(OpKind op) { return op == OpKind::Conv || is_pool(op); }

std::string why_not_windowed(const Graph& g, const Node& n) {
  const DType t = g.values[n.inputs[0]].dtype;
  const bool ints = n.op == OpKind::MaxPool && (t == DType::i8 || t == DType::u8);
  if (t != DType::f32 && t != DType::f64 && !ints)
    return std::string(op_name(n.op)) + " of " + std::string(dtype_name(t));
  return "";
}

bool per_channel(const Node& n, size_t i) {
  return (n.op == OpKind::BatchNormalization && i >= 1) || (n.op == OpKind::Conv && i == 2);
}

Index KernelBuilder::channel_index(const Node& n, ValueId v, const Index& idx) {
  const Shape& vs = shape(v);
  if (numel(vs) == 1) return Index(vs.size(), i64(0));
  const Shape& out = shape(n.outputs[0]);
  if (coalesced_.count(v)) return broadcast_index(n, idx, out, vs);  // merged as [.., C, ..]
  SG_CHECK(vs.size() == 1 && out.size() >= 2 && vs[0] == out[1])
      << node_str(n) << ": per-channel operand shape " << shape_str(vs)
      << " does not match the channels of " << shape_str(out);
  return {idx[1]};
}

namespace {
// The window of a Conv (weights `ws`, `group`) or pool node, checked against the shapes given.
ops::Window window_of(const Node& n, const Shape& xs, const Shape* ws, int64_t group,
                      const Shape& out) {
  SG_CHECK(xs.size() >= 3) << node_str(n) << ": input shape " << shape_str(xs)
                           << " is not [N, C, spatial...]";
  const Ints in(xs.begin() + 2, xs.end());
  Shape expect = {xs[0], xs[1]};
  ops::Window w;
  if (ws) {
    SG_CHECK(ws->size() == xs.size() && group >= 1 && (*ws)[0] % group == 0 &&
             (*ws)[1] * group == xs[1])
        << node_str(n) << ": weights " << shape_str(*ws) << " with group " << group
        << " do not fit input " << shape_str(xs);
    w = ops::forward_window(n.attrs, in, Ints(ws->begin() + 2, ws->end()));
    expect[1] = (*ws)[0];
  } else {
    SG_CHECK(n.attrs.has("kernel_shape")) << node_str(n) << ": no kernel_shape";
    w = ops::forward_window(n.attrs, in,
                            ops::read_spatial(n.attrs, "kernel_shape", in.size(), 0, 1),
                            n.attrs.get_int("ceil_mode", 0) != 0, /*clip_last=*/true);
  }
  SG_CHECK(numel(w.kernel) > 0) << node_str(n) << ": an empty kernel";
  expect.insert(expect.end(), w.out.begin(), w.out.end());
  SG_CHECK(out == expect) << node_str(n) << ": output shape " << shape_str(out) << " is not "
                          << shape_str(expect) << " for input " << shape_str(xs);
  return w;
}
}  // namespace

void KernelBuilder::allocate_window(const Node& n) {
  WindowPlan p;
  const ValueId x = n.inputs[0];
  const Shape& xs = shapes_.at(x);
  const Shape& out = shapes_.at(n.outputs[0]);
  const bool conv = n.op == OpKind::Conv;
  if (conv) p.group = n.attrs.get_int("group", 1);
  p.w = window_of(n, xs, conv ? &shapes_.at(n.inputs[1]) : nullptr, p.group, out);
  const ops::Window& w = p.w;
  const int64_t dot = conv ? shapes_.at(n.inputs[1])[1] * numel(w.kernel) : 0;
  // Direct unless the dot products are long, or strided along the innermost (vector) dim with
  // several output channels per group: each would gather the same strided inputs again.
  const int64_t per_group = conv ? shapes_.at(n.inputs[1])[0] / p.group : 1;
  p.gemm = conv && (dot > kDirectMax || (w.strides.back() > 1 && per_group > 1));
  const bool unit = numel(w.kernel) == 1 && std::all_of(w.strides.begin(), w.strides.end(),
                                                        [](int64_t s) { return s == 1; });
  p.padded = reads_outside(w);
  const bool pointwise = p.gemm && unit && !p.padded;  // the input is the im2col matrix
  // An input element is read by several output elements: through overlapping windows, or by each
  // output channel of its group.
  const bool reread = overlaps(w) || per_group > 1;
  const bool computed = producer_[x] >= 0;
  llvm::Type* t = memory_type(ctx_, g_.values[x].dtype);
  if (p.padded || (computed && (reread || pointwise || made_from_windows(x)))) {
    p.source_shape = {xs[0], xs[1]};
    for (size_t d = 0; d < w.rank(); ++d)
      p.source_shape.push_back(p.padded ? w.pad_begin[d] +
                                              std::max(w.in[d], (w.out[d] - 1) * w.strides[d] -
                                                                    w.pad_begin[d] + w.extent(d))
                                        : w.in[d]);
    p.source = local_buffer(t, numel(p.source_shape));
  }
  if (p.gemm) {
    if (producer_[n.inputs[1]] >= 0) p.weights = local_buffer(t, numel(shapes_.at(n.inputs[1])));
    if (!pointwise) p.col = local_buffer(t, xs[0] * dot * p.group * numel(w.out));
    p.product = local_buffer(t, numel(out));
  }
  window_[&n] = std::move(p);
}

void KernelBuilder::materialise_window(const Node& n) {
  const WindowPlan& p = window_.at(&n);
  const ValueId x = n.inputs[0];
  const ops::Window& w = p.w;
  const size_t r = w.rank();
  if (p.source.slot >= 0) {
    const Local l = p.source;
    const Shape& ss = p.source_shape;
    if (p.padded) {
      Value* fill = n.op == OpKind::MaxPool ? lowest(g_.values[x].dtype, l.type)
                                            : llvm::Constant::getNullValue(l.type);
      loop_nest(
          ss, true, [&](const Index& i) { b_.CreateStore(fill, local_ptr(l, offset_of(i, ss))); },
          short_rows(ss));
    }
    loop_nest(
        shapes_.at(x), true,
        [&](const Index& i) {
          Index j = i;
          for (size_t d = 0; d < r; ++d)
            if (w.pad_begin[d] != 0)
              j[2 + d] = b_.CreateAdd(i[2 + d], i64(w.pad_begin[d]), "", true, true);
          b_.CreateStore(element(x, i), local_ptr(l, offset_of(j, ss)));
        },
        short_rows(ss));
  }
  if (!p.gemm) return;
  const ValueId wv = n.inputs[1];
  const Shape& ws = shapes_.at(wv);
  if (p.weights.slot >= 0)
    loop_nest(ws, true, [&](const Index& i) {
      b_.CreateStore(element(wv, i), local_ptr(p.weights, offset_of(i, ws)));
    });
  const Shape& xs = shapes_.at(x);
  if (p.col.slot >= 0) {  // col [N, C, kernel..., out...]
    Shape cs = {xs[0], xs[1]};
    cs.insert(cs.end(), w.kernel.begin(), w.kernel.end());
    cs.insert(cs.end(), w.out.begin(), w.out.end());
    loop_nest(
        cs, true,
        [&](const Index& i) {
          const Index k(i.begin() + 2, i.begin() + 2 + r), o(i.begin() + 2 + r, i.end());
          b_.CreateStore(window_tap(n, p, i[0], i[1], o, k), local_ptr(p.col, offset_of(i, cs)));
        },
        short_rows(cs));
  }
  // Batch item i = (image, group): weights of group i % g, its im2col matrix, its output rows.
  const int64_t mg = ws[0] / p.group, dot = ws[1] * numel(w.kernel), items = xs[0] * p.group;
  std::vector<int64_t> a_off, b_off;
  for (int64_t i = 0; i < items; ++i) {
    a_off.push_back(i % p.group * mg * dot);
    b_off.push_back(i * dot * numel(w.out));
  }
  Value* a = kernel_ptrs_[p.weights.slot >= 0 ? p.weights.slot : slot_of_[wv]];
  Value* b = kernel_ptrs_[p.col.slot >= 0      ? p.col.slot
                          : p.source.slot >= 0 ? p.source.slot
                                               : slot_of_[x]];
  call_gemm(g_.values[x].dtype, mg, numel(w.out), dot, a, a_off, false, b, b_off, false,
            kernel_ptrs_[p.product.slot], 1.0);
}

// Whether making v's element in a loop means computing windows (a direct Conv, a pool), which
// would then be read at strided positions: such an input is copied, so that the windows under it
// are computed in a loop of their own along contiguous positions.
bool KernelBuilder::made_from_windows(ValueId v) {
  std::vector<ValueId> todo = {v};
  std::vector<bool> seen(g_.values.size(), false);
  while (!todo.empty()) {
    const ValueId u = todo.back();
    todo.pop_back();
    if (u == kNoValue || seen[u] || producer_[u] < 0 || local_.count(u)) continue;
    seen[u] = true;
    const Node& n = g_.nodes[producer_[u]];
    if (windowed(n.op)) {
      if (!window_.at(&n).gemm) return true;
    } else if (!contracts(n.op)) {
      todo.insert(todo.end(), n.inputs.begin(), n.inputs.end());
    }
  }
  return false;
}

// The source's element of image `image`, channel `channel` that tap k of output position o reads.
Value* KernelBuilder::window_tap(const Node& n, const WindowPlan& p, Value* image, Value* channel,
                                 const Index& o, const Index& k) {
  const ops::Window& w = p.w;
  Index j = {image, channel};
  for (size_t d = 0; d < w.rank(); ++d) {
    Value* pos = w.strides[d] == 1 ? o[d] : b_.CreateMul(o[d], i64(w.strides[d]), "", true, true);
    Value* tap =
        w.dilations[d] == 1 ? k[d] : b_.CreateMul(k[d], i64(w.dilations[d]), "", true, true);
    j.push_back(b_.CreateAdd(pos, tap, "", true, true));
  }
  if (p.source.slot < 0) return element(n.inputs[0], j);
  return b_.CreateLoad(p.source.type, local_ptr(p.source, offset_of(j, p.source_shape)));
}

// One of `values` (one per position along a spatial dim) at position `o`: a constant when they
// are all equal, else a load from a constant table.
Value* KernelBuilder::per_position(const Ints& values, Value* o) {
  if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; }))
    return i64(values[0]);
  Value* table = i64_array(values);
  return b_.CreateLoad(b_.getInt64Ty(), b_.CreateInBoundsGEP(b_.getInt64Ty(), table, o));
}

Value* KernelBuilder::window_element(const Node& n, const Index& idx) {
  const WindowPlan& p = window_.at(&n);
  const ValueId y = n.outputs[0];
  const Shape& out = shape(y);
  const size_t r = p.w.rank();
  Value* v = nullptr;
  if (p.gemm) {
    v = b_.CreateLoad(p.product.type, local_ptr(p.product, offset_of(idx, out)));
  } else if (n.op == OpKind::Conv) {
    v = direct_conv(n, p, idx);
  } else {
    SG_ASSERT(out.size() == r + 2) << node_str(n) << ": a window element at a coalesced index";
    const Index o(idx.begin() + 2, idx.end());
    const DType t = g_.values[y].dtype;
    for_each_tap(p.w.kernel, [&](const Ints& k) {
      Index kv;
      for (int64_t e : k) kv.push_back(i64(e));
      Value* e = window_tap(n, p, idx[0], idx[1], o, kv);
      v = !v ? e : n.op == OpKind::MaxPool ? max_of(v, e, t) : b_.CreateFAdd(v, e);
    });
    const bool include_pad = n.attrs.get_int("count_include_pad", 0) != 0;
    Value* count = nullptr;  // the window's count (AveragePool), its inside count (MaxPool)
    Value* empty = nullptr;  // MaxPool: the window holds no input position
    for (size_t d = 0; d < r; ++d) {
      const Ints c = tap_counts(p.w, d, n.op == OpKind::AveragePool && include_pad);
      if (n.op == OpKind::AveragePool) {
        Value* cd = per_position(c, o[d]);
        count = count ? b_.CreateMul(count, cd, "", true, true) : cd;
      } else if (is_float(t) && std::count(c.begin(), c.end(), 0) > 0) {
        Value* e = b_.CreateICmpEQ(per_position(c, o[d]), i64(0));
        empty = empty ? b_.CreateOr(empty, e) : e;
      }
    }
    if (count) v = b_.CreateFDiv(v, b_.CreateSIToFP(count, v->getType()));
    if (empty) {
      llvm::Type* ft = v->getType();
      v = b_.CreateSelect(
          empty, llvm::ConstantFP::get(ft, llvm::APFloat::getLargest(ft->getFltSemantics(), true)),
          v);
    }
  }
  if (n.op == OpKind::Conv && n.inputs.size() > 2 && n.inputs[2] != kNoValue)
    v = b_.CreateFAdd(v, element(n.inputs[2], channel_index(n, n.inputs[2], idx)));
  return v;
}

// The sum over the window and the input channels of the output's group, weight * input.
Value* KernelBuilder::direct_conv(const Node& n, const WindowPlan& p, const Index& idx) {
  const Shape& ws = shapes_.at(n.inputs[1]);
  SG_ASSERT(idx.size() == ws.size()) << node_str(n) << ": a window element at a coalesced index";
  const int64_t cg = ws[1], mg = ws[0] / p.group;
  Value* m = idx[1];
  Value* first = i64(0);  // the group's first input channel
  if (p.group > 1)
    first = b_.CreateMul(mg == 1 ? m : b_.CreateUDiv(m, i64(mg)), i64(cg), "", true, true);
  const Index o(idx.begin() + 2, idx.end());
  Value* acc = nullptr;
  for (int64_t c = 0; c < cg; ++c) {
    Value* channel = c == 0 ? first : b_.CreateAdd(first, i64(c), "", true, true);
    for_each_tap(p.w.kernel, [&](const Ints& k) {
      Index kv, wi = {m, i64(c)};
      for (int64_t e : k) {
        kv.push_back(i64(e));
        wi.push_back(i64(e));
      }
      Value* prod_w = element(n.inputs[1], wi);
      Value* xv = window_tap(n, p, idx[0], channel, o, kv);
      acc = acc ? b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {xv->getType()}, {prod_w, xv, acc})
                : b_.CreateFMul(prod_w, xv);
    });
  }
  return acc;
}

}  // namespace sgraph::jit
