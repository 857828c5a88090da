// Window attributes and output sizes for convolution and pooling (see window.h).
#include "ops/window.h"

#include <algorithm>

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
    const int64_t s = w.strides[d], ext = w.extent(d);
    if (mode == AutoPad::same_upper || mode == AutoPad::same_lower) {
      w.out[d] = (w.in[d] + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (w.out[d] - 1) * s + ext - w.in[d]);
      const int64_t small = total / 2, large = total - small;
      w.pad_begin[d] = mode == AutoPad::same_upper ? small : large;
      w.pad_end[d] = total - w.pad_begin[d];
      continue;
    }
    const int64_t padded = w.in[d] + w.pad_begin[d] + w.pad_end[d];
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
    w.out[d] = (padded - ext + (ceil_mode ? s - 1 : 0)) / s + 1;
    if (ceil_mode && (w.out[d] - 1) * s >= w.in[d] + w.pad_begin[d]) --w.out[d];
  }
  return w;
}

}  // namespace sgraph::ops
