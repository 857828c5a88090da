// DepthToSpace (DCR and CRD) and SpaceToDepth: hand-computed layouts, the round trip, and errors.
#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
Attributes block(int64_t b, std::string mode = "DCR") {
  return {{"blocksize", b}, {"mode", std::move(mode)}};
}
// [1, 1, 4, 4] = DepthToSpace(DCR, b = 2) of 0..15 as [1, 4, 2, 2]: element (h*2+i, w*2+j) is
// channel i*2+j at (h, w), i.e. (i*2+j)*4 + h*2 + w.
const std::vector<double> kSpread = {0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15};
}  // namespace

TEST_CASE("DepthToSpace: DCR and CRD modes") {
  check_close(run_op(OpKind::DepthToSpace, {iota<float>({1, 4, 2, 2})}, block(2))[0], {1, 1, 4, 4},
              kSpread);
  // 8 channels, 1x1: DCR reads channel (i*2+j)*2 + c, CRD channel c*4 + i*2 + j.
  check_close(run_op(OpKind::DepthToSpace, {iota<float>({1, 8, 1, 1})}, block(2))[0], {1, 2, 2, 2},
              {0, 2, 4, 6, 1, 3, 5, 7});
  const Tensor crd =
      run_op(OpKind::DepthToSpace, {iota<int64_t>({1, 8, 1, 1})}, block(2, "CRD"))[0];
  CHECK(crd.dtype() == DType::i64);
  check_close(crd, {1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // Blocksize 1 is the identity; an empty batch stays empty.
  check_close(run_op(OpKind::DepthToSpace, {iota<float>({1, 2, 1, 2})}, block(1))[0], {1, 2, 1, 2},
              {0, 1, 2, 3});
  check_close(run_op(OpKind::DepthToSpace, {Tensor(DType::f32, {0, 4, 1, 1})}, block(2))[0],
              {0, 1, 2, 2}, {});
}

TEST_CASE("SpaceToDepth: the inverse of DCR DepthToSpace") {
  const Tensor x = Tensor::from<double>({1, 1, 4, 4}, kSpread);
  check_close(run_op(OpKind::SpaceToDepth, {x}, {{"blocksize", int64_t{2}}})[0], {1, 4, 2, 2},
              values(iota<double>({16})));
  // Two channels, 2x2 blocks of bools: channel (i*2+j)*2 + c.
  const Tensor b =
      Tensor::from<bool>({1, 2, 2, 2}, {true, false, false, false, false, false, false, true});
  check_close(run_op(OpKind::SpaceToDepth, {b}, {{"blocksize", int64_t{2}}})[0], {1, 8, 1, 1},
              {1, 0, 0, 0, 0, 0, 0, 1});
}

TEST_CASE("DepthToSpace and SpaceToDepth: errors") {
  CHECK(
      contains(op_error(OpKind::DepthToSpace, {iota<float>({4, 2, 2})}, block(2)), "[N, C, H, W]"));
  CHECK(contains(op_error(OpKind::DepthToSpace, {iota<float>({1, 3, 1, 1})}, block(2)),
                 "not a multiple of blocksize^2 = 4"));
  CHECK(contains(op_error(OpKind::DepthToSpace, {iota<float>({1, 4, 1, 1})}, block(0)),
                 "blocksize must be >= 1"));
  CHECK(contains(op_error(OpKind::DepthToSpace, {iota<float>({1, 4, 1, 1})}, block(2, "XYZ")),
                 "mode must be DCR or CRD"));
  CHECK(
      contains(op_error(OpKind::DepthToSpace, {iota<float>({1, 4, 1, 1})}, block(int64_t{1} << 40)),
               "too large"));
  CHECK(contains(
      op_error(OpKind::SpaceToDepth, {iota<float>({1, 1, 3, 2})}, {{"blocksize", int64_t{2}}}),
      "not multiples of blocksize 2"));
  CHECK(contains(
      op_error(OpKind::SpaceToDepth, {iota<float>({1, 1, 2})}, {{"blocksize", int64_t{2}}}),
      "[N, C, H, W]"));
}

// Both modes, the spatial dims growing with n ([1, 8, n, 3] -> [1, 2, 2n, 6]), and blocks of 3.
SG_LOWERING_SAMPLE(DepthToSpace, modes) {
  const ValueId x = s.input(DType::f32, {1, 8, n, 3});
  s.output(s.b.depth_to_space(x, Attributes{{"blocksize", int64_t{2}}}));
  s.output(
      s.b.depth_to_space(x, Attributes{{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}));
  s.output(s.b.depth_to_space(s.input(DType::i64, {n, 9, 2, 1}, -9, 9),
                              Attributes{{"blocksize", int64_t{3}}}));
}

// A batch of n ([n, 2, 4, 6] -> [n, 8, 2, 3]), and a height of 2n, compiled for one n (its
// output's n/2 is a division the dynamic tier does not take).
SG_LOWERING_SAMPLE(SpaceToDepth, blocks) {
  s.output(
      s.b.space_to_depth(s.input(DType::f32, {n, 2, 4, 6}), Attributes{{"blocksize", int64_t{2}}}));
}
SG_LOWERING_SAMPLE(SpaceToDepth, tall) {
  s.output(s.b.space_to_depth(s.input(DType::f32, {1, 3, 2 * n, 4}),
                              Attributes{{"blocksize", int64_t{2}}}));
}
