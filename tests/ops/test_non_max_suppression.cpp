// NonMaxSuppression: hand-computed selections (IoU suppression, the threshold itself not
// suppressing, output limit, score threshold, center boxes, flipped corners, batches and classes),
// and user errors.
#include <optional>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// Boxes as corners [y1, x1, y2, x2]:
//   b0 [0,0,10,10]; b1 [0,1,10,11] (IoU with b0: 90 / 110); b2 [0,20,10,30] (overlaps none);
//   b3 [0,0,10,5] (IoU with b0: 50 / 100 = 0.5, with b1: 40 / 110).
const Tensor kBoxes = f32({1, 4, 4}, {0, 0, 10, 10, 0, 1, 10, 11, 0, 20, 10, 30, 0, 0, 10, 5});
const Tensor kScores = f32({1, 1, 4}, {0.9f, 0.95f, 0.8f, 0.7f});

Tensor nms(const Tensor& boxes, const Tensor& scores, std::optional<int64_t> max_out, float iou,
           std::optional<float> score, Attributes attrs = {}) {
  return run_op(OpKind::NonMaxSuppression,
                {boxes, scores, max_out ? ints({*max_out}) : Tensor(), f32({1}, {iou}),
                 score ? f32({1}, {*score}) : Tensor()},
                std::move(attrs))[0];
}

}  // namespace

TEST_CASE("NonMaxSuppression: greedy selection by score, suppressed by IoU") {
  // By score: b1 (kept), b0 (IoU 0.82 with b1: suppressed), b2 (kept), b3 (IoU 0.36: kept).
  const Tensor y = nms(kBoxes, kScores, 10, 0.5f, std::nullopt);
  CHECK(y.dtype() == DType::i64);
  check_close(y, {3, 3}, {0, 0, 1, 0, 0, 2, 0, 0, 3});
  // At most 2 per class.
  check_close(nms(kBoxes, kScores, 2, 0.5f, std::nullopt), {2, 3}, {0, 0, 1, 0, 0, 2});
  // Only scores above 0.8: b1 and b0, which b1 suppresses.
  check_close(nms(kBoxes, kScores, 10, 0.5f, 0.8f), {1, 3}, {0, 0, 1});
  // An IoU equal to the threshold does not suppress: b0 and b3 (IoU 0.5) both stay.
  const Tensor two = f32({1, 2, 4}, {0, 0, 10, 10, 0, 0, 10, 5});
  check_close(nms(two, f32({1, 1, 2}, {0.9f, 0.8f}), 10, 0.5f, std::nullopt), {2, 3},
              {0, 0, 0, 0, 0, 1});
  // No max_output_boxes_per_class: nothing selected.
  check_close(nms(kBoxes, kScores, std::nullopt, 0.5f, std::nullopt), {0, 3}, {});
}

TEST_CASE("NonMaxSuppression: center boxes, flipped corners, equal scores") {
  // b0 and b1 as [x_center, y_center, width, height].
  const Tensor centers = f32({1, 2, 4}, {5, 5, 10, 10, 6, 5, 10, 10});
  check_close(nms(centers, f32({1, 1, 2}, {0.9f, 0.95f}), 10, 0.5f, std::nullopt,
                  {{"center_point_box", int64_t{1}}}),
              {1, 3}, {0, 0, 1});
  // b0 given by its other diagonal is still b0, and suppresses b1.
  const Tensor flipped = f32({1, 2, 4}, {10, 10, 0, 0, 0, 1, 10, 11});
  check_close(nms(flipped, f32({1, 1, 2}, {0.9f, 0.8f}), 10, 0.5f, std::nullopt), {1, 3},
              {0, 0, 0});
  // Equal scores: the lower box index first.
  const Tensor same = f32({1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1});
  check_close(nms(same, f32({1, 1, 2}, {0.5f, 0.5f}), 10, 0.5f, std::nullopt), {1, 3}, {0, 0, 0});
}

TEST_CASE("NonMaxSuppression: batches and classes in order") {
  // Two images of one box each, two classes; scores above 0.3 only.
  const Tensor boxes = f32({2, 1, 4}, {0, 0, 1, 1, 0, 0, 2, 2});
  const Tensor scores = f32({2, 2, 1}, {0.5f, 0.6f, 0.7f, 0.1f});
  check_close(nms(boxes, scores, 5, 0.5f, 0.3f), {3, 3}, {0, 0, 0, 0, 1, 0, 1, 0, 0});
}

TEST_CASE("NonMaxSuppression: user errors") {
  CHECK(contains(op_error(OpKind::NonMaxSuppression, {f32({1, 1, 3}, {0, 0, 1}), kScores}),
                 "boxes must have shape [batch, spatial, 4]"));
  CHECK(contains(op_error(OpKind::NonMaxSuppression, {kBoxes, f32({1, 1, 3}, {1, 1, 1})}),
                 "scores must have shape [1, classes, 4]"));
  CHECK(contains(error_of([] { nms(kBoxes, kScores, 1, 1.5f, std::nullopt); }),
                 "iou_threshold must be in [0, 1]"));
  CHECK(contains(op_error(OpKind::NonMaxSuppression, {kBoxes, kScores, ints({1, 2})}),
                 "max_output_boxes_per_class must hold one value"));
  CHECK(!op_error(OpKind::NonMaxSuppression, {kBoxes, kScores, f32({1}, {1})}).empty());
  CHECK(contains(
      op_error(OpKind::NonMaxSuppression, {kBoxes, kScores}, {{"center_point_box", int64_t{2}}}),
      "center_point_box"));
}
