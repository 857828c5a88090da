// The lowering of Conv, MaxPool and AveragePool: each output element is a function of a window
// of the input, built from the window's taps.
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

#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/window.h"

namespace sgraph::ops {

using llvm::Value;

namespace {

constexpr int64_t kDirectMax = 32;  // longest dot product a Conv computes directly

bool is_pool(OpKind op) { return op == OpKind::MaxPool || op == OpKind::AveragePool; }
bool windowed(OpKind op) { return op == OpKind::Conv || is_pool(op); }

struct WindowPlan;
bool made_from_windows(Emitter& e, ValueId v);
llvm::Value* window_tap(Emitter& e, const Node& n, const WindowPlan& p, llvm::Value* image,
                        llvm::Value* channel, const Index& o, const Index& k);
llvm::Value* direct_conv(Emitter& e, const Node& n, const WindowPlan& p, const Index& idx);

struct WindowPlan {  // Conv, MaxPool, AveragePool
  Window w;
  int64_t group = 1;
  bool gemm = false;    // Conv through im2col + GEMM, else computed directly
  bool padded = false;  // some window reads outside the input: the source is padded
  LocalBuffer source;   // the input copied (and padded); undefined: read the input itself
  Shape source_shape;   // [N, C, padded spatial...]
  LocalBuffer weights;  // GEMM: the weights, when computed in the region
  LocalBuffer col;      // GEMM: the im2col matrix; undefined: the source itself (1x1 kernel)
  LocalBuffer product;  // GEMM: [N, M, out...]
};

// Whether the loops around a copy nest's rows may be unrolled: only when rows are short, so the
// loop's overhead per row counts. Unrolled around long rows, the loops of these nests made blocks
// of thousands of instructions: ppocr_mobile_v2_cls took 3 s to compile (the machine scheduler,
// quadratic in a block's size, ~150 MB at its peak), 1 s without them, and ran no slower.
bool short_rows(const Shape& s) { return s.empty() || s.back() < 32; }

// Whether some window reads outside the input on some spatial dim (padding, or past the end).
bool reads_outside(const Window& w) {
  for (size_t d = 0; d < w.rank(); ++d)
    if (w.pad_begin[d] > 0 ||
        (w.out[d] - 1) * w.strides[d] - w.pad_begin[d] + w.extent(d) > w.in[d])
      return true;
  return false;
}

// Whether neighbouring windows may share input positions (conservatively).
bool overlaps(const Window& w) {
  for (size_t d = 0; d < w.rank(); ++d)
    if (w.kernel[d] > 1 && w.strides[d] < w.extent(d)) return true;
  return false;
}

// Per output position o along spatial dim d, how many taps lie inside the input, or (`padded`)
// inside the padded input: the interpreter's window counts (see src/ops/pool.cpp).
Ints tap_counts(const Window& w, size_t d, bool padded) {
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

std::string why_not_window(const Graph& g, const Node& n) {
  const DType t = g.values[n.inputs[0]].dtype;
  const bool ints = n.op == OpKind::MaxPool && (t == DType::i8 || t == DType::u8);
  if (t != DType::f32 && t != DType::f64 && !ints)
    return std::string(op_name(n.op)) + " of " + std::string(dtype_name(t));
  return "";
}

bool conv_bias(const Node& n, size_t i) { return n.op == OpKind::Conv && i == 2; }

// The window of a Conv (weights `ws`, `group`) or pool node, checked against the shapes given.
Window window_of(const Node& n, const Shape& xs, const Shape* ws, int64_t group, const Shape& out) {
  SG_CHECK(xs.size() >= 3) << node_str(n) << ": input shape " << shape_str(xs)
                           << " is not [N, C, spatial...]";
  const Ints in(xs.begin() + 2, xs.end());
  Shape expect = {xs[0], xs[1]};
  Window w;
  if (ws) {
    SG_CHECK(ws->size() == xs.size() && group >= 1 && (*ws)[0] % group == 0 &&
             (*ws)[1] * group == xs[1])
        << node_str(n) << ": weights " << shape_str(*ws) << " with group " << group
        << " do not fit input " << shape_str(xs);
    w = forward_window(n.attrs, in, Ints(ws->begin() + 2, ws->end()));
    expect[1] = (*ws)[0];
  } else {
    SG_CHECK(n.attrs.has("kernel_shape")) << node_str(n) << ": no kernel_shape";
    w = forward_window(n.attrs, in, read_spatial(n.attrs, "kernel_shape", in.size(), 0, 1),
                       n.attrs.get_int("ceil_mode", 0) != 0, /*clip_last=*/true);
  }
  SG_CHECK(numel(w.kernel) > 0) << node_str(n) << ": an empty kernel";
  expect.insert(expect.end(), w.out.begin(), w.out.end());
  SG_CHECK(out == expect) << node_str(n) << ": output shape " << shape_str(out) << " is not "
                          << shape_str(expect) << " for input " << shape_str(xs);
  return w;
}

void allocate_window(Emitter& e, const Node& n) {
  WindowPlan p;
  const ValueId x = n.inputs[0];
  const Shape& xs = e.planned_shape(x);
  const Shape& out = e.planned_shape(n.outputs[0]);
  const bool conv = n.op == OpKind::Conv;
  if (conv) p.group = n.attrs.get_int("group", 1);
  p.w = window_of(n, xs, conv ? &e.planned_shape(n.inputs[1]) : nullptr, p.group, out);
  const Window& w = p.w;
  const int64_t dot = conv ? e.planned_shape(n.inputs[1])[1] * numel(w.kernel) : 0;
  // Direct unless the dot products are long, or strided along the innermost (vector) dim with
  // several output channels per group: each would gather the same strided inputs again.
  const int64_t per_group = conv ? e.planned_shape(n.inputs[1])[0] / p.group : 1;
  p.gemm = conv && (dot > kDirectMax || (w.strides.back() > 1 && per_group > 1));
  const bool unit = numel(w.kernel) == 1 && std::all_of(w.strides.begin(), w.strides.end(),
                                                        [](int64_t s) { return s == 1; });
  p.padded = reads_outside(w);
  const bool pointwise = p.gemm && unit && !p.padded;  // the input is the im2col matrix
  // An input element is read by several output elements: through overlapping windows, or by each
  // output channel of its group.
  const bool reread = overlaps(w) || per_group > 1;
  const bool computed = e.producer(x) != nullptr;
  llvm::Type* t = memory_type(e.context(), e.dtype(x));
  if (p.padded || (computed && (reread || pointwise || made_from_windows(e, x)))) {
    p.source_shape = {xs[0], xs[1]};
    for (size_t d = 0; d < w.rank(); ++d)
      p.source_shape.push_back(p.padded ? w.pad_begin[d] +
                                              std::max(w.in[d], (w.out[d] - 1) * w.strides[d] -
                                                                    w.pad_begin[d] + w.extent(d))
                                        : w.in[d]);
    p.source = e.local_buffer(t, numel(p.source_shape));
  }
  if (p.gemm) {
    if (e.producer(n.inputs[1]) != nullptr)
      p.weights = e.local_buffer(t, numel(e.planned_shape(n.inputs[1])));
    if (!pointwise) p.col = e.local_buffer(t, xs[0] * dot * p.group * numel(w.out));
    p.product = e.local_buffer(t, numel(out));
  }
  e.state(n) = std::move(p);
}

void materialise_window(Emitter& e, const Node& n) {
  llvm::IRBuilderBase& b_ = e.b;
  const WindowPlan& p = e.state_of<WindowPlan>(n);
  const ValueId x = n.inputs[0];
  const Window& w = p.w;
  const size_t r = w.rank();
  if (p.source.defined()) {
    const LocalBuffer l = p.source;
    const Shape& ss = p.source_shape;
    if (p.padded) {
      Value* fill = n.op == OpKind::MaxPool ? lowest(e.dtype(x), l.type)
                                            : llvm::Constant::getNullValue(l.type);
      e.loop_nest(
          ss, true, [&](const Index& i) { b_.CreateStore(fill, e.at(l, e.offset_of(i, ss))); },
          short_rows(ss));
    }
    e.loop_nest(
        e.planned_shape(x), true,
        [&](const Index& i) {
          Index j = i;
          for (size_t d = 0; d < r; ++d)
            if (w.pad_begin[d] != 0)
              j[2 + d] = b_.CreateAdd(i[2 + d], e.i64(w.pad_begin[d]), "", true, true);
          b_.CreateStore(e.element(x, i), e.at(l, e.offset_of(j, ss)));
        },
        short_rows(ss));
  }
  if (!p.gemm) return;
  const ValueId wv = n.inputs[1];
  const Shape& ws = e.planned_shape(wv);
  if (p.weights.defined())
    e.loop_nest(ws, true, [&](const Index& i) {
      b_.CreateStore(e.element(wv, i), e.at(p.weights, e.offset_of(i, ws)));
    });
  const Shape& xs = e.planned_shape(x);
  if (p.col.defined()) {  // col [N, C, kernel..., out...]
    Shape cs = {xs[0], xs[1]};
    cs.insert(cs.end(), w.kernel.begin(), w.kernel.end());
    cs.insert(cs.end(), w.out.begin(), w.out.end());
    e.loop_nest(
        cs, true,
        [&](const Index& i) {
          const Index k(i.begin() + 2, i.begin() + 2 + r), o(i.begin() + 2 + r, i.end());
          b_.CreateStore(window_tap(e, n, p, i[0], i[1], o, k), e.at(p.col, e.offset_of(i, cs)));
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
  Value* a = p.weights.defined() ? e.frame_pointer(p.weights) : e.frame_pointer(wv);
  Value* b = p.col.defined()      ? e.frame_pointer(p.col)
             : p.source.defined() ? e.frame_pointer(p.source)
                                  : e.frame_pointer(x);
  e.call_gemm({.dtype = e.dtype(x),
               .M = e.i64(mg),
               .N = e.i64(numel(w.out)),
               .K = e.i64(dot),
               .a = a,
               .b = b,
               .c = e.frame_pointer(p.product),
               .a_off = std::move(a_off),
               .b_off = std::move(b_off)});
}

// Whether making v's element in a loop means computing windows (a direct Conv, a pool), which
// would then be read at strided positions: such an input is copied, so that the windows under it
// are computed in a loop of their own along contiguous positions.
bool made_from_windows(Emitter& e, ValueId v) {
  std::vector<ValueId> todo = {v};
  std::vector<bool> seen(e.graph.values.size(), false);
  while (!todo.empty()) {
    const ValueId u = todo.back();
    todo.pop_back();
    if (u == kNoValue || seen[u] || !e.producer(u) || e.held(u)) continue;
    seen[u] = true;
    const Node& n = *e.producer(u);
    if (windowed(n.op)) {
      if (!e.state_of<WindowPlan>(n).gemm) return true;
    } else if (const Lowering* l = op_def(n.op).lowering; !l || !l->reads_product) {
      todo.insert(todo.end(), n.inputs.begin(), n.inputs.end());
    }
  }
  return false;
}

// The source's element of image `image`, channel `channel` that tap k of output position o reads.
Value* window_tap(Emitter& e, const Node& n, const WindowPlan& p, Value* image, Value* channel,
                  const Index& o, const Index& k) {
  llvm::IRBuilderBase& b_ = e.b;
  const Window& w = p.w;
  Index j = {image, channel};
  for (size_t d = 0; d < w.rank(); ++d) {
    Value* pos = w.strides[d] == 1 ? o[d] : b_.CreateMul(o[d], e.i64(w.strides[d]), "", true, true);
    Value* tap =
        w.dilations[d] == 1 ? k[d] : b_.CreateMul(k[d], e.i64(w.dilations[d]), "", true, true);
    j.push_back(b_.CreateAdd(pos, tap, "", true, true));
  }
  if (p.source.defined() == false) return e.element(n.inputs[0], j);
  return b_.CreateLoad(p.source.type, e.at(p.source, e.offset_of(j, p.source_shape)));
}

// One of `values` (one per position along a spatial dim) at position `o`: a constant when they
// are all equal, else a load from a constant table.
Value* per_position(Emitter& e, const Ints& values, Value* o) {
  llvm::IRBuilderBase& b_ = e.b;
  if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; }))
    return e.i64(values[0]);
  Value* table = e.i64_array(values);
  return b_.CreateLoad(b_.getInt64Ty(), b_.CreateInBoundsGEP(b_.getInt64Ty(), table, o));
}

Value* generate_window(Emitter& e, const Node& n, const Index& idx) {
  llvm::IRBuilderBase& b_ = e.b;
  const WindowPlan& p = e.state_of<WindowPlan>(n);
  const ValueId y = n.outputs[0];
  const Shape& out = e.shape(y);
  const size_t r = p.w.rank();
  Value* v = nullptr;
  if (p.gemm) {
    v = b_.CreateLoad(p.product.type, e.at(p.product, e.offset_of(idx, out)));
  } else if (n.op == OpKind::Conv) {
    v = direct_conv(e, n, p, idx);
  } else {
    SG_ASSERT(out.size() == r + 2) << node_str(n) << ": a window element at a coalesced index";
    const Index o(idx.begin() + 2, idx.end());
    const DType t = e.dtype(y);
    for_each_tap(p.w.kernel, [&](const Ints& k) {
      Index kv;
      for (int64_t k_d : k) kv.push_back(e.i64(k_d));
      Value* x = window_tap(e, n, p, idx[0], idx[1], o, kv);
      v = !v ? x : n.op == OpKind::MaxPool ? max_of(b_, v, x, t) : b_.CreateFAdd(v, x);
    });
    const bool include_pad = n.attrs.get_int("count_include_pad", 0) != 0;
    Value* count = nullptr;  // the window's count (AveragePool), its inside count (MaxPool)
    Value* empty = nullptr;  // MaxPool: the window holds no input position
    for (size_t d = 0; d < r; ++d) {
      const Ints c = tap_counts(p.w, d, n.op == OpKind::AveragePool && include_pad);
      if (n.op == OpKind::AveragePool) {
        Value* cd = per_position(e, c, o[d]);
        count = count ? b_.CreateMul(count, cd, "", true, true) : cd;
      } else if (is_float(t) && std::count(c.begin(), c.end(), 0) > 0) {
        Value* none = b_.CreateICmpEQ(per_position(e, c, o[d]), e.i64(0));
        empty = empty ? b_.CreateOr(empty, none) : none;
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
    v = b_.CreateFAdd(v, e.element(n.inputs[2], e.channel_index(n, n.inputs[2], idx)));
  return v;
}

// The sum over the window and the input channels of the output's group, weight * input.
Value* direct_conv(Emitter& e, const Node& n, const WindowPlan& p, const Index& idx) {
  llvm::IRBuilderBase& b_ = e.b;
  const Shape& ws = e.planned_shape(n.inputs[1]);
  SG_ASSERT(idx.size() == ws.size()) << node_str(n) << ": a window element at a coalesced index";
  const int64_t cg = ws[1], mg = ws[0] / p.group;
  Value* m = idx[1];
  Value* first = e.i64(0);  // the group's first input channel
  if (p.group > 1)
    first = b_.CreateMul(mg == 1 ? m : b_.CreateUDiv(m, e.i64(mg)), e.i64(cg), "", true, true);
  const Index o(idx.begin() + 2, idx.end());
  Value* acc = nullptr;
  for (int64_t c = 0; c < cg; ++c) {
    Value* channel = c == 0 ? first : b_.CreateAdd(first, e.i64(c), "", true, true);
    for_each_tap(p.w.kernel, [&](const Ints& k) {
      Index kv, wi = {m, e.i64(c)};
      for (int64_t k_d : k) {
        kv.push_back(e.i64(k_d));
        wi.push_back(e.i64(k_d));
      }
      Value* prod_w = e.element(n.inputs[1], wi);
      Value* xv = window_tap(e, n, p, idx[0], channel, o, kv);
      acc = acc ? b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {xv->getType()}, {prod_w, xv, acc})
                : b_.CreateFMul(prod_w, xv);
    });
  }
  return acc;
}

// A GEMM's product is read like a region input (and the bias per channel); a window computed in
// place needs the output's real spatial index.
std::optional<std::vector<ValueId>> merge_window(Emitter& e, const Node& n) {
  if (e.state_of<WindowPlan>(n).gemm) return std::vector<ValueId>{};
  return std::nullopt;
}

}  // namespace

extern const Lowering kWindowLowering;
const Lowering kWindowLowering{.why_not = why_not_window,
                               .generate = generate_window,
                               .allocate = allocate_window,
                               .materialise = materialise_window,
                               .merge = merge_window,
                               .per_channel = conv_bias};

}  // namespace sgraph::ops
