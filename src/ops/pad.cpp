// Pad: grows (or, with negative pads, crops) each axis; new elements are a constant, the edge
// value or a mirror image (reflect). Negative pads crop first, then the positive ones pad the
// cropped tensor, as onnxruntime and the ONNX reference do.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "ops/int_math.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {

std::optional<PadMode> pad_mode(const Node& n) {
  const std::string m = n.attrs.get_string("mode", "constant");
  if (m == "constant") return PadMode::constant;
  if (m == "edge") return PadMode::edge;
  if (m == "reflect") return PadMode::reflect;
  return std::nullopt;
}

constexpr int64_t kMaxPad = int64_t{1} << 60;

PadParams pad_params(const Node& n, size_t rank, const Tensor* pads_in, const Tensor* axes_in) {
  const Ints pads = pads_in ? pads_in->to_int64() : n.attrs.get_ints("pads");
  const auto r = static_cast<int64_t>(rank);
  Ints axes;
  if (axes_in) {
    for (int64_t a : axes_in->to_int64()) axes.push_back(normalize_axis(a, r, "Pad axis"));
  } else {
    for (int64_t a = 0; a < r; ++a) axes.push_back(a);
  }
  const size_t k = axes.size();
  SG_CHECK(pads.size() == 2 * k) << "pads has " << pads.size() << " values but needs " << 2 * k
                                 << " (begin and end for " << k << " axes) for an input of rank "
                                 << rank;
  PadParams p{PadMode::constant, Ints(rank, 0), Ints(rank, 0)};
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < k; ++i) {
    SG_CHECK(!seen[axes[i]]) << "Pad axis " << axes[i] << " is repeated";
    seen[axes[i]] = true;
    // Bounded so that sizes and crops computed from them cannot overflow (a real pad is far
    // smaller; a larger one could not be allocated anyway).
    for (int64_t v : {pads[i], pads[i + k]})
      SG_CHECK(v > -kMaxPad && v < kMaxPad)
          << "pad " << v << " on axis " << axes[i] << " is out of range (|pad| < 2^60)";
    p.begin[axes[i]] = pads[i];
    p.end[axes[i]] = pads[i + k];
  }
  const std::optional<PadMode> mode = pad_mode(n);
  SG_CHECK(mode) << "unknown Pad mode '" << n.attrs.get_string("mode")
                 << "' (expected constant, reflect or edge)";
  p.mode = *mode;
  // The opset-2 `value` attribute goes with the `pads` attribute.
  if (!pads_in) p.value = n.attrs.get_float("value", 0.0);
  return p;
}

namespace {

// One axis after resolving its pads: output index o reads input index map[o], or the constant
// where map[o] is -1. The output run [before, before + len) is the cropped input, contiguous.
struct AxisPlan {
  int64_t before = 0, len = 0, first = 0;  // first: input index of the first kept element
  int64_t out = 0;                         // the output size
  std::vector<int64_t> map;
};

// Each axis's plan for an input of `shape`, checking the pads fit it. The index maps (one entry
// per output index) are built only with `maps`: the shape rule needs the sizes alone, which pads
// may make huge before the output's allocation is checked against the tensor size limit.
std::vector<AxisPlan> pad_plan(const Shape& shape, const PadParams& pp, bool maps) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const Ints &begin = pp.begin, &end = pp.end;
  const PadMode mode = pp.mode;
  std::vector<AxisPlan> plan(rank);
  for (int64_t d = 0; d < rank; ++d) {
    AxisPlan& p = plan[d];
    p.first = std::max<int64_t>(-begin[d], 0);
    p.len = shape[d] - p.first - std::max<int64_t>(-end[d], 0);
    SG_CHECK(p.len >= 0) << "pads " << begin[d] << ", " << end[d] << " crop more than axis " << d
                         << " of size " << shape[d];
    p.before = std::max<int64_t>(begin[d], 0);
    const int64_t after = std::max<int64_t>(end[d], 0);
    if (mode == PadMode::reflect)
      SG_CHECK(std::max(p.before, after) < std::max<int64_t>(p.len, 1))
          << "reflect pads " << p.before << ", " << after << " on axis " << d
          << " must be smaller than its size " << p.len;
    if (mode == PadMode::edge)
      SG_CHECK(p.len > 0 || (p.before == 0 && after == 0))
          << "edge padding of axis " << d << ", which is empty";
    p.out = p.before + p.len + after;
    if (!maps) continue;
    p.map.resize(p.out);
    for (int64_t o = 0; o < static_cast<int64_t>(p.map.size()); ++o) {
      int64_t j = o - p.before;  // index into the cropped axis
      if (j < 0 || j >= p.len) {
        if (mode == PadMode::constant)
          j = -1 - p.first;
        else if (mode == PadMode::edge)
          j = j < 0 ? 0 : p.len - 1;
        else
          j = j < 0 ? -j : 2 * (p.len - 1) - j;
      }
      p.map[o] = j + p.first;
    }
  }
  return plan;
}

template <class T>
void pad_kernel(const Tensor& x, Tensor& y, const std::vector<AxisPlan>& plan, T value) {
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  const int64_t rank = x.rank();
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const AxisPlan& last = plan.back();
  const int64_t width = y.dim(-1);
  const int64_t rows = width == 0 ? 0 : y.numel() / width;
  const Shape st = strides_of(x.shape());
  std::vector<int64_t> idx(rank - 1, 0);
  for (int64_t r = 0; r < rows; ++r, dst += width) {
    int64_t off = 0;
    bool inside = true;
    for (int64_t d = 0; d < rank - 1; ++d) {
      const int64_t m = plan[d].map[idx[d]];
      inside = inside && m >= 0;
      off += m * st[d];
    }
    if (!inside) {
      std::fill(dst, dst + width, value);
    } else {
      const T* row = src + off;
      for (int64_t o = 0; o < last.before; ++o) dst[o] = last.map[o] < 0 ? value : row[last.map[o]];
      if (last.len > 0) std::memcpy(dst + last.before, row + last.first, last.len * sizeof(T));
      for (int64_t o = last.before + last.len; o < width; ++o)
        dst[o] = last.map[o] < 0 ? value : row[last.map[o]];
    }
    for (int64_t d = rank - 2; d >= 0; --d) {  // advance the outer index
      if (++idx[d] < y.shape()[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

// Pad(data, pads?, constant_value?, axes?) {mode = constant, pads and value: the opset-2 form}.
extern const Lowering kPadLowering;  // pad_jit.cpp
// Pad's output over a symbolic input: each dim plus its constant pads (nullopt when the pads are
// computed).
std::optional<SymShape> pad_symbolic_shape(const Graph& g, const Node& n,
                                           std::span<const SymShape* const> in) {
  if (in.empty() || !in[0]) return std::nullopt;
  const auto constant = [&](size_t i) -> const Tensor* {
    return i < n.inputs.size() && n.inputs[i] != kNoValue &&
                   g.values[n.inputs[i]].initializer.defined()
               ? &g.values[n.inputs[i]].initializer
               : nullptr;
  };
  if ((n.inputs.size() > 1 && n.inputs[1] != kNoValue && !constant(1)) ||
      (n.inputs.size() > 3 && n.inputs[3] != kNoValue && !constant(3)))
    return std::nullopt;
  try {
    const PadParams p = pad_params(n, in[0]->size(), constant(1), constant(3));
    SymShape out;
    for (size_t d = 0; d < in[0]->size(); ++d)
      out.push_back((*in[0])[d].plus(p.begin[d] + p.end[d]));
    return out;
  } catch (const Error&) {
    return std::nullopt;
  }
}

extern const OpDef kPad;
const OpDef kPad = with_symbolic_shape(
    pad_symbolic_shape,
    with_lowering(
        &kPadLowering,
        OpDef{"Pad", 1, 4, 1, 1,
              [](TypeCtx& c) {
                if (c.has(1)) c.expect_int_index(1);
                if (c.has(2)) c.expect_same(0, 2);
                if (c.has(3)) c.expect_int_index(3);
                types_same_as_input0(c);
              },
              [](ShapeCtx& c) {
                SG_CHECK(!c.has(2) || numel(c.shape(2)) == 1)
                    << "Pad constant_value must be a scalar, got shape " << shape_str(c.shape(2));
                const auto plan = pad_plan(
                    c.shape(0),
                    pad_params(c.node, c.shape(0).size(), c.has(1) ? &c.require_value(1) : nullptr,
                               c.has(3) ? &c.require_value(3) : nullptr),
                    /*maps=*/false);
                Shape out;
                for (const AxisPlan& p : plan) out.push_back(p.out);
                c.out[0] = std::move(out);
              },
              [](KernelCtx& c) {
                const PadParams p =
                    pad_params(c.node, c.in[0].shape().size(), c.has(1) ? &c.in[1] : nullptr,
                               c.has(3) ? &c.in[3] : nullptr);
                // Nothing to write; the maps would follow the other dims, however large.
                if (c.out[0].numel() == 0) return;
                const auto plan = pad_plan(c.in[0].shape(), p, /*maps=*/true);
                visit_dtype(c.in[0].dtype(), [&]<class T>() {
                  const T value = c.has(2) ? c.in[2].data<T>()[0] : from_double<T>(p.value);
                  pad_kernel<T>(c.in[0], c.out[0], plan, value);
                });
              }}));

}  // namespace sgraph::ops
