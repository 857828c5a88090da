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

// The window over spatial sizes that may be symbolic (ir/sym_shape.h): kernel, strides, dilations
// and pads as forward_window gives them, and each output size, for a symbolic input size
// floor((in + pad_begin + pad_end - extent) / stride) + 1 (the SymDim rounds down). nullopt where
// a symbolic size's geometry is no such form: auto_pad SAME with a stride above 1 (its pads depend
// on the size), ceil_mode with a stride above 1. An input too small for the kernel makes an
// output size below 1 (the dynamic guard refuses it; the interpreter reports the error).
struct SymWindow {
  Window w;  // static sizes as forward_window; a symbolic one's `in` and `out` entries are 0
  SymShape in, out;
};
std::optional<SymWindow> sym_forward_window(const Attributes& attrs, const SymShape& in,
                                            Ints kernel, bool ceil_mode = false,
                                            bool clip_last = false);
// Output 0's symbolic shape for Conv and the pools (OpDef::symbolic_shape).
std::optional<SymShape> window_symbolic_shape(const Graph& g, const Node& n,
                                              std::span<const SymShape* const> in);

// ---- Conv's geometry (conv.cpp) ----------------------------------------------------------------

// Everything a (transposed) convolution needs to know, checked against the inputs.
struct ConvGeom {
  Window w;
  int64_t batch, group, in_ch, out_ch;  // C and M of the op
  Shape out_shape;
  int64_t in_size() const { return numel(w.in); }
  int64_t out_size() const { return numel(w.out); }
  int64_t taps() const { return numel(w.kernel); }
};

// Conv's geometry for X, W and B (nullptr when absent) of these shapes and the node's attributes
// (auto_pad, dilations, group, kernel_shape, pads, strides): throws on shapes that do not fit.
// ConvInteger and QLinearConv share it.
ConvGeom conv_geometry(const Attributes& attrs, const Shape& x, const Shape& wt, const Shape* b);

// Offsets of each kernel tap (row-major over the kernel), per spatial dim:
// tap * dilation - pad_begin.
std::vector<Ints> tap_offsets(const Window& w);

}  // namespace sgraph::ops
