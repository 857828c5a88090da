// NonMaxSuppression(boxes [batch, spatial, 4], scores [batch, classes, spatial],
// max_output_boxes_per_class?, iou_threshold?, score_threshold?) {center_point_box = 0}: per image
// and class, greedily selects boxes by decreasing score (ties: the lower box index first), skipping
// those whose score is not above score_threshold and those overlapping an already selected box by
// an intersection over union above iou_threshold, until max_output_boxes_per_class (default 0)
// are selected. Output [selected, 3] i64 rows (batch index, class index, box index), by image,
// then class, then selection order. Boxes are corners [y1, x1, y2, x2] (either diagonal), or
// [x_center, y_center, width, height] when center_point_box is 1.
//
// How many boxes are selected depends on the inputs' values, so the shape rule reads them all
// (require_value) and runs the selection; the kernel runs it again to write the indices.
#include <algorithm>
#include <array>
#include <cmath>

#include "ops/op.h"

namespace sgraph::ops {
namespace {

struct NmsParams {
  int64_t max_per_class = 0;
  double iou = 0, score = 0;
  bool has_score = false;
  bool center = false;
};

// A parameter input holding one value (scalar or [1]); `what` names it in errors.
void check_one_value(const Shape& s, std::string_view what) {
  SG_CHECK(s.size() <= 1 && numel(s) == 1)
      << what << " must hold one value (a scalar or [1]), got shape " << shape_str(s);
}

NmsParams nms_params(const Node& n, const Tensor* max_out, const Tensor* iou, const Tensor* score) {
  NmsParams p;
  const int64_t cpb = n.attrs.get_int("center_point_box", 0);
  SG_CHECK(cpb == 0 || cpb == 1) << "center_point_box must be 0 or 1, got " << cpb;
  p.center = cpb == 1;
  if (max_out) p.max_per_class = std::max<int64_t>(0, max_out->to_int64()[0]);
  if (iou) {
    p.iou = iou->at_double(0);
    SG_CHECK(p.iou >= 0 && p.iou <= 1) << "iou_threshold must be in [0, 1], got " << p.iou;
  }
  if (score) {
    p.score = score->at_double(0);
    p.has_score = true;
  }
  return p;
}

// A box as its corners, y1 <= y2 and x1 <= x2.
struct Box {
  double y1, x1, y2, x2;
  double area() const { return (y2 - y1) * (x2 - x1); }
};

Box read_box(const double* b, bool center) {
  if (center) {
    const double hw = b[2] / 2, hh = b[3] / 2;
    return {b[1] - hh, b[0] - hw, b[1] + hh, b[0] + hw};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// Whether a and b overlap by an intersection over union above `threshold`.
bool overlaps(const Box& a, const Box& b, double threshold) {
  const double h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const double w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (!(h > 0 && w > 0)) return false;
  const double inter = h * w, uni = a.area() + b.area() - inter;
  return uni > 0 && inter / uni > threshold;
}

// The selected (batch, class, box) triples, in output order.
std::vector<std::array<int64_t, 3>> nms_select(const Tensor& boxes, const Tensor& scores,
                                               const NmsParams& p) {
  const int64_t batch = boxes.dim(0), spatial = boxes.dim(1), classes = scores.dim(1);
  std::vector<std::array<int64_t, 3>> out;
  if (p.max_per_class == 0) return out;
  std::vector<Box> bx(static_cast<size_t>(spatial));
  std::vector<int64_t> order;
  std::vector<Box> kept;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t i = 0; i < spatial; ++i) {
      double v[4];
      for (int k = 0; k < 4; ++k) v[k] = boxes.at_double((n * spatial + i) * 4 + k);
      bx[i] = read_box(v, p.center);
    }
    for (int64_t cl = 0; cl < classes; ++cl) {
      const int64_t base = (n * classes + cl) * spatial;
      order.clear();
      for (int64_t i = 0; i < spatial; ++i) {
        const double s = scores.at_double(base + i);
        if (!std::isnan(s) && (!p.has_score || s > p.score)) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return scores.at_double(base + a) > scores.at_double(base + b);
      });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= p.max_per_class) break;
        if (std::any_of(kept.begin(), kept.end(),
                        [&](const Box& k) { return overlaps(k, bx[i], p.iou); }))
          continue;
        kept.push_back(bx[i]);
        out.push_back({n, cl, i});
      }
    }
  }
  return out;
}

void types_nms(TypeCtx& c) {
  c.expect_float(0);
  c.expect_same(0, 1);
  if (c.has(2)) c.expect_one_of(2, {DType::i64});
  if (c.has(3)) c.expect_float(3);
  if (c.has(4)) c.expect_float(4);
  c.out[0] = DType::i64;
}

void check_nms_shapes(const Shape& boxes, const Shape& scores) {
  SG_CHECK(boxes.size() == 3 && boxes[2] == 4)
      << "boxes must have shape [batch, spatial, 4], got " << shape_str(boxes);
  SG_CHECK(scores.size() == 3 && scores[0] == boxes[0] && scores[2] == boxes[1])
      << "scores must have shape [" << boxes[0] << ", classes, " << boxes[1] << "] for boxes "
      << shape_str(boxes) << ", got " << shape_str(scores);
}

void shapes_nms(ShapeCtx& c) {
  check_nms_shapes(c.shape(0), c.shape(1));
  const char* names[] = {"max_output_boxes_per_class", "iou_threshold", "score_threshold"};
  for (size_t i = 2; i < 5; ++i)
    if (c.has(i)) check_one_value(c.shape(i), names[i - 2]);
  const Tensor& boxes = c.require_value(0);
  const Tensor& scores = c.require_value(1);
  const NmsParams p = nms_params(c.node, c.has(2) ? &c.require_value(2) : nullptr,
                                 c.has(3) ? &c.require_value(3) : nullptr,
                                 c.has(4) ? &c.require_value(4) : nullptr);
  c.out[0] = {static_cast<int64_t>(nms_select(boxes, scores, p).size()), 3};
}

void run_nms(KernelCtx& c) {
  const NmsParams p = nms_params(c.node, c.has(2) ? &c.in[2] : nullptr,
                                 c.has(3) ? &c.in[3] : nullptr, c.has(4) ? &c.in[4] : nullptr);
  const auto selected = nms_select(c.in[0], c.in[1], p);
  int64_t* y = c.out[0].data<int64_t>();
  for (size_t i = 0; i < selected.size(); ++i)
    for (size_t k = 0; k < 3; ++k) y[i * 3 + k] = selected[i][k];
}

}  // namespace

extern const OpDef kNonMaxSuppression;
const OpDef kNonMaxSuppression{"NonMaxSuppression", 2, 5, 1, 1, types_nms, shapes_nms, run_nms};

}  // namespace sgraph::ops
