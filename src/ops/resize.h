// Resize's parameters, decoded once for its reference kernel and its lowering: per input dim, a
// table of the taps each output index reads.
#pragma once

#include <cstdint>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph::ops {

// One input dim: output index o reads idx[begin[o] .. begin[o + 1]) with weights w (exactly one
// tap per output in nearest mode); `outside` marks tf_crop_and_resize samples outside the input.
struct ResizeTable {
  std::vector<int64_t> begin{0}, idx;
  std::vector<double> w;
  std::vector<uint8_t> outside;
  bool identity = true;  // out == in and output o copies input o
};

// What the attributes say, whatever the shapes.
struct ResizeMode {
  bool nearest = true;  // mode nearest (else linear or cubic: weighted taps)
  bool antialias = false;
  bool crop = false;  // tf_crop_and_resize: samples outside take `extrapolation`
  double extrapolation = 0;
};
ResizeMode resize_mode(const Attributes& a);

struct ResizeParams {
  ResizeMode mode;
  Shape out;
  std::vector<ResizeTable> tables;  // one per input dim
};

// Keys' cubic convolution kernel with coefficient `a` (-0.75: PyTorch's bicubic, -0.5: Keys')
// at distance `d` from the sample: the weight of a tap |d| < 2 away, else 0. GridSample shares it.
double cubic_weight(double a, double d);

// Resize's parameters for an input of shape `in` from its attributes and inputs roi, scales and
// sizes (nullptr or empty when absent); throws sgraph::Error (no node context) when they are bad.
ResizeParams resize_params(const Attributes& a, const Shape& in, const Tensor* roi,
                           const Tensor* scales, const Tensor* sizes);

}  // namespace sgraph::ops
