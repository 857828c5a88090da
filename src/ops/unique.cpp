// Unique(x) {axis, sorted = 1} -> Y, indices, inverse_indices, counts: the distinct elements of x
// (flattened when `axis` is absent), or its distinct slices along `axis`.
//   Y               the distinct elements or slices: ascending when `sorted` (slices compare
//                   lexicographically, their elements in row-major order), else in order of first
//                   occurrence; with an axis, x's shape with that dim = the number of them
//   indices         [U] i64: where each one first occurs in x (flattened, or along the axis)
//   inverse_indices [n] i64: for each element (slice) of x, its position in Y
//   counts          [U] i64: how many times each one occurs
// NaNs compare equal to each other and above every number; -0.0 equals 0.0. U depends on x's
// values, so the shape rule reads them (require_value), as Compress and NonZero do.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include "ops/op.h"

namespace sgraph::ops {
namespace {

enum Output : size_t { kY, kIndices, kInverse, kCounts };

std::optional<int64_t> unique_axis(const Node& n, int64_t rank) {
  if (!n.attrs.has("axis")) return std::nullopt;
  return normalize_axis(n.attrs.get_int("axis"), rank);
}

// The slices of x along the axis (the elements when flattened), grouped.
struct Groups {
  AxisSplit split;               // x as [outer, dim, inner]: slice k is (o, k, i) for all o, i
  std::vector<int64_t> first;    // per distinct slice, in Y's order: its first index
  std::vector<int64_t> count;    // per distinct slice, in Y's order
  std::vector<int64_t> inverse;  // per slice of x: its position in Y
};

// Three-way comparison with NaN equal to NaN and greater than any number.
template <class T>
int compare(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

Groups group_slices(const Tensor& x, std::optional<int64_t> axis, bool sorted) {
  Groups g;
  g.split = axis ? split_at_axis(x.shape(), *axis) : AxisSplit{1, x.numel(), 1};
  const AxisSplit s = g.split;
  std::vector<int64_t> order(s.dim);
  std::iota(order.begin(), order.end(), 0);
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* p = x.data<T>();
    // Lexicographic comparison of slices a and b.
    auto cmp = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          const int64_t base = o * s.dim * s.inner + i;
          if (int r = compare(p[base + a * s.inner], p[base + b * s.inner])) return r;
        }
      return 0;
    };
    // Stable: within a run of equal slices the first is the first occurrence.
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
    g.inverse.assign(s.dim, 0);
    std::vector<int64_t> group_of(s.dim);  // position in `order` -> group (sorted order)
    for (int64_t k = 0; k < s.dim; ++k) {
      if (k == 0 || cmp(order[k - 1], order[k]) != 0) {
        g.first.push_back(order[k]);
        g.count.push_back(0);
      }
      ++g.count.back();
      group_of[k] = static_cast<int64_t>(g.first.size()) - 1;
    }
    std::vector<int64_t> rank(g.first.size());  // sorted group -> position in Y
    std::iota(rank.begin(), rank.end(), 0);
    if (!sorted) {
      std::vector<int64_t> by_first(g.first.size());
      std::iota(by_first.begin(), by_first.end(), 0);
      std::sort(by_first.begin(), by_first.end(),
                [&](int64_t a, int64_t b) { return g.first[a] < g.first[b]; });
      std::vector<int64_t> first(g.first.size()), count(g.first.size());
      for (size_t u = 0; u < by_first.size(); ++u) {
        rank[by_first[u]] = static_cast<int64_t>(u);
        first[u] = g.first[by_first[u]];
        count[u] = g.count[by_first[u]];
      }
      g.first = std::move(first);
      g.count = std::move(count);
    }
    for (int64_t k = 0; k < s.dim; ++k) g.inverse[order[k]] = rank[group_of[k]];
  });
  return g;
}

void types_unique(TypeCtx& c) {
  const int64_t sorted = c.attrs().get_int("sorted", 1);
  SG_CHECK(sorted == 0 || sorted == 1) << "sorted must be 0 or 1, got " << sorted;
  for (size_t k = 0; k < c.out.size(); ++k) c.out[k] = k == kY ? c.in[0] : DType::i64;
}

void shapes_unique(ShapeCtx& c) {
  const std::optional<int64_t> axis = unique_axis(c.node, c.rank(0));
  const Tensor& x = c.require_value(0);
  const Groups g = group_slices(x, axis, true);
  const int64_t u = static_cast<int64_t>(g.first.size());
  Shape y = {u};
  if (axis) {
    y = x.shape();
    y[*axis] = u;
  }
  for (size_t k = 0; k < c.out.size(); ++k)
    c.out[k] = k == kY ? y : (k == kInverse ? Shape{g.split.dim} : Shape{u});
}

void run_unique(KernelCtx& c) {
  const Tensor& x = c.in[0];
  const std::optional<int64_t> axis = unique_axis(c.node, x.rank());
  const Groups g = group_slices(x, axis, c.attrs().get_int("sorted", 1) != 0);
  const AxisSplit s = g.split;
  const int64_t u = static_cast<int64_t>(g.first.size());
  const size_t block = static_cast<size_t>(s.inner) * dtype_size(x.dtype());
  const auto* src = static_cast<const char*>(x.raw_data());
  auto* dst = static_cast<char*>(c.out[kY].raw_data());
  if (block > 0)
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t k = 0; k < u; ++k)
        std::memcpy(dst + (o * u + k) * block, src + (o * s.dim + g.first[k]) * block, block);
  const std::vector<int64_t>* lists[] = {nullptr, &g.first, &g.inverse, &g.count};
  for (size_t k = kIndices; k < c.out.size(); ++k)
    std::copy(lists[k]->begin(), lists[k]->end(), c.out[k].data<int64_t>());
}

}  // namespace

extern const OpDef kUnique;
const OpDef kUnique{"Unique", 1, 1, 1, 4, types_unique, shapes_unique, run_unique};

}  // namespace sgraph::ops
