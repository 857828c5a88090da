// Concat and Split: join or cut tensors along one axis. Both view each tensor as
// [outer, axis, inner] and move whole [axis * inner] runs with memcpy, so they work for every
// dtype.
#include <algorithm>
#include <cstring>

#include "ops/int_math.h"
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

// Split sizes from the `split` input (13+) or attribute, else equal chunks (ONNX 18: when the
// dimension does not divide, the last chunk is smaller).
std::vector<int64_t> split_sizes(const Attributes& attrs, const Tensor* split, int64_t dim,
                                 int64_t outputs) {
  std::vector<int64_t> sizes;
  if (split != nullptr)
    sizes = split->to_int64();
  else if (attrs.has("split"))
    sizes = attrs.get_ints("split");
  if (split != nullptr || attrs.has("split")) {
    SG_CHECK(static_cast<int64_t>(sizes.size()) == outputs)
        << "split has " << sizes.size() << " sizes but the node has " << outputs << " outputs";
    int64_t sum = 0;
    for (int64_t s : sizes) {
      SG_CHECK(s >= 0) << "split size " << s << " is negative";
      sum = checked_add(sum, s, "the sum of the split sizes");
    }
    SG_CHECK(sum == dim) << "split sizes sum to " << sum << " but the dimension is " << dim;
    return sizes;
  }
  const int64_t n = attrs.get_int("num_outputs", outputs);
  SG_CHECK(n == outputs) << "num_outputs is " << n << " but the node has " << outputs << " outputs";
  const int64_t chunk = (dim + n - 1) / n;
  const int64_t last = dim - chunk * (n - 1);
  SG_CHECK(last >= 0) << "cannot split a dimension of " << dim << " into " << n << " chunks of "
                      << chunk;
  sizes.assign(n, chunk);
  sizes.back() = last;
  return sizes;
}

// The elements of a Concat of 1-D vectors with known elements (shapes).
std::optional<SymShape> symbolic_value_concat(const Graph&, const Node&,
                                              std::span<const SymShape* const> in,
                                              std::span<const SymShape* const> elems) {
  SymShape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i] || in[i]->size() != 1 || !elems[i]) return std::nullopt;
    out.insert(out.end(), elems[i]->begin(), elems[i]->end());
  }
  return out;
}

}  // namespace

// Concat(x...) {axis}: inputs agree on dtype, rank and every dimension but `axis`.
extern const Lowering kConcatLowering;  // concat_jit.cpp
extern const OpDef kConcat;
const OpDef kConcat = with_lowering(
    &kConcatLowering,
    with_symbolic_value(symbolic_value_concat,
                        OpDef{"Concat", 1, 1024, 1, 1,
                              [](TypeCtx& c) {
                                for (size_t i = 1; i < c.in.size(); ++i) c.expect_same(0, i);
                                c.out[0] = c.in[0];
                              },
                              [](ShapeCtx& c) {
                                const Shape& s0 = c.shape(0);
                                SG_CHECK(!s0.empty())
                                    << "Concat inputs must have rank >= 1, got a scalar";
                                const int64_t axis = op_axis(c.node, c.shape(0).size());
                                Shape out = s0;
                                out[axis] = 0;
                                for (size_t i = 0; i < c.in.size(); ++i) {
                                  const Shape& s = c.shape(i);
                                  bool ok = s.size() == s0.size();
                                  for (size_t d = 0; ok && d < s.size(); ++d)
                                    ok = static_cast<int64_t>(d) == axis || s[d] == s0[d];
                                  SG_CHECK(ok) << "input " << i << " has shape " << shape_str(s)
                                               << ", which cannot be concatenated with "
                                               << shape_str(s0) << " along axis " << axis;
                                  out[axis] += s[axis];
                                }
                                c.out[0] = std::move(out);
                              },
                              [](KernelCtx& c) {
                                Tensor& y = c.out[0];
                                const int64_t axis = op_axis(c.node, y.shape().size());
                                const size_t es = dtype_size(y.dtype());
                                const AxisSplit v = split_at_axis(y.shape(), axis);
                                const int64_t outer = v.outer;
                                const size_t row = static_cast<size_t>(v.dim * v.inner) * es;
                                auto* dst = static_cast<std::byte*>(y.raw_data());
                                size_t offset = 0;  // bytes into each output row
                                for (const Tensor& x : c.in) {
                                  const size_t run = x.nbytes() / std::max<int64_t>(outer, 1);
                                  const auto* src = static_cast<const std::byte*>(x.raw_data());
                                  if (run > 0)
                                    for (int64_t o = 0; o < outer; ++o)
                                      std::memcpy(dst + o * row + offset, src + o * run, run);
                                  offset += run;
                                }
                              }}));

// Split(x, split?) {axis = 0, split (< 13), num_outputs (18)}: one output per chunk.
extern const OpDef kSplit;
const OpDef kSplit{"Split",
                   1,
                   2,
                   1,
                   1024,
                   [](TypeCtx& c) {
                     if (c.has(1)) c.expect_int_index(1);
                     types_same_as_input0(c);
                   },
                   [](ShapeCtx& c) {
                     const Shape& s = c.shape(0);
                     SG_CHECK(!s.empty()) << "Split input must have rank >= 1, got a scalar";
                     const int64_t axis = op_axis(c.node, s.size());
                     const std::vector<int64_t> sizes =
                         split_sizes(c.attrs(), c.has(1) ? &c.require_value(1) : nullptr, s[axis],
                                     static_cast<int64_t>(c.out.size()));
                     for (size_t k = 0; k < c.out.size(); ++k) {
                       c.out[k] = s;
                       c.out[k][axis] = sizes[k];
                     }
                   },
                   [](KernelCtx& c) {
                     const Tensor& x = c.in[0];
                     const int64_t axis = op_axis(c.node, x.shape().size());
                     const int64_t outer = split_at_axis(x.shape(), axis).outer;
                     const size_t row = x.nbytes() / std::max<int64_t>(outer, 1);
                     const auto* src = static_cast<const std::byte*>(x.raw_data());
                     size_t offset = 0;  // bytes into each input row
                     for (Tensor& y : c.out) {
                       const size_t run = y.nbytes() / std::max<int64_t>(outer, 1);
                       auto* dst = static_cast<std::byte*>(y.raw_data());
                       if (run > 0)
                         for (int64_t o = 0; o < outer; ++o)
                           std::memcpy(dst + o * run, src + o * row + offset, run);
                       offset += run;
                     }
                   }};

}  // namespace sgraph::ops
