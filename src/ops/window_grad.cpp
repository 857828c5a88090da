// Gradient rules of Conv, MaxPool, AveragePool and GlobalAveragePool (see src/ops/grad.h), made
// of ops the JIT fuses (Conv, Transpose, Reshape, Slice, Pad, elementwise), so the backward pass
// of a CNN compiles like its forward pass. On each spatial dim, output position o of a window op
// reads input position o * stride + k * dilation - pad_begin with tap k. A gradient is taken
// back from output to input positions by `spread`: zeros inserted between its elements for the
// stride (Unsqueeze, Pad, Reshape), then a Pad (negative: crop) placing it at the tap's offset.
//   Conv  dB = dY summed over all dims but the channels.
//         dX = Conv(dY spread by the strides, W flipped with its channel axes swapped per group,
//              dilations as the node's): a transposed convolution written as a plain one.
//         dW = a Conv with the roles changed: X with images as channels [C/g, g*N, ...] (per
//              group), by dY as the weights [M, N, out...], strides = the node's dilations,
//              dilations = the node's strides; its output [C/g, M, k...] transposed.
//   MaxPool: per tap in the window's order, the positions where the tap's input equals the max
//         and no earlier tap's did (the first maximum wins, as in the kernel's Indices; padding
//         is -inf and never wins), dY there, spread back. Indices get no gradient.
//   AveragePool: dY divided by each window's divisor, spread back by every tap.
//   GlobalAveragePool: dY divided by the spatial size, expanded over X.
#include "ops/window_grad.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "ops/window.h"

namespace sgraph::ops {
namespace {

Attributes swap_first_two(int64_t rank) {
  Ints perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[0], perm[1]);
  return {{"perm", perm}};
}

// X's spatial sizes; throws when one is not static.
Ints static_spatial(GradCtx& c) {
  const DimList x = c.dims(c.in(0));
  SG_CHECK(x.size() >= 3) << "X must have shape [N, C, spatial...], got " << dims_str(x);
  Ints in;
  for (size_t d = 2; d < x.size(); ++d) {
    SG_CHECK(x[d].is_static()) << "cannot differentiate: the spatial dims of X " << dims_str(x)
                               << " must be static (only batch and channels may vary)";
    in.push_back(x[d].size);
  }
  return in;
}

ValueId zeros_like(GradCtx& c, ValueId x) {
  return c.with_dims_of(c.b.expand(c.scalar(0, x), c.shape_of(x)), x);
}

ValueId sum_all(GraphBuilder& b, std::vector<ValueId> parts) {
  while (parts.size() > 1) {  // Sum takes up to 64 operands
    std::vector<ValueId> next;
    for (size_t i = 0; i < parts.size(); i += 64) {
      const std::vector<ValueId> chunk(
          parts.begin() + static_cast<ptrdiff_t>(i),
          parts.begin() + static_cast<ptrdiff_t>(std::min(parts.size(), i + 64)));
      next.push_back(chunk.size() == 1 ? chunk[0] : b.node(OpKind::Sum, chunk).front());
    }
    parts = std::move(next);
  }
  return parts.front();
}

// Per spatial dim, the positions o in [lo, hi) of a length-n grid whose begin + o * stride lands
// in [0, len).
struct Landing {
  Ints lo, hi;
  bool empty() const {
    for (size_t d = 0; d < lo.size(); ++d)
      if (lo[d] >= hi[d]) return true;
    return false;
  }
};

Landing landing(const Ints& n, const Ints& stride, const Ints& begin, const Ints& len) {
  Landing l;
  for (size_t d = 0; d < n.size(); ++d) {
    const int64_t s = stride[d], b = begin[d];
    l.lo.push_back(b >= 0 ? 0 : (-b + s - 1) / s);
    l.hi.push_back(b >= len[d] ? 0 : std::min(n[d], (len[d] - 1 - b) / s + 1));
  }
  return l;
}

// v [N, C, n...] spread onto [N, C, len...]: element o lands at begin + o * stride on each spatial
// dim, zeros elsewhere; those landing outside are dropped. Call only when some element lands.
ValueId spread(GradCtx& c, ValueId v, const Ints& n, const Ints& stride, const Ints& begin,
               const Ints& len) {
  GraphBuilder& b = c.b;
  const auto r = static_cast<int64_t>(n.size());
  const Landing l = landing(n, stride, begin, len);
  SG_ASSERT(!l.empty()) << "spread: nothing lands";
  Ints starts, ends, axes, kept(r);
  bool strided = false;
  for (int64_t d = 0; d < r; ++d) {
    kept[d] = l.hi[d] - l.lo[d];
    strided = strided || stride[d] > 1;
    if (kept[d] == n[d]) continue;
    starts.push_back(l.lo[d]);
    ends.push_back(l.hi[d]);
    axes.push_back(2 + d);
  }
  if (!axes.empty()) v = b.slice(v, b.ints(starts), b.ints(ends), b.ints(axes));
  Ints size = kept;
  if (strided) {  // [N, C, n0, 1, n1, 1, ...] padded to [N, C, n0, s0, ...], merged: n0 * s0, ...
    Ints unit, pads(2 * (2 + 2 * r), 0), shape{0, 0};
    for (int64_t d = 0; d < r; ++d) {
      unit.push_back(3 + 2 * d);
      pads[(2 + 2 * r) + 3 + 2 * d] = stride[d] - 1;
      size[d] = kept[d] * stride[d];
      shape.push_back(size[d]);
    }
    v = b.reshape(b.pad(b.unsqueeze(v, b.ints(unit)), b.ints(pads)), b.ints(shape));
  }
  Ints pads(2 * (2 + r), 0);
  for (int64_t d = 0; d < r; ++d) {
    pads[2 + d] = begin[d] + l.lo[d] * stride[d];
    pads[(2 + r) + 2 + d] = len[d] - pads[2 + d] - size[d];  // > -stride: trailing zeros cropped
  }
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
    v = b.pad(v, b.ints(pads));
  return v;
}

// Calls f(offset) for each kernel tap k in row-major order, offset = k * dilation - pad_begin.
template <class F>
void for_each_tap(const Window& w, F&& f) {
  Ints k(w.rank(), 0);
  for (int64_t t = 0, n = numel(w.kernel); t < n; ++t) {
    Ints offset(w.rank());
    for (size_t d = 0; d < w.rank(); ++d) offset[d] = k[d] * w.dilations[d] - w.pad_begin[d];
    f(offset);
    for (size_t d = w.rank(); d-- > 0 && ++k[d] == w.kernel[d];) k[d] = 0;
  }
}

// ---- Conv ------------------------------------------------------------------------------------

// dX = Conv(dY spread by the strides, W'): with input X [N, C, in...], W [M, C/g, k...],
// W'[gi * C/g + c, m, k] = W[gi * M/g + m, c, kernel - 1 - k] and
// dX[i] = sum_k dY at the output position whose tap (kernel - 1 - k) reads i.
ValueId conv_input_grad(GradCtx& c, const Window& w, const Shape& ws, int64_t group) {
  GraphBuilder& b = c.b;
  const auto r = static_cast<int64_t>(w.rank());
  Ints begin, len;
  for (int64_t d = 0; d < r; ++d) {
    const int64_t back = (w.kernel[d] - 1) * w.dilations[d];
    begin.push_back(back - w.pad_begin[d]);
    len.push_back(w.in[d] + back);
  }
  if (landing(w.out, w.strides, begin, len).empty()) return zeros_like(c, c.in(0));
  const ValueId dy = spread(c, c.dout(0), w.out, w.strides, begin, len);
  ValueId wt = c.in(1);
  if (group == 1) {
    wt = b.transpose(wt, swap_first_two(r + 2));
  } else {
    const int64_t mg = ws[0] / group, cg = ws[1];
    Ints split{group, mg, cg}, merged{group * cg, mg}, perm{0, 2, 1};
    for (int64_t d = 0; d < r; ++d) {
      split.push_back(w.kernel[d]);
      merged.push_back(w.kernel[d]);
      perm.push_back(3 + d);
    }
    wt = b.reshape(b.transpose(b.reshape(wt, b.ints(split)), Attributes{{"perm", perm}}),
                   b.ints(merged));
  }
  Ints starts, ends, axes;
  for (int64_t d = 0; d < r; ++d)
    if (w.kernel[d] > 1) {
      starts.push_back(-1);
      ends.push_back(std::numeric_limits<int64_t>::min());
      axes.push_back(2 + d);
    }
  if (!axes.empty())
    wt = b.slice(wt, b.ints(starts), b.ints(ends), b.ints(axes), b.ints(Ints(axes.size(), -1)));
  Attributes attrs{{"dilations", w.dilations}};
  if (group > 1) attrs.set("group", group);
  return b.conv(dy, wt, std::move(attrs));
}

// dW[m, c, k] = sum over images n and output positions o of dY[n, m, o] * X[n, gi * C/g + c,
// o * stride + k * dilation - pad]: a Conv whose "images" are X's channels per group and whose
// kernel is dY, with the end padding just long enough for kernel-sized outputs.
ValueId conv_weight_grad(GradCtx& c, const Window& w, const Shape& ws, int64_t group) {
  GraphBuilder& b = c.b;
  const auto r = static_cast<int64_t>(w.rank());
  Ints pads(2 * r), ends, axes, size;  // size: X's spatial sizes after the crop
  for (int64_t d = 0; d < r; ++d) {
    // The last input position any window reads, and the end padding (negative: a crop) to it.
    const int64_t last = (w.kernel[d] - 1) * w.dilations[d] + (w.out[d] - 1) * w.strides[d];
    const int64_t end = last - w.pad_begin[d] - (w.in[d] - 1);
    if (w.in[d] + end <= 0) return zeros_like(c, c.in(1));  // every window reads padding only
    pads[d] = w.pad_begin[d];
    pads[r + d] = std::max<int64_t>(0, end);
    size.push_back(w.in[d] + std::min<int64_t>(0, end));
    if (end < 0) {
      ends.push_back(w.in[d] + end);
      axes.push_back(2 + d);
    }
  }
  ValueId x = c.in(0);
  if (!axes.empty()) x = b.slice(x, b.ints(Ints(axes.size(), 0)), b.ints(ends), b.ints(axes));
  if (group == 1) {
    x = b.transpose(x, swap_first_two(r + 2));  // [C, N, in...]
  } else {                                      // [N, g, C/g, in...] -> [C/g, g * N, in...]
    const int64_t cg = ws[1];
    Ints split{0, group, cg}, merged{cg, -1}, perm{2, 1, 0};
    for (int64_t d = 0; d < r; ++d) {
      split.push_back(size[d]);
      merged.push_back(size[d]);
      perm.push_back(3 + d);
    }
    x = b.reshape(b.transpose(b.reshape(x, b.ints(split)), Attributes{{"perm", perm}}),
                  b.ints(merged));
  }
  const ValueId dy = b.transpose(c.dout(0), swap_first_two(r + 2));  // [M, N, out...]
  Attributes attrs{{"strides", w.dilations}, {"dilations", w.strides}, {"pads", pads}};
  if (group > 1) attrs.set("group", group);
  const ValueId dw = b.transpose(b.conv(x, dy, std::move(attrs)), swap_first_two(r + 2));
  return c.with_dims_of(dw, c.in(1));
}

// ---- pools -----------------------------------------------------------------------------------

Window pool_window(GradCtx& c) {
  Ints in = static_spatial(c);
  Ints kernel = read_spatial(c.attrs(), "kernel_shape", in.size(), 0, 1);
  return forward_window(c.attrs(), std::move(in), std::move(kernel),
                        c.attrs().get_int("ceil_mode", 0) != 0, /*clip_last=*/true);
}

}  // namespace

void grad_conv(GradCtx& c) {
  const ValueId w = c.in(1), dy = c.dout(0);
  Ints in = static_spatial(c);
  const std::optional<Shape> ws = c.static_shape(w);
  SG_CHECK(ws) << "cannot differentiate: the shape of W " << dims_str(c.dims(w))
               << " must be static";
  const Window win = forward_window(c.attrs(), std::move(in), Shape(ws->begin() + 2, ws->end()));
  const int64_t group = c.attrs().get_int("group", 1);
  if (c.has_in(2) && c.wants(2)) {
    Ints axes{0};
    for (int64_t d = 2; d < c.rank(dy); ++d) axes.push_back(d);
    c.set(2, c.b.reduce_sum(dy, Attributes{{"axes", axes}, {"keepdims", int64_t{0}}}));
  }
  if (c.wants(0)) c.set(0, conv_input_grad(c, win, *ws, group));
  if (c.wants(1)) c.set(1, conv_weight_grad(c, win, *ws, group));
}

void grad_max_pool(GradCtx& c) {
  if (!c.has_dout(0)) return;
  GraphBuilder& b = c.b;
  const Window w = pool_window(c);
  const auto r = static_cast<int64_t>(w.rank());
  const ValueId x = c.in(0), y = c.out(0), dy = c.dout(0);
  // X padded with -inf so that every window reads inside it.
  Ints pads(2 * (2 + r), 0);
  for (int64_t d = 0; d < r; ++d) {
    pads[2 + d] = w.pad_begin[d];
    pads[(2 + r) + 2 + d] = std::max<int64_t>(
        0, (w.out[d] - 1) * w.strides[d] + w.extent(d) - w.pad_begin[d] - w.in[d]);
  }
  const bool padded = std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; });
  const ValueId xp =
      padded ? b.pad(x, b.ints(pads), c.scalar(-std::numeric_limits<double>::infinity(), x)) : x;
  const ValueId zero = c.scalar(0, dy);
  ValueId taken = kNoValue;  // some earlier tap holds the maximum
  std::vector<ValueId> parts;
  for_each_tap(w, [&](const Ints& offset) {
    // A tap that reads padding only never holds the maximum (padding is -inf).
    if (landing(w.out, w.strides, offset, w.in).empty()) return;
    Ints starts, ends, axes;
    for (int64_t d = 0; d < r; ++d) {
      starts.push_back(offset[d] + w.pad_begin[d]);
      ends.push_back(starts.back() + (w.out[d] - 1) * w.strides[d] + 1);
      axes.push_back(2 + d);
    }
    ValueId hit = b.equal(b.slice(xp, b.ints(starts), b.ints(ends), b.ints(axes),
                                  b.ints(Ints(w.strides.begin(), w.strides.end()))),
                          y);
    if (taken != kNoValue) {  // the positions this tap newly takes: equal and not taken before
      const ValueId now = b.logical_or(taken, hit);
      hit = b.logical_xor(now, taken);
      taken = now;
    } else {
      taken = hit;
    }
    parts.push_back(spread(c, b.where(hit, dy, zero), w.out, w.strides, offset, w.in));
  });
  c.set(0, parts.empty() ? zeros_like(c, x) : sum_all(b, std::move(parts)));
}

void grad_average_pool(GradCtx& c) {
  const Window w = pool_window(c);
  const ValueId x = c.in(0), dy = c.dout(0);
  const bool include_pad = c.attrs().get_int("count_include_pad", 0) != 0;
  // Each output position's 1 / divisor (0 for a window of padding only), as the kernel counts:
  // the taps inside X, or with count_include_pad those before the end of the end padding.
  std::vector<Ints> counts(w.rank());
  for (size_t d = 0; d < w.rank(); ++d)
    for (int64_t o = 0; o < w.out[d]; ++o) {
      int64_t n = 0;
      for (int64_t k = 0; k < w.kernel[d]; ++k) {
        const int64_t i = o * w.strides[d] - w.pad_begin[d] + k * w.dilations[d];
        n += include_pad ? i < w.in[d] + w.pad_end[d] : i >= 0 && i < w.in[d];
      }
      counts[d].push_back(n);
    }
  Tensor scale(c.dtype(x), w.out);
  visit_float(scale.dtype(), [&]<class T>() {
    Ints o(w.rank(), 0);
    for (int64_t i = 0; i < scale.numel(); ++i) {
      int64_t n = 1;
      for (size_t d = 0; d < w.rank(); ++d) n *= counts[d][o[d]];
      scale.data<T>()[i] = n == 0 ? T(0) : T(1) / static_cast<T>(n);
      for (size_t d = w.rank(); d-- > 0 && ++o[d] == w.out[d];) o[d] = 0;
    }
  });
  const ValueId g = c.b.mul(dy, c.b.constant("", std::move(scale)));
  std::vector<ValueId> parts;
  for_each_tap(w, [&](const Ints& offset) {
    if (!landing(w.out, w.strides, offset, w.in).empty())
      parts.push_back(spread(c, g, w.out, w.strides, offset, w.in));
  });
  c.set(0, parts.empty() ? zeros_like(c, x) : sum_all(c.b, std::move(parts)));
}

void grad_global_average_pool(GradCtx& c) {
  const ValueId x = c.in(0), dy = c.dout(0);
  c.set(0, c.with_dims_of(c.b.expand(c.b.div(dy, c.count_ratio(x, dy)), c.shape_of(x)), x));
}

}  // namespace sgraph::ops
