// BatchNormalization, inference form: per channel (dim 1),
//   Y = (X - input_mean) / sqrt(input_var + epsilon) * scale + B
// folded into one multiply-add per element. training_mode = 1 (batch statistics, running-mean
// outputs) is not supported.
#include <cmath>

#include "ops/op.h"

namespace sgraph::ops {
namespace {

void check_inference(const Node& node) {
  SG_CHECK(node.attrs.get_int("training_mode", 0) == 0)
      << "training_mode=1 is not supported (only the inference form of BatchNormalization)";
  SG_CHECK(node.outputs.size() == 1)
      << "with training_mode=0 there is one output (Y), but the node asks for "
      << node.outputs.size();
}

void types_batch_norm(TypeCtx& c) {
  check_inference(c.node);
  for (size_t i = 0; i < 5; ++i) c.expect_float(i);  // scale/B and mean/var may differ from X
  c.out[0] = c.in[0];
}

void shapes_batch_norm(ShapeCtx& c) {
  const Shape& x = c.shape(0);
  SG_CHECK(x.size() >= 2) << "X must have shape [N, C, ...] (rank >= 2), got " << shape_str(x);
  static constexpr const char* kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i)
    SG_CHECK(c.shape(i) == Shape{x[1]})
        << kNames[i] << " must have shape [" << x[1] << "] (the channels of X " << shape_str(x)
        << "), got " << shape_str(c.shape(i));
  c.out[0] = x;
}

template <class T>
void batch_norm(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const int64_t channels = x.dim(1), batch = x.dim(0);
  const int64_t size = channels == 0 || batch == 0 ? 0 : x.numel() / (batch * channels);
  const double eps = c.attrs().get_float("epsilon", 1e-5);
  std::vector<T> mul(channels), add(channels);
  for (int64_t ch = 0; ch < channels; ++ch) {
    const double m = c.in[1].at_double(ch) / std::sqrt(c.in[4].at_double(ch) + eps);
    mul[ch] = static_cast<T>(m);
    add[ch] = static_cast<T>(c.in[2].at_double(ch) - c.in[3].at_double(ch) * m);
  }
  const T* px = x.data<T>();
  T* py = c.out[0].data<T>();
  for (int64_t plane = 0; plane < batch * channels; ++plane) {
    const T a = mul[plane % channels], b = add[plane % channels];
    for (int64_t i = plane * size; i < (plane + 1) * size; ++i) py[i] = px[i] * a + b;
  }
}

}  // namespace

// BatchNormalization(X, scale, B, input_mean, input_var) {epsilon = 1e-5, momentum (unused),
// training_mode = 0}. Up to 3 outputs are accepted so that asking for the training outputs gets
// a clear error rather than an arity one.
extern const OpDef kBatchNormalization;
const OpDef kBatchNormalization{
    "BatchNormalization", 5, 5, 1, 3, types_batch_norm, shapes_batch_norm, [](KernelCtx& c) {
      visit_float(c.in[0].dtype(), [&]<class T>() { batch_norm<T>(c); });
    }};

}  // namespace sgraph::ops
