// HannWindow, HammingWindow, BlackmanWindow (size) {periodic = 1, output_datatype = 1}: the 1-D
// window of `size` points (a scalar int32 or int64, >= 0) used to taper a signal before a DFT.
// With N = size when periodic, else size - 1, for n = 0 .. size - 1:
//   Hann      w[n] = 0.5 - 0.5 cos(2 pi n / N)
//   Hamming   w[n] = 25/46 - 21/46 cos(2 pi n / N)
//   Blackman  w[n] = 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
// computed in double and converted to output_datatype (an ONNX dtype code; integers truncate
// toward zero, saturating). A symmetric window of one point (N = 0) is [1].
// (Not to be confused with ops::Window in window.h, the sliding window of Conv and the pools.)
#include <cmath>
#include <numbers>

#include "ops/int_math.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

constexpr int64_t kMaxWindow = int64_t{1} << 60;  // keeps size * element size far from overflow

struct Cosines {  // w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)
  double a0, a1, a2;
};

void types_window(TypeCtx& c) {
  c.expect_int_index(0);
  const int64_t periodic = c.attrs().get_int("periodic", 1);
  SG_CHECK(periodic == 0 || periodic == 1) << "periodic must be 0 or 1, got " << periodic;
  const DType t = dtype_from_onnx_code(c.attrs().get_int("output_datatype", 1));
  SG_CHECK(t != DType::boolean) << "output_datatype must be numeric, got bool";
  c.out[0] = t;
}

void shapes_window(ShapeCtx& c) {
  const Tensor& size = c.require_value(0);
  SG_CHECK(size.numel() == 1 && size.rank() <= 1)
      << "size must be a scalar, got shape " << shape_str(size.shape());
  const int64_t n = size.to_int64()[0];
  SG_CHECK(n >= 0 && n <= kMaxWindow) << "size must be in [0, 2^60], got " << n;
  c.out[0] = {n};
}

template <Cosines k>
void run_window(KernelCtx& c) {
  const int64_t size = c.out[0].dim(0);
  const bool periodic = c.attrs().get_int("periodic", 1) != 0;
  const int64_t period = periodic ? size : size - 1;
  visit_dtype(c.out[0].dtype(), [&]<class T>() {
    T* y = c.out[0].data<T>();
    for (int64_t i = 0; i < size; ++i) {
      double w = 1;
      if (period > 0) {
        const double x = 2 * std::numbers::pi * static_cast<double>(i) / period;
        w = k.a0 - k.a1 * std::cos(x) + k.a2 * std::cos(2 * x);
      }
      if constexpr (std::is_floating_point_v<T>)
        y[i] = static_cast<T>(w);
      else
        y[i] = saturate_cast<T>(w);
    }
  });
}

}  // namespace

extern const OpDef kHannWindow, kHammingWindow, kBlackmanWindow;
const OpDef kHannWindow{
    "HannWindow", 1, 1, 1, 1, types_window, shapes_window, run_window<Cosines{0.5, 0.5, 0}>};
const OpDef kHammingWindow{"HammingWindow",
                           1,
                           1,
                           1,
                           1,
                           types_window,
                           shapes_window,
                           run_window<Cosines{25.0 / 46, 21.0 / 46, 0}>};
const OpDef kBlackmanWindow{"BlackmanWindow",
                            1,
                            1,
                            1,
                            1,
                            types_window,
                            shapes_window,
                            run_window<Cosines{0.42, 0.5, 0.08}>};

}  // namespace sgraph::ops
