// SoftmaxCrossEntropyLoss (ONNX opset 13): scores [N, C] or [N, C, d1, ..., dk], integer labels
// [N] or [N, d1, ..., dk], optional class weights [C]; attributes reduction ("none", "sum" or
// "mean", the default) and ignore_index. Output 0 is the loss: per element
//   l[n, d] = -w[label] * log_softmax(scores, axis 1)[n, label, d]   (0 where label ==
//   ignore_index)
// reduced: "none" keeps [N, d...], "sum" sums, "mean" divides the sum by the sum of the weights of
// the elements not ignored (without weights: their count). Output 1 (optional) is the log_softmax.
// A label outside [0, C) that is not ignore_index is an error.
// NegativeLogLikelihoodLoss (opset 13) is the same loss on log-probabilities given as input 0
// (no softmax, one output).
//
// The gradient is softmax(scores) - onehot(labels), weighted and scaled, built from primitive ops
// (Equal against a class iota, Cast, Softmax, ReduceSum, Mul), so the JIT compiles it.
#include <cmath>
#include <string>
#include <vector>

#include "ops/grad.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

enum class LossReduce { none, sum, mean };

LossReduce reduction(const Attributes& attrs) {
  const std::string r = attrs.get_string("reduction", "mean");
  if (r == "none") return LossReduce::none;
  if (r == "sum") return LossReduce::sum;
  SG_CHECK(r == "mean") << "reduction must be 'none', 'sum' or 'mean', got '" << r << "'";
  return LossReduce::mean;
}

void types_loss(TypeCtx& c) {
  c.expect_float(0);
  c.expect_int_index(1);
  if (c.has(2)) c.expect_same(0, 2);
  reduction(c.attrs());
  for (DType& t : c.out) t = c.in[0];
}

void shapes_loss(ShapeCtx& c) {
  const Shape &s = c.shape(0), &l = c.shape(1);
  SG_CHECK(s.size() >= 2) << "scores must have rank >= 2 ([N, C, ...]), got shape " << shape_str(s);
  Shape want{s[0]};
  want.insert(want.end(), s.begin() + 2, s.end());
  SG_CHECK(l == want) << "labels of shape " << shape_str(l) << " do not match scores of shape "
                      << shape_str(s) << " (expected " << shape_str(want) << ")";
  if (c.has(2))
    SG_CHECK(c.shape(2) == Shape{s[1]}) << "weights must have shape [" << s[1]
                                        << "] (one per class), got " << shape_str(c.shape(2));
  c.out[0] = reduction(c.attrs()) == LossReduce::none ? l : Shape{};
  if (c.out.size() > 1) c.out[1] = s;
}

// The weighted negative log-likelihood both losses end with: per element of [N, d...]
//   l = -w[label] * logp(offset of [n, label, d] in [N, C, d...])   (0 where ignored)
// written to loss (output 0) as the reduction says.
template <class T, class L, class LogP>
void nll(KernelCtx& c, LogP&& logp) {
  const Shape& s = c.in[0].shape();
  const int64_t n = s[0], classes = s[1],
                inner = n * classes == 0 ? 0 : c.in[0].numel() / (n * classes);
  const L* labels = c.in[1].data<L>();
  const T* weights = c.has(2) ? c.in[2].data<T>() : nullptr;
  const bool has_ignore = c.attrs().has("ignore_index");
  const int64_t ignore = c.attrs().get_int("ignore_index", 0);
  const LossReduce red = reduction(c.attrs());
  T* loss = c.out[0].data<T>();
  double total = 0, weight_sum = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < inner; ++d) {
      const int64_t label = static_cast<int64_t>(labels[i * inner + d]);
      double l = 0, w = 0;
      if (!has_ignore || label != ignore) {
        SG_CHECK(label >= 0 && label < classes)
            << "label " << label << " at index " << i * inner + d << " is out of range [0, "
            << classes << ")";
        w = weights ? static_cast<double>(weights[label]) : 1.0;
        l = -w * logp((i * classes + label) * inner + d);
      }
      if (red == LossReduce::none) loss[i * inner + d] = static_cast<T>(l);
      total += l;
      weight_sum += w;
    }
  if (red == LossReduce::sum) loss[0] = static_cast<T>(total);
  if (red == LossReduce::mean) loss[0] = static_cast<T>(total / weight_sum);
}

template <class T, class L>
void run_sce(KernelCtx& c) {
  const Shape& s = c.in[0].shape();
  const int64_t n = s[0], classes = s[1],
                inner = n * classes == 0 ? 0 : c.in[0].numel() / (n * classes);
  const T* x = c.in[0].data<T>();
  // log_softmax along the classes, kept in double for the loss.
  std::vector<double> logp(static_cast<size_t>(c.in[0].numel()));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < inner; ++d) {
      const int64_t base = i * classes * inner + d;  // class k at base + k * inner
      double m = -INFINITY, sum = 0;
      for (int64_t k = 0; k < classes; ++k)
        m = std::max(m, static_cast<double>(x[base + k * inner]));
      for (int64_t k = 0; k < classes; ++k) sum += std::exp(x[base + k * inner] - m);
      for (int64_t k = 0; k < classes; ++k)
        logp[base + k * inner] = x[base + k * inner] - m - std::log(sum);
    }
  if (c.out.size() > 1) {
    T* log_prob = c.out[1].data<T>();
    for (size_t k = 0; k < logp.size(); ++k) log_prob[k] = static_cast<T>(logp[k]);
  }
  nll<T, L>(c, [&](int64_t off) { return logp[off]; });
}

// Calls f.operator()<T, L>() for the scores' float type T and the labels' index type L.
template <class F>
void visit_loss(KernelCtx& c, F&& f) {
  visit_float(c.in[0].dtype(), [&]<class T>() {
    if (c.in[1].dtype() == DType::i32)
      f.template operator()<T, int32_t>();
    else
      f.template operator()<T, int64_t>();
  });
}

// The one-hot of the labels along the classes ([N, C, d...], the scores' dtype) times their class
// weight, 0 where the label is ignore_index.
ValueId weighted_hot(GradCtx& c) {
  GraphBuilder& b = c.b;
  const ValueId scores = c.in(0), labels = c.in(1);
  // The class index k as a [C, 1, ..., 1] column (broadcasting against labels [N, 1, d...]).
  Ints column(c.rank(scores) - 1, 1);
  column[0] = -1;
  const Dim classes = c.dims(scores)[1];
  ValueId iota;
  if (classes.is_static()) {
    Shape shape(column.size(), 1);
    shape[0] = classes.size;
    Tensor t(c.dtype(labels), shape);
    visit_dtype(t.dtype(), [&]<class L>() {
      for (int64_t k = 0; k < classes.size; ++k) t.data<L>()[k] = static_cast<L>(k);
    });
    iota = b.constant("", t);
  } else {
    const ValueId count = b.gather(b.shape(scores), b.scalar<int64_t>(1));
    iota = b.range(b.scalar<int64_t>(0), count, b.scalar<int64_t>(1));
    if (c.dtype(labels) != DType::i64)
      iota = b.cast(iota, Attributes{{"to", onnx_dtype_code(c.dtype(labels))}});
    iota = b.reshape(iota, b.ints(column));
  }
  const ValueId label = b.unsqueeze(labels, b.ints({1}));
  const Attributes to_float{{"to", onnx_dtype_code(c.dtype(scores))}};
  ValueId hot = b.cast(b.equal(label, iota), to_float);
  const bool weighted = c.has_in(2), ignores = c.attrs().has("ignore_index");
  if (weighted) hot = b.mul(hot, b.reshape(c.in(2), b.ints(column)));
  if (ignores) {
    Tensor ignore(c.dtype(labels), {});
    visit_dtype(ignore.dtype(), [&]<class L>() {
      ignore.data<L>()[0] = static_cast<L>(c.attrs().get_int("ignore_index"));
    });
    hot = b.where(b.equal(label, b.constant("", ignore)), c.scalar(0, scores), hot);
  }
  return hot;
}

// The incoming gradient of the loss broadcastable against [N, C, d...]: "none" unsqueezed at the
// classes, "mean" divided by the sum of the weights (that of `hot`).
ValueId loss_scale(GradCtx& c, ValueId hot) {
  GraphBuilder& b = c.b;
  ValueId scale = c.dout(0);
  const LossReduce red = reduction(c.attrs());
  if (red == LossReduce::none) scale = b.unsqueeze(scale, b.ints({1}));
  if (red == LossReduce::mean)
    scale = b.div(scale, b.reduce_sum(hot, Attributes{{"keepdims", int64_t{0}}}));
  return scale;
}

// d loss / d scores = (softmax(scores) * wn - hot) * scale, where hot is the one-hot of the labels
// times their class weight (0 where ignored), wn its sum over the classes (the element's weight)
// and scale the incoming gradient (mean: divided by the sum of all weights). The log_prob
// output's gradient adds dlp - softmax(scores) * sum(dlp, classes).
void grad_sce(GradCtx& c) {
  if (!c.wants(0)) return;
  GraphBuilder& b = c.b;
  const ValueId scores = c.in(0);
  const ValueId hot = weighted_hot(c);
  const bool plain = !c.has_in(2) && !c.attrs().has("ignore_index");
  const Attributes classes_axis{{"axes", Ints{1}}, {"keepdims", int64_t{1}}};
  const ValueId p = b.softmax(scores, Attributes{{"axis", int64_t{1}}});
  ValueId dx = kNoValue;
  if (c.has_dout(0)) {
    // Each element's weight is sum(hot, classes); without weights or ignoring it is 1.
    const ValueId diff =
        plain ? b.sub(p, hot) : b.sub(b.mul(p, b.reduce_sum(hot, classes_axis)), hot);
    dx = b.mul(diff, loss_scale(c, hot));
  }
  if (c.has_dout(1)) {
    const ValueId dlp = c.dout(1);
    const ValueId term = b.sub(dlp, b.mul(p, b.reduce_sum(dlp, classes_axis)));
    dx = dx == kNoValue ? term : b.add(dx, term);
  }
  c.set(0, c.with_dims_of(dx, scores));
}

// d loss / d log_probs = -hot * scale: the weights scattered to the labels' classes.
void grad_nll(GradCtx& c) {
  if (!c.wants(0) || !c.has_dout(0)) return;
  const ValueId hot = weighted_hot(c);
  c.set(0, c.with_dims_of(c.b.mul(c.b.neg(hot), loss_scale(c, hot)), c.in(0)));
}

}  // namespace

extern const OpDef kSoftmaxCrossEntropyLoss;
const OpDef kSoftmaxCrossEntropyLoss = with_grad(
    grad_sce, {"SoftmaxCrossEntropyLoss", 2, 3, 1, 2, types_loss, shapes_loss,
               [](KernelCtx& c) { visit_loss(c, [&]<class T, class L>() { run_sce<T, L>(c); }); }});

// NegativeLogLikelihoodLoss(log_probs [N, C, d...], labels, weights?): SCE without the softmax.
extern const OpDef kNegativeLogLikelihoodLoss;
const OpDef kNegativeLogLikelihoodLoss = with_grad(
    grad_nll, {"NegativeLogLikelihoodLoss", 2, 3, 1, 1, types_loss, shapes_loss, [](KernelCtx& c) {
                 visit_loss(c, [&]<class T, class L>() {
                   const T* x = c.in[0].data<T>();
                   nll<T, L>(c, [&](int64_t off) { return static_cast<double>(x[off]); });
                 });
               }});

}  // namespace sgraph::ops
