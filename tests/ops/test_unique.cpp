// Unique: hand-computed distinct elements and slices (sorted and in order of first occurrence),
// NaN and signed zero, empty inputs, fewer outputs, and user errors.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

std::vector<Tensor> unique(const Tensor& x, Attributes a = {}, int outputs = 4) {
  return run_op(OpKind::Unique, {x}, std::move(a), outputs);
}

void check_ints(const Tensor& t, const std::vector<double>& want) {
  CHECK(t.dtype() == DType::i64);
  check_close(t, {static_cast<int64_t>(want.size())}, want);
}

}  // namespace

TEST_CASE("Unique: flattened, sorted and unsorted") {
  const Tensor x = Tensor::from<int32_t>({2, 3}, {2, 1, 1, 3, 4, 3});
  std::vector<Tensor> r = unique(x);
  REQUIRE(r.size() == 4);
  CHECK(r[0].dtype() == DType::i32);
  check_close(r[0], {4}, {1, 2, 3, 4});
  check_ints(r[1], {1, 0, 3, 4});
  check_ints(r[2], {1, 0, 0, 2, 3, 2});
  check_ints(r[3], {2, 1, 2, 1});
  r = unique(x, {{"sorted", int64_t{0}}});
  check_close(r[0], {4}, {2, 1, 3, 4});
  check_ints(r[1], {0, 1, 3, 4});
  check_ints(r[2], {0, 1, 1, 2, 3, 2});
  check_ints(r[3], {1, 2, 2, 1});
}

TEST_CASE("Unique: rows along axis 0, columns along axis 1 and -1") {
  // rows (1,0,0) twice and (2,3,4)
  const Tensor rows = f32({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4});
  std::vector<Tensor> r = unique(rows, axis(0));
  check_close(r[0], {2, 3}, {1, 0, 0, 2, 3, 4});
  check_ints(r[1], {0, 2});
  check_ints(r[2], {0, 0, 1});
  check_ints(r[3], {2, 1});
  // columns c0 = (3,0), c1 = (1,2), c2 = (3,0): sorted, c1 comes first
  const Tensor cols = Tensor::from<int64_t>({2, 3}, {3, 1, 3, 0, 2, 0});
  for (int64_t a : {1, -1}) {
    r = unique(cols, axis(a));
    check_close(r[0], {2, 2}, {1, 3, 2, 0});
    check_ints(r[1], {1, 0});
    check_ints(r[2], {1, 0, 1});
    check_ints(r[3], {1, 2});
  }
  Attributes unsorted = axis(1);
  unsorted.set("sorted", int64_t{0});
  r = unique(cols, unsorted);
  check_close(r[0], {2, 2}, {3, 1, 0, 2});
  check_ints(r[1], {0, 1});
  check_ints(r[2], {0, 1, 0});
  check_ints(r[3], {2, 1});
}

TEST_CASE("Unique: slices of a 3-D tensor compare element by element, outer dims first") {
  // x [2, 3, 2] along axis 1: slice k is (x[0,k,0], x[0,k,1], x[1,k,0], x[1,k,1])
  // s0 = (1,5, 0,0), s1 = (1,5, 0,0), s2 = (1,2, 9,9): sorted s2 < s0
  const Tensor x = Tensor::from<int64_t>({2, 3, 2}, {1, 5, 1, 5, 1, 2, 0, 0, 0, 0, 9, 9});
  const std::vector<Tensor> r = unique(x, axis(1));
  check_close(r[0], {2, 2, 2}, {1, 2, 1, 5, 9, 9, 0, 0});
  check_ints(r[1], {2, 0});
  check_ints(r[2], {1, 1, 0});
  check_ints(r[3], {1, 2});
}

TEST_CASE("Unique: NaNs are one value above the numbers, -0 equals 0") {
  const double nan = kNaN;
  const Tensor x = Tensor::from<double>({5}, {nan, 1, nan, -0.0, 0.0});
  const std::vector<Tensor> r = unique(x);
  check_close(r[0], {3}, {0, 1, nan});
  CHECK(std::signbit(r[0].data<double>()[0]));  // the first occurrence, -0.0
  check_ints(r[1], {3, 1, 0});
  check_ints(r[2], {2, 1, 2, 0, 0});
  check_ints(r[3], {2, 1, 2});
}

TEST_CASE("Unique: bool, empty input, a scalar, fewer outputs") {
  const std::vector<Tensor> b = unique(Tensor::from<bool>({3}, {true, false, true}));
  check_close(b[0], {2}, {0, 1});
  check_ints(b[3], {1, 2});
  const std::vector<Tensor> e = unique(Tensor(DType::f32, {0, 3}));
  check_close(e[0], {0}, {});
  check_ints(e[1], {});
  check_ints(e[2], {});
  const std::vector<Tensor> ea = unique(Tensor(DType::f32, {2, 0}), axis(0));
  check_close(ea[0], {1, 0}, {});
  check_ints(ea[2], {0, 0});
  check_ints(ea[3], {2});
  const std::vector<Tensor> s = unique(Tensor::scalar<float>(7));
  check_close(s[0], {1}, {7});
  check_ints(s[2], {0});
  const std::vector<Tensor> one = unique(iota<float>({3}), {}, 1);
  REQUIRE(one.size() == 1);
  check_close(one[0], {3}, {0, 1, 2});
}

TEST_CASE("Unique: errors") {
  const Tensor x = iota<float>({2, 2});
  CHECK(op_error(OpKind::Unique, {x}, {}, 4).empty());
  CHECK(contains(op_error(OpKind::Unique, {x}, axis(2), 4), "axis"));
  CHECK(contains(op_error(OpKind::Unique, {x}, axis(-3), 4), "axis"));
  CHECK(contains(op_error(OpKind::Unique, {Tensor::scalar<float>(1)}, axis(0), 4), "axis"));
  CHECK(contains(op_error(OpKind::Unique, {x}, {{"sorted", int64_t{2}}}, 4),
                 "sorted must be 0 or 1, got 2"));
}
