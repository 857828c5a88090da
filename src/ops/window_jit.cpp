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
//   - K <= kDirectMax for depthwise convs, K <= kDenseDirectMax for dense ones (small stems):
//     direct. The output element is a straight-line sum of K products weight * source element,
//     made in the consumer's loop, so depthwise conv + BatchNormalization + Relu is one loop. Not
//     when the innermost spatial dim is strided and a group has several output channels: each
//     channel would gather the same strided inputs again (cnn_bn_gap, whose stem is a 3x3
//     stride-2 conv to 8 channels, ran in 15 us so, 12.5 us through the GEMM);
//   - otherwise im2col + GEMM. A nest writes the im2col matrix [N, group, K, out] (none for a 1x1
//     kernel with unit strides and no pads: the source is the matrix), then one call of the
//     runtime GEMM (sgraph_gemm_f32/f64) multiplies each group's weights [M/group, K] (in place;
//     copied when computed in the region) by it, into a local buffer [N, M, out...]. The bias and
//     the consumers (BatchNormalization, Relu, a residual Add) read that buffer as the epilogue,
//     and their loops coalesce like any elementwise nest's. A depthwise conv this way would be one
//     GEMM call per channel of a 1-row matrix: ppocr_mobile_v2_cls ran 2.5x slower so.
//     A GEMM conv of f32 with constant weights, one group, and a 3-wide kernel of unit stride and
//     dilation along its last spatial dim (1-D or 2-D) calls the runtime's Winograd F(2,3)
//     instead (ops/winograd.h: 2/3 of the multiply-adds) where winograd_pays: no im2col matrix,
//     the source read by its input transform; its output fills the same product buffer.
// Pools: MaxPool is the max over the window (padding never wins; a window of padding only gives
// the lowest value, as in the interpreter), AveragePool the sum over the window divided by its
// count: the positions inside the input, or with count_include_pad those inside the padded input
// (never past the end pads), a table per spatial dim when it varies.
//
// A per-channel operand (BatchNormalization's parameters, Conv's bias: [C] along dim 1) is read
// at the output element's channel (channel_index).
//
// In a dynamic region the batch and spatial sizes may be symbols (the weights' shape is static):
// an output size is then floor((in + pads - extent) / stride) + 1 (sym_forward_window), the
// padded copy spans pad_begin + in + pad_end, the im2col matrix and the product are sized per
// call, the GEMM's item offsets are filled by a nest when the batch or the spatial sizes are
// symbolic, and an AveragePool's count per position is computed from the position (unit
// dilation) instead of read from a table.
#include <algorithm>

#include "ir/sym_shape.h"
#include "ops/lowering.h"
#include "ops/op.h"
#include "ops/window.h"
#include "ops/winograd.h"

namespace sgraph::ops {

using llvm::Value;

namespace {

constexpr int64_t kDirectMax = 32;  // longest dot product a Conv computes directly
// ... when its groups have several output channels each (a dense conv): see allocate_window.
constexpr int64_t kDenseDirectMax = 16;

bool is_pool(OpKind op) { return op == OpKind::MaxPool || op == OpKind::AveragePool; }
bool windowed(OpKind op) { return op == OpKind::Conv || is_pool(op); }

struct WindowPlan;
bool made_from_windows(Emitter& e, ValueId v);
llvm::Value* window_tap(Emitter& e, const Node& n, const WindowPlan& p, llvm::Value* image,
                        llvm::Value* channel, const Index& o, const Index& k);
llvm::Value* direct_conv(Emitter& e, const Node& n, const WindowPlan& p, const Index& idx);

struct WindowPlan {  // Conv, MaxPool, AveragePool
  Window w;          // kernel, strides, dilations, pads; the sizes of static dims
  SymShape in, out;  // the spatial sizes (symbols in a dynamic region)
  int64_t group = 1;
  bool gemm = false;      // Conv through im2col + GEMM, else computed directly
  bool padded = false;    // some window reads outside the input: the source is padded
  LocalBuffer source;     // the input copied (and padded); undefined: read the input itself
  SymShape source_shape;  // [N, C, padded spatial...]
  LocalBuffer weights;    // GEMM: the weights, when computed in the region
  LocalBuffer col;        // GEMM: the im2col matrix; undefined: the source itself (1x1 kernel)
  LocalBuffer product;    // GEMM: [N, M, out...]
  // GEMM by Winograd's F(2,3) along the last spatial dim (winograd_fits): its scratch, no col;
  // `wino_rows`: F(2x2,3x3), along the rows too.
  bool winograd = false, wino_rows = false;
  LocalBuffer wino_v, wino_y;
  // GEMM items (image, group) whose offsets depend on symbols: filled per call.
  LocalBuffer a_offsets, b_offsets;
  bool symbolic(size_t d) const { return in[d].symbolic(); }
};

// v's shape as planned, with its symbols in a dynamic region.
SymShape planned_dims(Emitter& e, ValueId v) {
  return e.dynamic() ? e.dims(v) : to_sym(e.planned_shape(v));
}

// Whether the loops around a copy nest's rows may be unrolled: only when rows are short, so the
// loop's overhead per row counts. Unrolled around long rows, the loops of these nests made blocks
// of thousands of instructions: ppocr_mobile_v2_cls took 3 s to compile (the machine scheduler,
// quadratic in a block's size, ~150 MB at its peak), 1 s without them, and ran no slower.
bool short_rows(const SymShape& s) {
  return s.empty() || (!s.back().symbolic() && s.back().offset < 32);
}

// Whether some window reads outside the input on some spatial dim (padding, or past the end; for
// a symbolic size, any end padding).
bool reads_outside(const WindowPlan& p) {
  const Window& w = p.w;
  for (size_t d = 0; d < w.rank(); ++d)
    if (w.pad_begin[d] > 0 ||
        (p.symbolic(d) ? w.pad_end[d] > 0
                       : (w.out[d] - 1) * w.strides[d] - w.pad_begin[d] + w.extent(d) > w.in[d]))
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
WindowPlan window_of(const Node& n, const SymShape& xs, const Shape* ws, int64_t group,
                     const SymShape& out) {
  SG_CHECK(xs.size() >= 3) << node_str(n) << ": input shape " << sym_shape_str(xs, {})
                           << " is not [N, C, spatial...]";
  const SymShape in(xs.begin() + 2, xs.end());
  SymShape expect = {xs[0], xs[1]};
  std::optional<SymWindow> sw;
  if (ws) {
    SG_CHECK(ws->size() == xs.size() && group >= 1 && (*ws)[0] % group == 0 && !xs[1].symbolic() &&
             (*ws)[1] * group == xs[1].offset)
        << node_str(n) << ": weights " << shape_str(*ws) << " with group " << group
        << " do not fit input " << sym_shape_str(xs, {});
    sw = sym_forward_window(n.attrs, in, Ints(ws->begin() + 2, ws->end()));
    expect[1] = SymDim::constant((*ws)[0]);
  } else {
    SG_CHECK(n.attrs.has("kernel_shape")) << node_str(n) << ": no kernel_shape";
    sw = sym_forward_window(n.attrs, in, read_spatial(n.attrs, "kernel_shape", in.size(), 0, 1),
                            n.attrs.get_int("ceil_mode", 0) != 0, /*clip_last=*/true);
  }
  SG_CHECK(sw) << node_str(n)
               << ": its output size over a symbolic size is no rounded-down division (auto_pad "
                  "SAME or ceil_mode with a stride above 1)";
  SG_CHECK(numel(sw->w.kernel) > 0) << node_str(n) << ": an empty kernel";
  expect.insert(expect.end(), sw->out.begin(), sw->out.end());
  SG_CHECK(out == expect) << node_str(n) << ": output shape " << sym_shape_str(out, {})
                          << " is not " << sym_shape_str(expect, {}) << " for input "
                          << sym_shape_str(xs, {});
  WindowPlan p;
  p.w = std::move(sw->w);
  p.in = std::move(sw->in);
  p.out = std::move(sw->out);
  p.group = group;
  return p;
}

// The GEMM's items' offsets depend on symbols: the batch or a spatial size is symbolic.
bool runtime_items(const SymShape& xs, const SymShape& out) {
  return !is_static(SymShape(xs.begin(), xs.begin() + 1)) ||
         !is_static(SymShape(out.begin() + 2, out.end()));
}

// Whether a GEMM conv goes through the runtime's Winograd F(2,3) (ops/winograd.h): f32, one
// group of several output channels, constant weights, 1 or 2 spatial dims, the last with a 3-wide
// kernel of unit stride and dilation, and sizes where it pays (a symbolic width is taken to).
bool winograd_fits(Emitter& e, const Node& n, const WindowPlan& p, const Shape& ws) {
  const Window& w = p.w;
  const size_t r = w.rank();
  const ValueId wv = n.inputs[1];
  if (!p.gemm || p.group != 1 || e.dtype(n.inputs[0]) != DType::f32 || (r != 1 && r != 2) ||
      w.kernel.back() != 3 || w.strides.back() != 1 || w.dilations.back() != 1 || ws[0] < 2 ||
      ws[1] < 1 || e.producer(wv) != nullptr || !e.graph.values[wv].initializer.defined())
    return false;
  const int64_t kh = r == 2 ? w.kernel[0] : 1;
  const SymDim& ow = p.out.back();
  return winograd_pays(ws[0], ws[1] * kh, ow.symbolic() ? 8 : ow.offset);
}

void allocate_window(Emitter& e, const Node& n) {
  const ValueId x = n.inputs[0];
  const SymShape xs = planned_dims(e, x);
  const SymShape out = planned_dims(e, n.outputs[0]);
  const bool conv = n.op == OpKind::Conv;
  const Shape* ws = conv ? &e.planned_shape(n.inputs[1]) : nullptr;
  WindowPlan p = window_of(n, xs, ws, conv ? n.attrs.get_int("group", 1) : 1, out);
  const Window& w = p.w;
  const int64_t dot = conv ? (*ws)[1] * numel(w.kernel) : 0;
  // Direct unless the dot products are long, or strided along the innermost (vector) dim with
  // several output channels per group: each would gather the same strided inputs again. A dense
  // conv (several output channels per group) goes through the GEMM from shorter dot products
  // than a depthwise one: directly, each output channel reloads every input vector of its dot
  // product and sums it in one chain per vector of positions, where the GEMM's register tile
  // reuses each input across 48 channels. Measured on ppocr_mobile_v2_cls, whose late 1x1 convs
  // have 32 input channels and rows of 25-100 positions (one of them took 12% of a call directly):
  // every shape 10-15% faster at 1 thread and 3-7% at 2 with those through the GEMM; limits of
  // 4, 8 and 16 were equal there, and the other models' convs (K 3-27) kept their speed at 16.
  const int64_t per_group = conv ? (*ws)[0] / p.group : 1;
  p.gemm = conv && (dot > (per_group > 1 ? kDenseDirectMax : kDirectMax) ||
                    (w.strides.back() > 1 && per_group > 1));
  const bool unit = numel(w.kernel) == 1 && std::all_of(w.strides.begin(), w.strides.end(),
                                                        [](int64_t s) { return s == 1; });
  p.padded = reads_outside(p);
  const bool pointwise = p.gemm && unit && !p.padded;  // the input is the im2col matrix
  // An input element is read by several output elements: through overlapping windows, or by each
  // output channel of its group.
  const bool reread = overlaps(w) || per_group > 1;
  const bool computed = e.producer(x) != nullptr;
  llvm::Type* t = memory_type(e.context(), e.dtype(x));
  if (p.padded || (computed && (reread || pointwise || made_from_windows(e, x)))) {
    p.source_shape = {xs[0], xs[1]};
    for (size_t d = 0; d < w.rank(); ++d) {
      const int64_t pb = w.pad_begin[d], pe = w.pad_end[d];
      if (p.symbolic(d))  // (a window never reads past the end padding)
        p.source_shape.push_back(p.padded ? p.in[d].plus(pb + pe) : p.in[d]);
      else
        p.source_shape.push_back(SymDim::constant(
            p.padded ? pb + std::max(w.in[d], (w.out[d] - 1) * w.strides[d] - pb + w.extent(d))
                     : w.in[d]));
    }
    p.source = e.local_buffer(t, p.source_shape);
  }
  p.winograd = conv && winograd_fits(e, n, p, *ws);
  if (p.winograd) {
    const bool two = w.rank() == 2;
    p.wino_rows = two && w.kernel[0] == 3 && w.strides[0] == 1 && w.dilations[0] == 1;
    // [N, 4, OH, ceil(OW / 2), K] and [.., M] fit in [N, 2, OH, OW + 1, K] and [.., M]; with rows
    // [N, 16, ceil(OH / 2), ceil(OW / 2), C] in [N, 4, OH + 1, OW + 1, C].
    const SymDim oh = two ? p.out[0] : SymDim::constant(1);
    SymShape vs = p.wino_rows
                      ? SymShape{xs[0], SymDim::constant(4), oh.plus(1), p.out.back().plus(1)}
                      : SymShape{xs[0], SymDim::constant(2), oh, p.out.back().plus(1)};
    SymShape ys = vs;
    vs.push_back(SymDim::constant(p.wino_rows ? (*ws)[1] : (*ws)[1] * (two ? w.kernel[0] : 1)));
    ys.push_back(SymDim::constant((*ws)[0]));
    p.wino_v = e.local_buffer(t, vs);
    p.wino_y = e.local_buffer(t, ys);
    p.product = e.local_buffer(t, out);
  } else if (p.gemm) {
    if (e.producer(n.inputs[1]) != nullptr) p.weights = e.local_buffer(t, numel(*ws));
    if (!pointwise) {
      SymShape cs = {xs[0], xs[1]};
      for (int64_t k : w.kernel) cs.push_back(SymDim::constant(k));
      cs.insert(cs.end(), p.out.begin(), p.out.end());
      p.col = e.local_buffer(t, cs);
    }
    p.product = e.local_buffer(t, out);
    if (runtime_items(xs, out)) {
      const SymShape items = {xs[0], SymDim::constant(p.group)};
      p.a_offsets = e.local_buffer(e.b.getInt64Ty(), items);
      p.b_offsets = e.local_buffer(e.b.getInt64Ty(), items);
    }
  }
  e.state(n) = std::move(p);
}

void materialise_window(Emitter& e, const Node& n) {
  llvm::IRBuilderBase& b_ = e.b;
  const WindowPlan& p = e.state_of<WindowPlan>(n);
  const ValueId x = n.inputs[0];
  const Window& w = p.w;
  const size_t r = w.rank();
  const SymShape xs = planned_dims(e, x);
  if (p.source.defined()) {
    const LocalBuffer l = p.source;
    const SymShape& ss = p.source_shape;
    if (p.padded) {
      // The border alone (the nest below copies the interior): per row along the innermost
      // spatial dim, the whole row when it lies in another spatial dim's padding, else its two
      // ends. (Filling the whole copy first wrote most of it twice: memset was 5% of a conv
      // network's run.)
      Value* fill = n.op == OpKind::MaxPool ? lowest(e.dtype(x), l.type)
                                            : llvm::Constant::getNullValue(l.type);
      SymShape rows = ss;
      rows.back() = SymDim::constant(1);
      e.loop_nest(
          rows, true,
          [&](const Index& i) {
            Value* border = b_.getFalse();
            for (size_t d = 0; d + 1 < r; ++d) {
              Value* lo = e.i64(w.pad_begin[d]);
              Value* hi = b_.CreateAdd(lo, e.dim(xs[2 + d]), "", true, true);
              border = b_.CreateOr(border, b_.CreateOr(b_.CreateICmpSLT(i[2 + d], lo),
                                                       b_.CreateICmpSGE(i[2 + d], hi)));
            }
            Value* size = e.dim(ss.back());
            Value* pb = e.i64(w.pad_begin[r - 1]);
            Value* head = b_.CreateSelect(border, size, pb);  // [0, head), then [tail, size)
            Value* tail =
                b_.CreateSelect(border, size, b_.CreateAdd(pb, e.dim(xs.back()), "", true, true));
            Value* row = e.offset_of(i, ss);
            const auto fill_from = [&](Value* from, Value* count) {
              e.inner_loop(count, {}, [&](Value* j, const auto&) {
                b_.CreateStore(
                    fill, e.at(l, b_.CreateAdd(row, b_.CreateAdd(from, j, "", true, true), "", true,
                                               true)));
                return std::vector<Value*>{};
              });
            };
            fill_from(e.i64(0), head);
            fill_from(tail, b_.CreateSub(size, tail, "", true, true));
          },
          short_rows(ss));
    }
    e.loop_nest(
        xs, true,
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
  if (p.winograd) {
    const bool two = r == 2;
    const SymShape& ss = p.source.defined() ? p.source_shape : xs;
    e.call_winograd({.weights = e.frame_pointer(wv),
                     .src = p.source.defined() ? e.frame_pointer(p.source) : e.frame_pointer(x),
                     .v = e.frame_pointer(p.wino_v),
                     .y = e.frame_pointer(p.wino_y),
                     .out = e.frame_pointer(p.product),
                     .M = ws[0],
                     .C = ws[1],
                     .KH = two ? w.kernel[0] : 1,
                     .sh = two ? w.strides[0] : 1,
                     .dh = two ? w.dilations[0] : 1,
                     .N = e.dim(xs[0]),
                     .Hs = two ? e.dim(ss[2]) : e.i64(1),
                     .Ws = e.dim(ss.back()),
                     .OH = two ? e.dim(p.out[0]) : e.i64(1),
                     .OW = e.dim(p.out.back()),
                     .rows = p.wino_rows});
    return;
  }
  if (p.weights.defined())
    e.loop_nest(ws, true, [&](const Index& i) {
      b_.CreateStore(e.element(wv, i), e.at(p.weights, e.offset_of(i, ws)));
    });
  if (p.col.defined()) {  // col [N, C, kernel..., out...]
    SymShape cs = {xs[0], xs[1]};
    for (int64_t k : w.kernel) cs.push_back(SymDim::constant(k));
    cs.insert(cs.end(), p.out.begin(), p.out.end());
    e.loop_nest(
        cs, true,
        [&](const Index& i) {
          const Index k(i.begin() + 2, i.begin() + 2 + r), o(i.begin() + 2 + r, i.end());
          b_.CreateStore(window_tap(e, n, p, i[0], i[1], o, k), e.at(p.col, e.offset_of(i, cs)));
        },
        short_rows(cs));
  }
  // Batch item i = (image, group): weights of group i % g, its im2col matrix, its output rows.
  const int64_t mg = ws[0] / p.group, dot = ws[1] * numel(w.kernel);
  std::vector<int64_t> a_off, b_off;
  Value* items = nullptr;
  Value* positions = e.count(p.out);  // the output positions per image: the GEMM's N
  if (p.a_offsets.defined()) {
    const SymShape is = {xs[0], SymDim::constant(p.group)};
    e.loop_nest(is, false, [&](const Index& i) {
      Value* item = e.offset_of(i, is);
      b_.CreateStore(b_.CreateMul(i[1], e.i64(mg * dot)), e.at(p.a_offsets, item));
      b_.CreateStore(b_.CreateMul(item, b_.CreateMul(e.i64(dot), e.count(p.out))),
                     e.at(p.b_offsets, item));
    });
    items = e.count(is);
  } else {
    const int64_t count = xs[0].offset * p.group, n_out = numel(eval_shape(p.out, {}));
    for (int64_t i = 0; i < count; ++i) {
      a_off.push_back(i % p.group * mg * dot);
      b_off.push_back(i * dot * n_out);
    }
  }
  Value* a = p.weights.defined() ? e.frame_pointer(p.weights) : e.frame_pointer(wv);
  Value* b = p.col.defined()      ? e.frame_pointer(p.col)
             : p.source.defined() ? e.frame_pointer(p.source)
                                  : e.frame_pointer(x);
  // Weights that are a constant of the graph, read in place: packed once per plan, for the short
  // products (few output positions) whose time packing them on every call would dominate.
  const bool const_a =
      e.dtype(x) == DType::f32 && !p.weights.defined() && e.graph.values[wv].initializer.defined();
  e.call_gemm({.dtype = e.dtype(x),
               .M = e.i64(mg),
               .N = positions,
               .K = e.i64(dot),
               .a = a,
               .b = b,
               .c = e.frame_pointer(p.product),
               .a_off = std::move(a_off),
               .b_off = std::move(b_off),
               .items = items,
               .a_items = items ? e.frame_pointer(p.a_offsets) : nullptr,
               .b_items = items ? e.frame_pointer(p.b_offsets) : nullptr,
               .const_a = const_a});
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

// The number of taps of the window at output position o along a symbolic spatial dim d that lie
// inside the input (unit dilation): min(extent, in + pad_begin - o * stride) - max(0, pad_begin -
// o * stride).
Value* inside_count(Emitter& e, const WindowPlan& p, size_t d, Value* o) {
  llvm::IRBuilderBase& b_ = e.b;
  const Window& w = p.w;
  Value* start = b_.CreateSub(e.i64(w.pad_begin[d]), b_.CreateMul(o, e.i64(w.strides[d])));
  Value* end = b_.CreateAdd(e.dim(p.in[d]), start);
  Value* hi = b_.CreateSelect(b_.CreateICmpSLT(end, e.i64(w.extent(d))), end, e.i64(w.extent(d)));
  Value* lo = b_.CreateSelect(b_.CreateICmpSGT(start, e.i64(0)), start, e.i64(0));
  return b_.CreateSub(hi, lo);
}

Value* generate_window(Emitter& e, const Node& n, const Index& idx) {
  llvm::IRBuilderBase& b_ = e.b;
  const WindowPlan& p = e.state_of<WindowPlan>(n);
  const ValueId y = n.outputs[0];
  const SymShape out = e.dims(y);
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
      if (p.symbolic(d)) {  // (why_not_dynamic: no window of padding only)
        if (n.op != OpKind::AveragePool) continue;
        const bool inside = include_pad || (p.w.pad_begin[d] == 0 && p.w.pad_end[d] == 0);
        Value* cd = inside ? e.i64(p.w.kernel[d]) : inside_count(e, p, d, o[d]);
        count = count ? b_.CreateMul(count, cd, "", true, true) : cd;
        continue;
      }
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

// A direct window's element is its taps, over the source copy or the input itself.
MadeInline made_inline_window(Emitter& e, const Node& n) {
  const WindowPlan& p = e.state_of<WindowPlan>(n);
  if (p.gemm) return MadeInline::no;
  return p.source.defined() ? MadeInline::from_source : MadeInline::from_input;
}

// The input's batch and spatial sizes may be symbols; the weights (and so the channels) are
// static, and so is every window parameter. A symbolic size's geometry must be a rounded-down
// division (see window_of); no window may hold padding only (MaxPool's lowest value would need
// the size), and an AveragePool excluding padding from its counts needs unit dilation there.
std::string why_not_dynamic_window(const Graph&, const Node& n,
                                   const std::vector<const SymShape*>& in, const SymShape& out) {
  if (in.empty() || !in[0]) return "no input";
  const bool conv = n.op == OpKind::Conv;
  if (conv && (in.size() < 2 || !in[1] || !is_static(*in[1])))
    return "its weights are of symbolic shape";
  if (conv && in.size() > 2 && in[2] && !is_static(*in[2])) return "its bias is of symbolic shape";
  try {
    const Shape ws = conv ? eval_shape(*in[1], {}) : Shape{};
    const WindowPlan p =
        window_of(n, *in[0], conv ? &ws : nullptr, conv ? n.attrs.get_int("group", 1) : 1, out);
    const bool include_pad = n.attrs.get_int("count_include_pad", 0) != 0;
    for (size_t d = 0; d < p.w.rank(); ++d) {
      if (!p.symbolic(d)) continue;
      const int64_t pb = p.w.pad_begin[d], pe = p.w.pad_end[d], ext = p.w.extent(d);
      if (pb >= ext || pe >= ext) return "a window of padding only along a symbolic size";
      if (n.op == OpKind::AveragePool && !include_pad && (pb > 0 || pe > 0) &&
          p.w.dilations[d] != 1)
        return "a dilated AveragePool excluding padding along a symbolic size";
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

extern const Lowering kWindowLowering;
const Lowering kWindowLowering{.why_not = why_not_window,
                               .why_not_dynamic = why_not_dynamic_window,
                               .generate = generate_window,
                               .allocate = allocate_window,
                               .materialise = materialise_window,
                               .merge = merge_window,
                               .per_channel = conv_bias,
                               .made_inline = made_inline_window};

}  // namespace sgraph::ops
