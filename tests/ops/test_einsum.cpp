// Einsum: hand-computed contractions (matrix product, transposes, diagonals, traces, inner and
// outer products, sums), implicit outputs, ellipsis broadcasting, integer types, and user errors.
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

Tensor einsum(const std::string& eq, const std::vector<Tensor>& in) {
  return run_op(OpKind::Einsum, in, {{"equation", eq}})[0];
}
std::string einsum_error(const std::string& eq, const std::vector<Tensor>& in) {
  return op_error(OpKind::Einsum, in, {{"equation", eq}});
}

}  // namespace

TEST_CASE("Einsum: matrix products, explicit and implicit") {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {5, 6, 7, 8});
  // [[1*5+2*7, 1*6+2*8], [3*5+4*7, 3*6+4*8]]
  check_close(einsum("ij,jk->ik", {a, b}), {2, 2}, {19, 22, 43, 50});
  check_close(einsum("ij,jk", {a, b}), {2, 2}, {19, 22, 43, 50});
  check_close(einsum(" ij , jk -> ki ", {a, b}), {2, 2}, {19, 43, 22, 50});
  // A^T B = [[1*5+3*7, 1*6+3*8], [2*5+4*7, 2*6+4*8]]
  check_close(einsum("ji,jk->ik", {a, b}), {2, 2}, {26, 30, 38, 44});
  // a 2x3 by 3x1 product of odd sizes
  check_close(einsum("ab,bc->ac", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 1}, {1, 0, -1})}),
              {2, 1}, {-2, -2});
}

TEST_CASE("Einsum: transposes, diagonals, traces and sums") {
  const Tensor a = iota<float>({2, 3});  // [[0,1,2],[3,4,5]]
  check_close(einsum("ij->ji", {a}), {3, 2}, {0, 3, 1, 4, 2, 5});
  check_close(einsum("ji", {a}), {3, 2}, {0, 3, 1, 4, 2, 5});  // implicit output is "ij"
  check_close(einsum("Ba", {a}), {2, 3}, {0, 1, 2, 3, 4, 5});  // 'B' < 'a' in ASCII
  check_close(einsum("ij->", {a}), {}, {15});
  check_close(einsum("ij->j", {a}), {3}, {3, 5, 7});
  const Tensor sq = f32({2, 2}, {1, 2, 3, 4});
  check_close(einsum("ii->i", {sq}), {2}, {1, 4});
  check_close(einsum("ii", {sq}), {}, {5});
  // batch diagonal of two 2x2 matrices [[0,1],[2,3]] and [[4,5],[6,7]]
  check_close(einsum("bii->bi", {iota<double>({2, 2, 2})}), {2, 2}, {0, 3, 4, 7});
  // a label repeated three times: the diagonal of a 2x2x2 cube, elements 0 and 7
  check_close(einsum("iii->i", {iota<double>({2, 2, 2})}), {2}, {0, 7});
}

TEST_CASE("Einsum: inner, outer and three-operand products") {
  const Tensor u = f32({3}, {1, 2, 3}), v = f32({3}, {4, 5, 6});
  check_close(einsum("i,i", {u, v}), {}, {32});
  check_close(einsum("i,i->i", {u, v}), {3}, {4, 10, 18});
  check_close(einsum("i,j->ij", {f32({2}, {1, 2}), v}), {2, 3}, {4, 5, 6, 8, 10, 12});
  // u^T M v with M = [[1,0,0],[0,2,0],[0,0,3]]: 1*1*4 + 2*2*5 + 3*3*6 = 78
  const Tensor m = f32({3, 3}, {1, 0, 0, 0, 2, 0, 0, 0, 3});
  check_close(einsum("i,ij,j->", {u, m, v}), {}, {78});
  // a scalar operand scales
  check_close(einsum(",i->i", {Tensor::scalar<float>(2), u}), {3}, {2, 4, 6});
}

TEST_CASE("Einsum: ellipsis dims broadcast and lead the implicit output") {
  // A [2,1,2] = two 1x2 rows, B [2,1] without batch: [[1*5+2*6]], [[3*5+4*6]]
  const Tensor a = f32({2, 1, 2}, {1, 2, 3, 4}), b = f32({2, 1}, {5, 6});
  check_close(einsum("...ij,...jk->...ik", {a, b}), {2, 1, 1}, {17, 39});
  check_close(einsum("...ij,jk", {a, b}), {2, 1, 1}, {17, 39});
  // [1,2] against [3,2] row by row: 1*0+2*1, 1*2+2*3, 1*4+2*5
  check_close(einsum("...i,...i->...", {f32({1, 2}, {1, 2}), iota<float>({3, 2})}), {3},
              {2, 8, 14});
  // the ellipsis in the middle, and covering no dims
  check_close(einsum("i...j->j...i", {iota<float>({2, 1, 3})}), {3, 1, 2}, {0, 3, 1, 4, 2, 5});
  check_close(einsum("...ij->...ji", {f32({1, 2}, {1, 2})}), {2, 1}, {1, 2});
}

TEST_CASE("Einsum: integer types and empty dims") {
  const Tensor a = iota<int64_t>({2, 3}, 1), b = iota<int32_t>({3}, 1);
  const Tensor s = einsum("ij->i", {a});
  CHECK(s.dtype() == DType::i64);
  check_close(s, {2}, {6, 15});
  check_close(einsum("i,i->", {b, b}), {}, {14});
  // a summed dim of size 0 gives zeros; a kept one gives an empty output
  check_close(einsum("ij,jk->ik", {Tensor(DType::f32, {2, 0}), Tensor(DType::f32, {0, 3})}), {2, 3},
              {0, 0, 0, 0, 0, 0});
  check_close(einsum("ij->j", {Tensor(DType::f32, {2, 0})}), {0}, {});
}

TEST_CASE("Einsum: errors") {
  const Tensor a = iota<float>({2, 3}), b = iota<float>({3, 2});
  CHECK(einsum_error("ij,jk->ik", {a, b}).empty());
  CHECK(contains(einsum_error("ij->ij", {a, b}), "has 1 input terms for 2 inputs"));
  CHECK(contains(einsum_error("ij,jk,kl", {a, b}), "has 3 input terms for 2 inputs"));
  CHECK(contains(einsum_error("ij,ij->i", {a, b}), "label 'i' has size 2 and 3"));
  CHECK(contains(einsum_error("ii", {a}), "label 'i' has size 2 and 3"));
  CHECK(contains(einsum_error("ijk,jk", {a, b}), "input 0 has rank 2 but its term names 3 dims"));
  CHECK(contains(einsum_error("i...jkl", {a}), "input 0 has rank 2 but its term names 4 dims"));
  CHECK(contains(einsum_error("i1->i", {a}), "equation labels must be letters, got '1'"));
  CHECK(contains(einsum_error("i..j", {a}), "must be part of '...'"));
  CHECK(contains(einsum_error("......", {a}), "'...' more than once"));
  CHECK(contains(einsum_error("ij->k", {a}), "output label 'k' is not in any input term"));
  CHECK(contains(einsum_error("ij->ii", {a}), "output label 'i' appears more than once"));
  CHECK(contains(einsum_error("ij->i,j", {a}), "must have one output term"));
  CHECK(contains(einsum_error("ij->i->j", {a}), "must have one output term"));
  CHECK(contains(einsum_error("...j->j", {a}), "no '...' to place them"));
  CHECK(
      contains(einsum_error("...ij,...jk->...ik", {iota<float>({2, 2, 3}), iota<float>({3, 3, 2})}),
               "broadcast"));
  CHECK(contains(einsum_error("ij,jk", {a, iota<double>({3, 2})}), "same dtype"));
  CHECK(contains(einsum_error("i", {Tensor::from<bool>({1}, {true})}), "input 0"));
  CHECK(contains(op_error(OpKind::Einsum, {a}), "equation"));
}
