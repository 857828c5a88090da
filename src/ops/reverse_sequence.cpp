// ReverseSequence(x, sequence_lens) {batch_axis = 1, time_axis = 0}: for each batch entry b, the
// first sequence_lens[b] steps along the time axis reversed, the rest copied as they are.
#include <cstring>

#include "ops/op.h"

namespace sgraph::ops {
namespace {

struct SeqAxes {
  int64_t batch, time;
};

SeqAxes seq_axes(const Node& n, int64_t rank) {
  SG_CHECK(rank >= 2) << "ReverseSequence input must have rank >= 2, got " << rank;
  const int64_t b = n.attrs.get_int("batch_axis", 1), t = n.attrs.get_int("time_axis", 0);
  SG_CHECK((b == 0 || b == 1) && (t == 0 || t == 1) && b != t)
      << "ReverseSequence batch_axis and time_axis must be 0 and 1 in some order, got " << b
      << " and " << t;
  return {b, t};
}

}  // namespace

extern const OpDef kReverseSequence;
const OpDef kReverseSequence{
    "ReverseSequence",
    2,
    2,
    1,
    1,
    [](TypeCtx& c) {
      c.expect_int_index(1);
      c.out[0] = c.in[0];
    },
    [](ShapeCtx& c) {
      const SeqAxes a = seq_axes(c.node, c.rank(0));
      const Shape want = {c.shape(0)[a.batch]};
      SG_CHECK(c.shape(1) == want) << "ReverseSequence sequence_lens must have shape "
                                   << shape_str(want) << ", got " << shape_str(c.shape(1));
      shapes_same_as_input0(c);
    },
    [](KernelCtx& c) {
      const Tensor& x = c.in[0];
      const SeqAxes a = seq_axes(c.node, x.rank());
      const int64_t d0 = x.dim(0), d1 = x.dim(1), time = x.dim(a.time);
      const std::vector<int64_t> lens = c.in[1].to_int64();
      for (int64_t len : lens)
        SG_CHECK(len >= 0 && len <= time)
            << "ReverseSequence length " << len << " is outside [0, " << time << "]";
      // x viewed as [d0, d1, inner]: each (i0, i1) pair is one block of `inner` elements.
      const int64_t inner = d0 * d1 == 0 ? 0 : x.numel() / (d0 * d1);
      const size_t block = static_cast<size_t>(inner) * dtype_size(x.dtype());
      const auto* src = static_cast<const char*>(x.raw_data());
      auto* dst = static_cast<char*>(c.out[0].raw_data());
      if (block == 0) return;
      for (int64_t i0 = 0; i0 < d0; ++i0)
        for (int64_t i1 = 0; i1 < d1; ++i1) {
          const int64_t b = a.batch == 0 ? i0 : i1, t = a.time == 0 ? i0 : i1;
          const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
          const int64_t j0 = a.time == 0 ? from : i0, j1 = a.time == 0 ? i1 : from;
          std::memcpy(dst + (i0 * d1 + i1) * block, src + (j0 * d1 + j1) * block, block);
        }
    }};

}  // namespace sgraph::ops
