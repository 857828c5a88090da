// Gather: picks slices of `data` along one axis by index. Views data as [outer, dim, inner] and
// copies one [inner] block per (outer, index) pair; every index is checked before any copy.
#include <cstring>

#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {
namespace {

// The elements a Gather of constant indices picks from a 1-D vector with known elements (a shape).
std::optional<SymShape> symbolic_value_gather(const Graph& g, const Node& n,
                                              std::span<const SymShape* const> in,
                                              std::span<const SymShape* const> elems) {
  if (!in[0] || !elems[0] || in[0]->size() != 1 || !g.values[n.inputs[1]].initializer.defined())
    return std::nullopt;
  const SymShape& x = *elems[0];
  const auto dim = static_cast<int64_t>(x.size());
  SymShape out;
  for (int64_t i : g.values[n.inputs[1]].initializer.to_int64()) {
    if (i < -dim || i >= dim) return std::nullopt;
    out.push_back(x[static_cast<size_t>(i < 0 ? i + dim : i)]);
  }
  return out;
}

}  // namespace

// Gather(data, indices) {axis = 0}: out shape = data[:axis] + indices + data[axis+1:].
extern const Lowering kGatherLowering;  // gather_jit.cpp
extern const OpDef kGather;
const OpDef kGather = with_lowering(
    &kGatherLowering,
    with_symbolic_value(
        symbolic_value_gather,
        OpDef{"Gather", 2, 2, 1, 1,
              [](TypeCtx& c) {
                c.expect_int_index(1);
                c.out[0] = c.in[0];
              },
              [](ShapeCtx& c) {
                const Shape& s = c.shape(0);
                SG_CHECK(!s.empty()) << "Gather data must have rank >= 1, got a scalar";
                const int64_t axis = op_axis(c.node, c.shape(0).size());
                Shape out(s.begin(), s.begin() + axis);
                out.insert(out.end(), c.shape(1).begin(), c.shape(1).end());
                out.insert(out.end(), s.begin() + axis + 1, s.end());
                c.out[0] = std::move(out);
              },
              [](KernelCtx& c) {
                const Tensor& x = c.in[0];
                const int64_t axis = op_axis(c.node, x.shape().size());
                const int64_t dim = x.dim(axis);
                std::vector<int64_t> index = c.in[1].to_int64();
                for (int64_t& i : index) {
                  SG_CHECK(i >= -dim && i < dim) << "index " << i << " is out of range for axis "
                                                 << axis << " of size " << dim;
                  if (i < 0) i += dim;
                }
                const AxisSplit v = split_at_axis(x.shape(), axis);
                const int64_t outer = v.outer, inner = v.inner;
                const int64_t n = static_cast<int64_t>(index.size());
                if (inner == 0) return;
                visit_dtype(x.dtype(), [&]<class T>() {
                  const T* src = x.data<T>();
                  T* dst = c.out[0].data<T>();
                  for (int64_t o = 0; o < outer; ++o, src += dim * inner) {
                    if (inner == 1) {
                      for (int64_t j = 0; j < n; ++j) dst[j] = src[index[j]];
                    } else {
                      for (int64_t j = 0; j < n; ++j)
                        std::memcpy(dst + j * inner, src + index[j] * inner, inner * sizeof(T));
                    }
                    dst += n * inner;
                  }
                });
              }}));

}  // namespace sgraph::ops
