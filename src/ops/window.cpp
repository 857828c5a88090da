// Window attributes and output sizes for convolution and pooling (see window.h).
#include "ops/window.h"

#include <algorithm>

#include "ops/int_math.h"

namespace sgraph::ops {

AutoPad read_auto_pad(const Attributes& attrs) {
  const std::string s = attrs.get_string("auto_pad", "NOTSET");
  if (s == "NOTSET") return AutoPad::notset;
  if (s == "SAME_UPPER") return AutoPad::same_upper;
  if (s == "SAME_LOWER") return AutoPad::same_lower;
  if (s == "VALID") return AutoPad::valid;
  SG_FAIL() << "unsupported auto_pad '" << s
            << "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)";
}

Ints read_spatial(const Attributes& attrs, std::string_view name, size_t count, int64_t dflt,
                  int64_t min) {
  if (!attrs.has(name)) return Ints(count, dflt);
  const Ints& v = attrs.get_ints(name);
  SG_CHECK(v.size() == count) << name << " must have " << count << " values, got " << v.size();
  for (int64_t x : v) SG_CHECK(x >= min) << name << " values must be >= " << min << ", got " << x;
  return v;
}

Ints spatial_dims(const Shape& x, std::string_view what) {
  SG_CHECK(x.size() >= 3) << what << " must have shape [N, C, spatial...] (rank >= 3), got "
                          << shape_str(x);
  return Ints(x.begin() + 2, x.end());
}

Window forward_window(const Attributes& attrs, Ints in, Ints kernel, bool ceil_mode,
                      bool clip_last) {
  Window w;
  const size_t r = in.size();
  w.in = std::move(in);
  w.kernel = std::move(kernel);
  w.strides = read_spatial(attrs, "strides", r, 1, 1);
  w.dilations = read_spatial(attrs, "dilations", r, 1, 1);
  const AutoPad mode = read_auto_pad(attrs);
  const Ints pads =
      mode == AutoPad::notset ? read_spatial(attrs, "pads", 2 * r, 0, 0) : Ints(2 * r, 0);
  w.pad_begin.assign(pads.begin(), pads.begin() + r);
  w.pad_end.assign(pads.begin() + r, pads.end());
  w.out.resize(r);
  for (size_t d = 0; d < r; ++d) {
    // Every size below is checked once here (attributes are the model's): later uses of the
    // window's extent and padded size cannot overflow.
    SG_CHECK(w.kernel[d] >= 1) << "kernel size must be >= 1, got " << w.kernel[d]
                               << " along spatial dim " << d;
    const int64_t s = w.strides[d];
    const int64_t ext = checked_add(
        checked_mul(w.kernel[d] - 1, w.dilations[d], "the kernel extent"), 1, "the kernel extent");
    if (mode == AutoPad::same_upper || mode == AutoPad::same_lower) {
      w.out[d] = checked_add(w.in[d], s - 1, "the output size") / s;
      const int64_t total =
          std::max<int64_t>(0, checked_add(checked_mul(w.out[d] - 1, s, "the padded size"),
                                           ext - w.in[d], "the padded size"));
      const int64_t small = total / 2, large = total - small;
      w.pad_begin[d] = mode == AutoPad::same_upper ? small : large;
      w.pad_end[d] = total - w.pad_begin[d];
      continue;
    }
    const int64_t padded = checked_add(checked_add(w.in[d], w.pad_begin[d], "the padded size"),
                                       w.pad_end[d], "the padded size");
    if (clip_last && ext > padded && ext - padded < s) {
      // One window that overhangs the padded input, clipped to it (ONNX Runtime's pools compute
      // (padded - extent) / stride + 1 with truncating division, and models rely on it).
      w.out[d] = 1;
      continue;
    }
    SG_CHECK(ext <= padded) << "kernel extent " << ext << " (kernel " << w.kernel[d]
                            << ", dilation " << w.dilations[d]
                            << ") is larger than the padded input " << padded
                            << " along spatial dim " << d;
    w.out[d] = checked_add(padded - ext, ceil_mode ? s - 1 : 0, "the output size") / s + 1;
    if (ceil_mode && (w.out[d] - 1) * s >= w.in[d] + w.pad_begin[d]) --w.out[d];
  }
  return w;
}

std::optional<SymWindow> sym_forward_window(const Attributes& attrs, const SymShape& in,
                                            Ints kernel, bool ceil_mode, bool clip_last) {
  // Static sizes as forward_window has them; a symbolic one stands in as a size that fits any
  // window (its pads are the attribute's, or with SAME and stride 1 the extent's, either way
  // independent of the size).
  constexpr int64_t kLarge = int64_t{1} << 30;
  Ints stand_in;
  for (const SymDim& d : in) stand_in.push_back(d.symbolic() ? kLarge : d.offset);
  SymWindow sw;
  sw.w = forward_window(attrs, stand_in, std::move(kernel), ceil_mode, clip_last);
  const AutoPad mode = read_auto_pad(attrs);
  for (size_t d = 0; d < in.size(); ++d) {
    sw.in.push_back(in[d]);
    if (!in[d].symbolic()) {
      sw.out.push_back(SymDim::constant(sw.w.out[d]));
      continue;
    }
    const int64_t s = sw.w.strides[d];
    if (s > 1 && (ceil_mode || mode == AutoPad::same_upper || mode == AutoPad::same_lower))
      return std::nullopt;
    sw.w.in[d] = sw.w.out[d] = 0;
    const int64_t c = sw.w.pad_begin[d] + sw.w.pad_end[d] - sw.w.extent(d) + s;
    sw.out.push_back(s == 1 ? in[d].plus(c) : in[d].plus(c).divided(s));
  }
  return sw;
}

std::optional<SymShape> window_symbolic_shape(const Graph&, const Node& n,
                                              std::span<const SymShape* const> in) {
  if (in.empty() || !in[0] || in[0]->size() < 3) return std::nullopt;
  const SymShape& x = *in[0];
  const SymShape spatial(x.begin() + 2, x.end());
  SymShape out = {x[0], x[1]};
  std::optional<SymWindow> sw;
  try {
    if (n.op == OpKind::Conv) {
      if (in.size() < 2 || !in[1] || in[1]->size() != x.size() || !is_static(*in[1]))
        return std::nullopt;
      Ints kernel;
      for (size_t d = 2; d < in[1]->size(); ++d) kernel.push_back((*in[1])[d].offset);
      sw = sym_forward_window(n.attrs, spatial, kernel);
      out[1] = (*in[1])[0];
    } else {
      if (!n.attrs.has("kernel_shape")) return std::nullopt;
      sw = sym_forward_window(n.attrs, spatial,
                              read_spatial(n.attrs, "kernel_shape", spatial.size(), 0, 1),
                              n.attrs.get_int("ceil_mode", 0) != 0, /*clip_last=*/true);
    }
  } catch (const Error&) {
    return std::nullopt;  // (attributes the interpreter rejects)
  }
  if (!sw) return std::nullopt;
  out.insert(out.end(), sw->out.begin(), sw->out.end());
  return out;
}

}  // namespace sgraph::ops
