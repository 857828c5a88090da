// MaxUnpool: hand-computed scatters (default output sizes with strides and pads, output_shape,
// indices across images and channels), and user errors (shapes, attributes, output_shape values,
// out-of-range indices, overflowing sizes).
#include <limits>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace test_max_unpool {  // this file's own names (the tests build as unity sources)

namespace {

Attributes window(Ints kernel, Ints strides, Ints pads = {}) {
  Attributes a{{"kernel_shape", std::move(kernel)}, {"strides", std::move(strides)}};
  if (!pads.empty()) a.set("pads", std::move(pads));
  return a;
}

std::vector<Tensor> unpool(const Tensor& x, const std::vector<int64_t>& idx, Attributes attrs,
                           const Tensor& output_shape = Tensor()) {
  const Tensor i = Tensor::from<int64_t>(x.shape(), idx);
  return run_op(OpKind::MaxUnpool, {x, i, output_shape}, std::move(attrs), 1, {false, false, true});
}

std::string unpool_error(const Tensor& x, const std::vector<int64_t>& idx, Attributes attrs,
                         const Tensor& output_shape = Tensor()) {
  return error_of([&] { unpool(x, idx, std::move(attrs), output_shape); });
}

}  // namespace

TEST_CASE("MaxUnpool: 2x2 windows with stride 2 give a 4x4 output") {
  // (2 - 1) * 2 + 2 = 4 per spatial dim; values land at flat offsets 5, 7, 13, 15.
  const Tensor x = f32({1, 1, 2, 2}, {5, 6, 7, 8});
  check_close(unpool(x, {5, 7, 13, 15}, window({2, 2}, {2, 2}))[0], {1, 1, 4, 4},
              {0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8});
}

TEST_CASE("MaxUnpool: 1-D, pads shrink the output, strides default to 1") {
  // (2 - 1) * 2 + 3 - 1 - 1 = 3
  check_close(unpool(f32({1, 1, 2}, {4, 9}), {0, 2}, window({3}, {2}, {1, 1}))[0], {1, 1, 3},
              {4, 0, 9});
  // No strides attribute: (3 - 1) * 1 + 2 = 4.
  check_close(unpool(f32({1, 1, 3}, {1, 2, 3}), {1, 2, 3}, {{"kernel_shape", Ints{2}}})[0],
              {1, 1, 4}, {0, 1, 2, 3});
}

TEST_CASE("MaxUnpool: output_shape sets the output size, positions keep their grid coordinates") {
  // The unpooled grid is 4x4: offsets 5, 7, 13, 15 are (1,1), (1,3), (3,1), (3,3), in the 5x5
  // output 6, 8, 16, 18.
  const Tensor x = Tensor::from<double>({1, 1, 2, 2}, {1, 2, 3, 4});
  std::vector<double> want(25, 0);
  want[6] = 1;
  want[8] = 2;
  want[16] = 3;
  want[18] = 4;
  check_close(unpool(x, {5, 7, 13, 15}, window({2, 2}, {2, 2}), ints({1, 1, 5, 5}))[0],
              {1, 1, 5, 5}, want);
}

TEST_CASE("MaxUnpool: indices span the whole output, a repeated one keeps the last value") {
  // X [2, 2, 1], output [2, 2, 2]: index 7 is image 1, channel 1; index 1 appears twice.
  const Tensor x = f32({2, 2, 1}, {1, 2, 3, 4});
  check_close(unpool(x, {7, 1, 1, 4}, window({2}, {2}))[0], {2, 2, 2}, {0, 3, 0, 0, 4, 0, 0, 1});
}

TEST_CASE("MaxUnpool: out-of-range indices are errors") {
  const Tensor x = f32({1, 1, 2}, {1, 2});
  CHECK(contains(
      unpool_error(x, {0, 4}, window({2}, {2})),
      "index 4 (I element 1) is outside the unpooled output of 4 elements, shape [1,1,4]"));
  CHECK(contains(unpool_error(x, {-1, 0}, window({2}, {2})),
                 "index -1 (I element 0) is outside the unpooled output of 4 elements"));
  CHECK(contains(unpool_error(x, {0, std::numeric_limits<int64_t>::max()}, window({2}, {2})),
                 "is outside the unpooled output of 4 elements"));
}

TEST_CASE("MaxUnpool: user errors in shapes and attributes") {
  const Tensor x = f32({1, 1, 2}, {1, 2});
  CHECK(contains(error_of([&] {
                   run_op(OpKind::MaxUnpool, {f32({2, 2}, {1, 2, 3, 4}), ints({0, 1, 2, 3})},
                          window({2}, {2}));
                 }),
                 "X must have shape [N, C, spatial...] (rank >= 3), got [2,2]"));
  CHECK(contains(error_of([&] {
                   run_op(OpKind::MaxUnpool, {x, ints({0, 1})}, window({2}, {2}));
                 }),
                 "I must have X's shape [1,1,2], got [2]"));
  CHECK(contains(unpool_error(x, {0, 1}, {{"strides", Ints{2}}}), "kernel_shape is required"));
  CHECK(contains(unpool_error(x, {0, 1}, window({2, 2}, {2})),
                 "kernel_shape must have 1 values, got 2"));
  CHECK(contains(unpool_error(x, {0, 1}, window({0}, {2})), "kernel_shape values must be >= 1"));
  CHECK(contains(unpool_error(x, {0, 1}, window({2}, {2}, {3, 3})),
                 "the output size along spatial dim 0 is negative (-2)"));
  CHECK(contains(unpool_error(x, {0, 1}, window({2}, {std::numeric_limits<int64_t>::max()})),
                 "the output size overflows int64"));
  CHECK(contains(
      error_of([&] {
        run_op(OpKind::MaxUnpool, {iota<int32_t>({1, 1, 2}), ints({0, 1})}, window({2}, {2}));
      }),
      "(MaxUnpool): input 0 has dtype i32"));
}

TEST_CASE("MaxUnpool: user errors in output_shape") {
  const Tensor x = f32({1, 1, 2}, {1, 2});
  const Attributes w = window({2}, {2});
  CHECK(contains(unpool_error(x, {0, 1}, w, ints({1, 4})),
                 "output_shape must have 3 values (X's rank), got 2"));
  CHECK(contains(unpool_error(x, {0, 1}, w, ints({1, 1, -4})),
                 "output_shape values must be >= 0, got -4"));
  CHECK(contains(unpool_error(x, {0, 1}, w, ints({2, 1, 4})),
                 "output_shape must keep X's N and C (1, 1), got [2,1,4]"));
  CHECK(contains(unpool_error(x, {0, 1}, w, Tensor::from<int64_t>({1, 3}, {1, 1, 4})),
                 "output_shape must be a 1-D tensor, got shape [1,3]"));
  const int64_t big = int64_t{1} << 40;
  CHECK(contains(
      unpool_error(f32({1, 1, 1, 1}, {1}), {0}, window({1, 1}, {1, 1}), ints({1, 1, big, big})),
      "the output's element count overflows int64"));
  // An output_shape smaller than the unpooled grid: a position beyond it is an error.
  CHECK(contains(
      unpool_error(x, {0, 3}, w, ints({1, 1, 3})),
      "index 3 (I element 1) falls outside output_shape [1,1,3] (unpooled shape [1,1,4])"));
  check_close(unpool(x, {0, 2}, w, ints({1, 1, 3}))[0], {1, 1, 3}, {1, 0, 2});
}

}  // namespace test_max_unpool
