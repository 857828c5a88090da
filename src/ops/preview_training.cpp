// The layout the ai.onnx.preview.training optimizers share (see preview_training.h).
#include "ops/preview_training.h"

namespace sgraph::ops {
namespace {

// n, the number of optimized tensors; throws when the input and output counts do not fit.
size_t optimized_count(size_t inputs, size_t outputs, OptimizerLayout l) {
  const size_t lists = static_cast<size_t>(l.in_lists),
               out_lists = static_cast<size_t>(l.out_lists);
  SG_CHECK(inputs > 2 && (inputs - 2) % lists == 0)
      << "takes R, T and " << lists << " lists of n tensors (2 + " << lists
      << "n inputs, n >= 1), got " << inputs << " inputs";
  const size_t n = (inputs - 2) / lists;
  SG_CHECK(outputs == out_lists * n) << "has " << out_lists << " outputs per optimized tensor ("
                                     << out_lists * n << " for " << n << "), got " << outputs;
  return n;
}

}  // namespace

void types_optimizer(TypeCtx& c, OptimizerLayout l) {
  const size_t n = optimized_count(c.in.size(), c.out.size(), l);
  c.expect_one_of(0, {DType::f32, DType::f64});
  c.expect_one_of(1, {DType::i64});
  for (size_t i = 0; i < n; ++i) {
    c.expect_one_of(2 + i, {DType::f32, DType::f64});
    for (int k = 1; k < l.in_lists; ++k) c.expect_same(2 + k * n + i, 2 + i);
    c.out[i] = c.in[2 + i];
    for (int k = 1; k < l.out_lists; ++k) c.out[k * n + i] = c.in[2 + i];
  }
}

void shapes_optimizer(ShapeCtx& c, OptimizerLayout l) {
  const size_t n = optimized_count(c.in.size(), c.out.size(), l);
  SG_CHECK(numel(c.shape(0)) == 1 && c.rank(0) <= 1)
      << "R must be a scalar, got shape " << shape_str(c.shape(0));
  SG_CHECK(numel(c.shape(1)) == 1 && c.rank(1) <= 1)
      << "T must be a scalar, got shape " << shape_str(c.shape(1));
  for (size_t i = 0; i < n; ++i) {
    const Shape& x = c.shape(2 + i);
    for (int k = 1; k < l.in_lists; ++k)
      SG_CHECK(c.shape(2 + k * n + i) == x)
          << "input " << 2 + k * n + i << " must have the shape of optimized tensor " << i
          << " (input " << 2 + i << ") " << shape_str(x) << ", got "
          << shape_str(c.shape(2 + k * n + i));
    for (int k = 0; k < l.out_lists; ++k) c.out[k * n + i] = x;
  }
}

OptimizerStep optimizer_step(const KernelCtx& c) {
  return {c.in[0].at_double(0), c.in[1].data<int64_t>()[0]};
}

}  // namespace sgraph::ops
