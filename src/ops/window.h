// Sliding-window geometry shared by Conv, ConvTranspose and the pooling ops: reading and checking
// the kernel_shape / strides / dilations / pads / auto_pad attributes, and the output sizes of a
// window sliding over an input ("forward" geometry; ConvTranspose derives its own from these).
#pragma once

#include <string_view>

#include "ops/op.h"

namespace sgraph::ops {

enum class AutoPad { notset, same_upper, same_lower, valid };
AutoPad read_auto_pad(const Attributes& attrs);

// An INTS attribute with one value per spatial dim (`count` values, each >= `min`), or `dflt`
// repeated when absent.
Ints read_spatial(const Attributes& attrs, std::string_view name, size_t count, int64_t dflt,
                  int64_t min);

// Checks a [N, C, spatial...] input and returns its spatial sizes.
Ints spatial_dims(const Shape& x, std::string_view what = "input");

struct Window {
  Ints in, kernel, strides, dilations;
  Ints pad_begin, pad_end;  // resolved: auto_pad applied
  Ints out;
  size_t rank() const { return in.size(); }
  int64_t extent(size_t d) const { return (kernel[d] - 1) * dilations[d] + 1; }
};

// The window of `kernel` over spatial sizes `in` for the node's attributes. ceil_mode (pools)
// rounds the output size up, dropping a last window that would start in the end padding.
// With `clip_last` (pools), a kernel that overhangs the padded input by less than one stride gives
// one window clipped to the input. Otherwise throws when the kernel does not fit the padded input.
Window forward_window(const Attributes& attrs, Ints in, Ints kernel, bool ceil_mode = false,
                      bool clip_last = false);

}  // namespace sgraph::ops
