// SoftmaxCrossEntropyLoss: the forward pass against values computed here by hand and by plain
// loops, its user errors, and its gradient (with weights, ignore_index, every reduction, N-d
// scores and the log_prob output) against finite differences. NegativeLogLikelihoodLoss: the same
// on log-probabilities given directly.
#include "grad_check.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

Tensor labels(Shape shape, std::initializer_list<int64_t> v) {
  return Tensor::from<int64_t>(std::move(shape), v);
}

Attributes reduction(const char* r) { return {{"reduction", std::string(r)}}; }

// log_softmax along axis 1 of [N, C, D] scores, by plain loops.
std::vector<double> log_softmax_ncd(const Tensor& x, int64_t n, int64_t c, int64_t d) {
  std::vector<double> out(x.numel());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d; ++k) {
      double s = 0;
      for (int64_t j = 0; j < c; ++j) s += std::exp(x.at_double((i * c + j) * d + k));
      for (int64_t j = 0; j < c; ++j)
        out[(i * c + j) * d + k] = x.at_double((i * c + j) * d + k) - std::log(s);
    }
  return out;
}

}  // namespace

TEST_CASE("SoftmaxCrossEntropyLoss: 2-D scores, every reduction, weights, ignore_index") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 1, 1, 1});
  const Tensor y = labels({2}, {2, 0});
  const double l0 = -(3 - std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)));
  const double l1 = std::log(3.0);
  check_close(run_op(OpKind::SoftmaxCrossEntropyLoss, {x, y}, reduction("none"))[0], {2}, {l0, l1});
  check_close(run_op(OpKind::SoftmaxCrossEntropyLoss, {x, y}, reduction("sum"))[0], {}, {l0 + l1});
  check_close(run_op(OpKind::SoftmaxCrossEntropyLoss, {x, y})[0], {}, {(l0 + l1) / 2});  // mean
  const Tensor w = f32({3}, {1, 2, 3});
  check_close(run_op(OpKind::SoftmaxCrossEntropyLoss, {x, y, w})[0], {},
              {(3 * l0 + 1 * l1) / (3 + 1)});
  check_close(run_op(OpKind::SoftmaxCrossEntropyLoss, {x, y, w}, reduction("none"))[0], {2},
              {3 * l0, l1});
  // Ignoring label 0: that element counts for nothing, not even in the mean's denominator.
  Attributes ignore{{"ignore_index", int64_t{0}}};
  check_close(run_op(OpKind::SoftmaxCrossEntropyLoss, {x, y}, ignore)[0], {}, {l0});
  ignore.set("reduction", std::string("none"));
  check_close(run_op(OpKind::SoftmaxCrossEntropyLoss, {x, y}, ignore)[0], {2}, {l0, 0});
  // An ignore_index outside [0, C) may appear among the labels.
  const Tensor y_neg = labels({2}, {-1, 0});
  check_close(
      run_op(OpKind::SoftmaxCrossEntropyLoss, {x, y_neg}, {{"ignore_index", int64_t{-1}}})[0], {},
      {l1});
  // The log_prob output.
  const std::vector<Tensor> both = run_op(OpKind::SoftmaxCrossEntropyLoss, {x, y}, {}, 2);
  check_close(both[1], {2, 3}, log_softmax_ncd(x, 2, 3, 1));
}

TEST_CASE("SoftmaxCrossEntropyLoss: N-d scores (N, C, d1, d2) and i32 labels, f64") {
  const Tensor x = random_f64({2, 3, 2, 2}, 7);
  const Tensor y = Tensor::from<int32_t>({2, 2, 2}, {0, 1, 2, 2, 1, 0, 0, 1});
  const std::vector<double> lp = log_softmax_ncd(x, 2, 3, 4);
  std::vector<double> want;
  double sum = 0;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      const int64_t label = y.data<int32_t>()[i * 4 + k];
      want.push_back(-lp[(i * 3 + label) * 4 + k]);
      sum += want.back();
    }
  const std::vector<Tensor> none =
      run_op(OpKind::SoftmaxCrossEntropyLoss, {x, y}, reduction("none"), 2);
  check_close(none[0], {2, 2, 2}, want, 1e-12, 1e-12);
  check_close(none[1], {2, 3, 2, 2}, lp, 1e-12, 1e-12);
  check_close(run_op(OpKind::SoftmaxCrossEntropyLoss, {x, y})[0], {}, {sum / 8}, 1e-12, 1e-12);
  CHECK(none[0].dtype() == DType::f64);
}

TEST_CASE("SoftmaxCrossEntropyLoss: user errors") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 1, 1, 1});
  CHECK(contains(op_error(OpKind::SoftmaxCrossEntropyLoss, {x, labels({2}, {0, 3})}),
                 "label 3 at index 1 is out of range [0, 3)"));
  CHECK(contains(op_error(OpKind::SoftmaxCrossEntropyLoss, {x, labels({2}, {-1, 0})},
                          {{"ignore_index", int64_t{2}}}),
                 "label -1 at index 0 is out of range [0, 3)"));
  CHECK(contains(op_error(OpKind::SoftmaxCrossEntropyLoss, {x, labels({3}, {0, 1, 2})}),
                 "labels of shape [3] do not match scores of shape [2,3] (expected [2])"));
  CHECK(contains(
      op_error(OpKind::SoftmaxCrossEntropyLoss, {x, labels({2}, {0, 1}), f32({2}, {1, 1})}),
      "weights must have shape [3] (one per class), got [2]"));
  CHECK(contains(
      op_error(OpKind::SoftmaxCrossEntropyLoss, {x, labels({2}, {0, 1})}, reduction("average")),
      "reduction must be 'none', 'sum' or 'mean', got 'average'"));
  CHECK(contains(op_error(OpKind::SoftmaxCrossEntropyLoss, {f32({3}, {1, 2, 3}), labels({1}, {0})}),
                 "scores must have rank >= 2"));
  CHECK(contains(op_error(OpKind::SoftmaxCrossEntropyLoss, {x, f32({2}, {0, 1})}),
                 "(SoftmaxCrossEntropyLoss): input 1 has dtype f32, expected one of i32 i64"));
}

TEST_CASE("SoftmaxCrossEntropyLoss: gradient by finite differences") {
  const Tensor y = labels({4}, {2, 0, 1, 2});
  auto sce = [](Attributes attrs, int outputs = 1) -> Build {
    return [attrs, outputs](GraphBuilder& b, const std::vector<ValueId>& in) {
      std::vector<ValueId> out = b.node(OpKind::SoftmaxCrossEntropyLoss, in, attrs, outputs);
      if (outputs == 1) return out[0];
      // Both outputs reach the loss: loss + sum(log_prob * 0.3).
      const ValueId lp =
          b.reduce_sum(b.mul(out[1], b.scalar(0.3)), Attributes{{"keepdims", int64_t{0}}});
      return b.add(b.reduce_sum(out[0], Attributes{{"keepdims", int64_t{0}}}), lp);
    };
  };
  for (const char* r : {"none", "sum", "mean"}) {
    CAPTURE(r);
    check_gradients({uniform({4, 3}, 1, -2, 2), y}, sce(reduction(r)));
    check_gradients({uniform({4, 3}, 2, -2, 2), y, uniform({3}, 3, 0.5, 2)}, sce(reduction(r)),
                    {.wrt = {0}});
    Attributes ignore = reduction(r);
    ignore.set("ignore_index", int64_t{0});
    check_gradients({uniform({4, 3}, 4, -2, 2), y, uniform({3}, 5, 0.5, 2)}, sce(ignore),
                    {.wrt = {0}});
    check_gradients({uniform({4, 3}, 6, -2, 2), y}, sce(reduction(r), 2));
  }
  const Tensor y_nd = Tensor::from<int32_t>({2, 2, 2}, {0, 1, 2, 2, 1, 0, 0, 1});
  check_gradients({uniform({2, 3, 2, 2}, 7, -2, 2), y_nd}, sce({}));
  check_gradients({uniform({2, 3, 2, 2}, 8, -2, 2), y_nd}, sce({{"ignore_index", int64_t{2}}}, 2));
  // A loss on a small MLP, fused by the JIT.
  const Build mlp = [](GraphBuilder& b, const std::vector<ValueId>& in) {
    const ValueId h = b.relu(b.gemm(in[0], in[1], in[2]));
    return b.softmax_cross_entropy_loss(b.matmul(h, in[3]), in[4]);
  };
  check_gradients(
      {uniform({4, 5}, 9), uniform({5, 6}, 10), uniform({6}, 11), uniform({6, 3}, 12), y}, mlp,
      {.jit = true});
}

TEST_CASE(
    "NegativeLogLikelihoodLoss: 2-D log-probabilities, every reduction, weights, ignore_index") {
  // Rows [-1,-2,-3] and [-0.5,-1.5,-2.5]; labels 2 and 0 pick -3 and -0.5.
  const Tensor x = f32({2, 3}, {-1, -2, -3, -0.5, -1.5, -2.5});
  const Tensor y = labels({2}, {2, 0});
  const OpKind nll = OpKind::NegativeLogLikelihoodLoss;
  check_close(run_op(nll, {x, y}, reduction("none"))[0], {2}, {3, 0.5});
  check_close(run_op(nll, {x, y}, reduction("sum"))[0], {}, {3.5});
  check_close(run_op(nll, {x, y})[0], {}, {1.75});
  // Weights 3 (class 2) and 1 (class 0): the mean divides by their sum.
  const Tensor w = f32({3}, {1, 2, 3});
  check_close(run_op(nll, {x, y, w}, reduction("none"))[0], {2}, {9, 0.5});
  check_close(run_op(nll, {x, y, w})[0], {}, {9.5 / 4});
  Attributes ignore{{"ignore_index", int64_t{0}}};
  check_close(run_op(nll, {x, y, w}, ignore)[0], {}, {3});
  ignore.set("reduction", std::string("none"));
  check_close(run_op(nll, {x, y}, ignore)[0], {2}, {3, 0});
  check_close(run_op(nll, {x, labels({2}, {-7, 1})}, {{"ignore_index", int64_t{-7}}})[0], {},
              {1.5});
}

TEST_CASE("NegativeLogLikelihoodLoss: N-d log-probabilities (N, C, d1) and i32 labels, f64") {
  // x[0, c, d]: class 0 is [-1, -2], class 1 is [-3, -4]; labels [1, 0] pick -3 and -2.
  const Tensor x = Tensor::from<double>({1, 2, 2}, {-1, -2, -3, -4});
  const Tensor y = Tensor::from<int32_t>({1, 2}, {1, 0});
  const Tensor none = run_op(OpKind::NegativeLogLikelihoodLoss, {x, y}, reduction("none"))[0];
  CHECK(none.dtype() == DType::f64);
  check_close(none, {1, 2}, {3, 2});
  check_close(run_op(OpKind::NegativeLogLikelihoodLoss, {x, y}, reduction("sum"))[0], {}, {5});
}

TEST_CASE("NegativeLogLikelihoodLoss: user errors") {
  const Tensor x = f32({2, 3}, {-1, -2, -3, -1, -1, -1});
  const OpKind nll = OpKind::NegativeLogLikelihoodLoss;
  CHECK(contains(op_error(nll, {x, labels({2}, {0, 3})}),
                 "label 3 at index 1 is out of range [0, 3)"));
  CHECK(contains(op_error(nll, {x, labels({2}, {-1, 0})}),
                 "label -1 at index 0 is out of range [0, 3)"));
  CHECK(contains(op_error(nll, {x, labels({2, 1}, {0, 1})}),
                 "labels of shape [2,1] do not match scores of shape [2,3] (expected [2])"));
  CHECK(contains(op_error(nll, {x, labels({2}, {0, 1}), f32({4}, {1, 1, 1, 1})}),
                 "weights must have shape [3] (one per class), got [4]"));
  CHECK(contains(op_error(nll, {x, labels({2}, {0, 1})}, reduction("max")),
                 "reduction must be 'none', 'sum' or 'mean', got 'max'"));
  CHECK(contains(op_error(nll, {x, labels({2}, {0, 1}), Tensor::from<double>({3}, {1, 1, 1})}),
                 "inputs 0 and 2 must have the same dtype, got f32 and f64"));
}

TEST_CASE("NegativeLogLikelihoodLoss: gradient by finite differences") {
  const Tensor y = labels({4}, {2, 0, 1, 2});
  auto nll = [](Attributes attrs) -> Build {
    return [attrs](GraphBuilder& b, const std::vector<ValueId>& in) {
      return b.node(OpKind::NegativeLogLikelihoodLoss, in, attrs, 1)[0];
    };
  };
  for (const char* r : {"none", "sum", "mean"}) {
    CAPTURE(r);
    check_gradients({uniform({4, 3}, 21, -2, 2), y}, nll(reduction(r)));
    Attributes ignore = reduction(r);
    ignore.set("ignore_index", int64_t{0});
    check_gradients({uniform({4, 3}, 22, -2, 2), y, uniform({3}, 23, 0.5, 2)}, nll(ignore),
                    {.wrt = {0}});
  }
  const Tensor y_nd = Tensor::from<int32_t>({2, 2, 2}, {0, 1, 2, 2, 1, 0, 0, 1});
  check_gradients({uniform({2, 3, 2, 2}, 24, -2, 2), y_nd}, nll({}));
}
