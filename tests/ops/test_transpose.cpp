// Tests for Transpose and Expand: hand-computed cases, every dtype, and random inputs compared
// with xtensor's xt::transpose and xt::broadcast.
#include <algorithm>
#include <numeric>
#include <random>
#include <xtensor/xarray.hpp>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmanipulation.hpp>

#include "jit/lowering_samples.h"
#include "xt_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

template <class T>
Tensor random_tensor(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t(dtype_v<T>, std::move(shape));
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if constexpr (std::is_same_v<T, bool>)
      p[i] = rng() % 2 == 0;
    else if constexpr (std::is_floating_point_v<T>)
      p[i] = static_cast<T>(std::uniform_real_distribution<double>(-5, 5)(rng));
    else
      p[i] = static_cast<T>(rng() % 251);
  }
  return t;
}

// `got` equals the (evaluated, row-major) xtensor array `want` exactly.
template <class T>
void check_equal(const Tensor& got, const xt::xarray<T>& want) {
  REQUIRE(got.dtype() == dtype_v<T>);
  const Shape want_shape(want.shape().begin(), want.shape().end());
  REQUIRE_MESSAGE(got.shape() == want_shape, shape_str(got.shape())
                                                 << " vs " << shape_str(want_shape));
  int64_t bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) bad += got.data<T>()[i] != want.data()[i];
  CHECK_MESSAGE(bad == 0, bad << " elements differ, shape " << shape_str(got.shape()));
}

Tensor transpose(const Tensor& x, std::optional<Ints> perm) {
  Attributes a;
  if (perm) a.set("perm", *perm);
  return test::run_op(OpKind::Transpose, {x}, a)[0];
}

Tensor expand(const Tensor& x, const Shape& shape) {
  return test::run_op(OpKind::Expand, {x, ints(shape)}, {}, 1, {false, true})[0];
}

// Every permutation of x's dims against xt::transpose.
template <class T>
void check_all_perms(const Shape& shape, uint32_t seed) {
  const Tensor x = random_tensor<T>(shape, seed);
  const xt::xarray<T> ref = to_xt<T>(x);
  Ints perm(shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  do {
    INFO("dtype " << dtype_name(dtype_v<T>) << " shape " << shape_str(shape) << " perm "
                  << shape_str(perm));
    const xt::xarray<T> want = xt::transpose(ref, std::vector<size_t>(perm.begin(), perm.end()));
    check_equal<T>(transpose(x, perm), want);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

template <class T>
void check_expand(const Shape& in, const Shape& given, const Shape& out, uint32_t seed) {
  INFO("dtype " << dtype_name(dtype_v<T>) << " " << shape_str(in) << " by " << shape_str(given));
  const Tensor x = random_tensor<T>(in, seed);
  const xt::xarray<T> want =
      xt::broadcast(to_xt<T>(x), std::vector<size_t>(out.begin(), out.end()));
  check_equal<T>(expand(x, given), want);
}

}  // namespace

TEST_CASE("Transpose: hand-computed cases") {
  // x = [[1,2,3],[4,5,6]]; the default perm reverses the dims: [[1,4],[2,5],[3,6]].
  const Tensor x = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  test::check_close(transpose(x, std::nullopt), {3, 2}, {1, 4, 2, 5, 3, 6});
  test::check_close(transpose(x, Ints{1, 0}), {3, 2}, {1, 4, 2, 5, 3, 6});
  test::check_close(transpose(x, Ints{0, 1}), {2, 3}, {1, 2, 3, 4, 5, 6});
  // x[a][b][c] = 12a + 4b + c, shape [2,3,4]; perm [1,0,2] gives y[b][a][c] = x[a][b][c]: the
  // rows of 4 stay contiguous.
  Tensor x3(DType::i64, {2, 3, 4});
  for (int64_t i = 0; i < 24; ++i) x3.data<int64_t>()[i] = i;
  std::vector<double> want;
  for (int b = 0; b < 3; ++b)
    for (int a = 0; a < 2; ++a)
      for (int c = 0; c < 4; ++c) want.push_back(12 * a + 4 * b + c);
  test::check_close(transpose(x3, Ints{1, 0, 2}), {3, 2, 4}, want);
  // perm [2,0,1] on [2,1,3]: y[c][a][0] = x[a][0][c] = 3a + c + 1.
  test::check_close(transpose(Tensor::from<double>({2, 1, 3}, {1, 2, 3, 4, 5, 6}), Ints{2, 0, 1}),
                    {3, 2, 1}, {1, 4, 2, 5, 3, 6});
}

TEST_CASE("Transpose: rank 0, size-1 and empty dims") {
  test::check_close(transpose(Tensor::scalar<float>(3.5f), std::nullopt), {}, {3.5});
  test::check_close(transpose(Tensor::from<float>({1, 5, 1}, {1, 2, 3, 4, 5}), Ints{2, 1, 0}),
                    {1, 5, 1}, {1, 2, 3, 4, 5});
  test::check_close(transpose(Tensor::from<float>({1, 3}, {1, 2, 3}), std::nullopt), {3, 1},
                    {1, 2, 3});
  const Tensor e = transpose(Tensor(DType::f32, {0, 3}), std::nullopt);
  CHECK(e.shape() == Shape{3, 0});
}

TEST_CASE("Transpose: every permutation of odd sizes, every dtype, against xt::transpose") {
  check_all_perms<float>({7, 13, 3}, 1);
  check_all_perms<double>({7, 13, 3}, 2);
  check_all_perms<int64_t>({7, 13, 3}, 3);
  check_all_perms<int32_t>({5, 1, 7}, 4);
  check_all_perms<bool>({7, 13, 3}, 5);
  check_all_perms<uint8_t>({7, 13, 3}, 6);
  check_all_perms<int8_t>({3, 5, 7}, 7);
  check_all_perms<float>({2, 3, 4, 5}, 8);
  check_all_perms<uint8_t>({3, 1, 2, 5}, 9);
  check_all_perms<float>({33, 65}, 10);
}

TEST_CASE("Transpose: errors") {
  const Tensor x = Tensor(DType::f32, {2, 3, 4});
  CHECK(contains(test::op_error(OpKind::Transpose, {x}, {{"perm", Ints{1, 0}}}),
                 "not a permutation of 0..2"));
  CHECK(contains(test::op_error(OpKind::Transpose, {x}, {{"perm", Ints{0, 1, 1}}}),
                 "not a permutation"));
  CHECK(contains(test::op_error(OpKind::Transpose, {x}, {{"perm", Ints{0, 1, 3}}}),
                 "not a permutation"));
  CHECK(contains(test::op_error(OpKind::Transpose, {x}, {{"perm", Ints{-1, 0, 1}}}),
                 "not a permutation"));
}

TEST_CASE("Expand: hand-computed broadcasts") {
  const Tensor col = Tensor::from<float>({3, 1}, {1, 2, 3});
  test::check_close(expand(col, {1, 4}), {3, 4}, {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  test::check_close(expand(col, {2, 3, 2}), {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  // The result can be larger than the given shape (bidirectional broadcast).
  test::check_close(expand(col, {1}), {3, 1}, {1, 2, 3});
  test::check_close(expand(col, {}), {3, 1}, {1, 2, 3});
  const Tensor row = Tensor::from<int64_t>({3}, {1, 2, 3});
  test::check_close(expand(row, {2, 3}), {2, 3}, {1, 2, 3, 1, 2, 3});
  test::check_close(expand(Tensor::scalar<double>(-1.5), {2, 2}), {2, 2}, {-1.5, -1.5, -1.5, -1.5});
  CHECK(expand(col, {0, 3, 4}).shape() == Shape{0, 3, 4});
  // The shape known only at run time.
  const Tensor y = test::run_op(OpKind::Expand, {row, ints({2, 1, 1})})[0];
  test::check_close(y, {2, 1, 3}, {1, 2, 3, 1, 2, 3});
}

TEST_CASE("Expand: every dtype against xt::broadcast") {
  check_expand<float>({7, 1, 3}, {2, 1, 5, 3}, {2, 7, 5, 3}, 1);
  check_expand<double>({1, 7}, {13, 1}, {13, 7}, 2);
  check_expand<int64_t>({7, 1, 3}, {5, 7, 4, 1}, {5, 7, 4, 3}, 3);
  check_expand<int32_t>({1}, {3, 7}, {3, 7}, 4);
  check_expand<bool>({7, 1, 3}, {2, 7, 5, 3}, {2, 7, 5, 3}, 5);
  check_expand<uint8_t>({1, 13, 1}, {7, 1, 3}, {7, 13, 3}, 6);
  check_expand<int8_t>({7, 13}, {7, 13}, {7, 13}, 7);
}

TEST_CASE("Expand: errors") {
  const Tensor x = Tensor::from<float>({3}, {1, 2, 3});
  CHECK(contains(test::op_error(OpKind::Expand, {x, ints({4})}, {}, 1, {false, true}),
                 "cannot be broadcast"));
  CHECK(contains(test::op_error(OpKind::Expand, {x, ints({2, 4})}),
                 "[3] and [2,4] cannot be broadcast"));
  CHECK(contains(test::op_error(OpKind::Expand, {x, ints({-1, 3})}), "negative dimension"));
  CHECK(contains(test::op_error(OpKind::Expand, {x, Tensor::from<int64_t>({1, 1}, {3})}), "1-D"));
  CHECK(contains(test::op_error(OpKind::Expand, {x, Tensor::from<float>({1}, {3})}),
                 "expected one of"));
  CHECK(
      contains(test::op_error(OpKind::Expand, {x, ints({1LL << 32, 1LL << 32, 3})}), "too large"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(Transpose, rank_3) {
  s.output(s.b.transpose(s.input(DType::f32, {n, 3, 2}), Attributes{{"perm", Ints{2, 0, 1}}}));
}

SG_LOWERING_SAMPLE(Transpose, default_perm_i32) {
  s.output(s.b.transpose(s.input(DType::i32, {2, n}, -100, 100)));
}

SG_LOWERING_SAMPLE(Expand, new_and_size_1_dims) {
  s.output(s.b.expand(s.input(DType::f32, {n, 1}), s.b.ints({2, 1, 4})));
}
