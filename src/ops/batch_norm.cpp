// BatchNormalization, inference form: per channel (dim 1),
//   Y = (X - input_mean) / sqrt(input_var + epsilon) * scale + B
// folded into one multiply-add per element. training_mode = 1 (batch statistics, running-mean
// outputs) is not supported. In a JIT region the parameters are operands read at the element's
// channel (its lowering marks them per_channel: read at the index along dim 1), so a
// normalisation fuses with the Conv before it and the activation after it.
#include <cmath>

#include "ops/element.h"
#include "ops/lowering.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

using llvm::Value;

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

// x * a + b with a = scale / sqrt(var + eps) and b = B - mean * a made in f64 and rounded to
// X's type, as the reference kernel makes them (per channel, so hoisted out of the inner loop).
llvm::Value* emit_batch_norm(ElementCtx& c, Operands x) {
  if (!c.is_float()) return nullptr;
  llvm::IRBuilderBase& b = c.b;
  llvm::Type* f64 = b.getDoubleTy();
  const auto wide = [&](size_t i) { return b.CreateFPCast(x[i], f64); };
  Value* var =
      b.CreateFAdd(wide(4), llvm::ConstantFP::get(f64, c.attrs().get_float("epsilon", 1e-5)));
  Value* m = b.CreateFDiv(wide(1), c.intrinsic(llvm::Intrinsic::sqrt, var));
  Value* add = b.CreateFSub(wide(2), b.CreateFMul(wide(3), m));
  llvm::Type* t = x[0]->getType();
  return b.CreateFAdd(b.CreateFMul(x[0], b.CreateFPCast(m, t)), b.CreateFPCast(add, t));
}

}  // namespace

// BatchNormalization(X, scale, B, input_mean, input_var) {epsilon = 1e-5, momentum (unused),
// training_mode = 0}. Up to 3 outputs are accepted so that asking for the training outputs gets
// a clear error rather than an arity one.
// In a region its parameters are per-channel operands: read at the element's index along dim 1.
const Lowering kBatchNormLowering{.per_channel = [](const Node&, size_t i) { return i >= 1; }};

extern const OpDef kBatchNormalization;
const OpDef kBatchNormalization = with_lowering(
    &kBatchNormLowering,
    with_element(emit_batch_norm, {"BatchNormalization", 5, 5, 1, 3, types_batch_norm,
                                   shapes_batch_norm, [](KernelCtx& c) {
                                     visit_float(c.in[0].dtype(),
                                                 [&]<class T>() { batch_norm<T>(c); });
                                   }}));

}  // namespace sgraph::ops
