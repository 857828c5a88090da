// DepthToSpace and SpaceToDepth: move [b, b] blocks between the channel dim and the spatial dims
// of an [N, C, H, W] tensor (b = blocksize). Both are one gather: each output element names its
// input element, so a single loop over the output serves every mode and dtype.
#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {

int64_t block_size(const Node& n) {
  const int64_t b = n.attrs.get_int("blocksize");
  SG_CHECK(b >= 1) << "blocksize must be >= 1, got " << b;
  return b;
}

// DCR (the default): the channel index is (i * b + j) * C_out + c; CRD: c * b * b + i * b + j.
bool crd_mode(const Node& n) {
  const std::string mode = n.attrs.get_string("mode", "DCR");
  SG_CHECK(mode == "DCR" || mode == "CRD")
      << "DepthToSpace mode must be DCR or CRD, got '" << mode << "'";
  return mode == "CRD";
}

namespace {

// b * b, checked (C is compared against it).
int64_t block_area(int64_t b) {
  int64_t a = 0;
  SG_CHECK(!__builtin_mul_overflow(b, b, &a)) << "blocksize " << b << " is too large";
  return a;
}

void check_rank4(const Shape& s, std::string_view op) {
  SG_CHECK(s.size() == 4) << op << " input must be [N, C, H, W], got " << shape_str(s);
}

// Copies out[n, c, h, w] = in[n, src_c, src_h, src_w] for every output element, the source given
// by `source(c, h, w) -> {src_c, src_h, src_w}`.
template <class F>
void gather_nchw(KernelCtx& c, F source) {
  const Shape& is = c.in[0].shape();
  const Shape& os = c.out[0].shape();
  visit_dtype(c.in[0].dtype(), [&]<class T>() {
    const T* x = c.in[0].data<T>();
    T* y = c.out[0].data<T>();
    for (int64_t n = 0; n < os[0]; ++n)
      for (int64_t ch = 0; ch < os[1]; ++ch)
        for (int64_t h = 0; h < os[2]; ++h)
          for (int64_t w = 0; w < os[3]; ++w) {
            const auto [sc, sh, sw] = source(ch, h, w);
            *y++ = x[((n * is[1] + sc) * is[2] + sh) * is[3] + sw];
          }
  });
}

struct Src {
  int64_t c, h, w;
};

}  // namespace

extern const Lowering kDepthToSpaceLowering, kSpaceToDepthLowering;  // depth_to_space_jit.cpp

// DepthToSpace(x) {blocksize, mode = DCR}: [N, C, H, W] -> [N, C / b^2, H * b, W * b].
extern const OpDef kDepthToSpace;
const OpDef kDepthToSpace = with_lowering(
    &kDepthToSpaceLowering,
    OpDef{"DepthToSpace", 1, 1, 1, 1, types_same_as_input0,
          [](ShapeCtx& c) {
            const Shape& s = c.shape(0);
            check_rank4(s, "DepthToSpace");
            const int64_t b = block_size(c.node), area = block_area(b);
            crd_mode(c.node);
            SG_CHECK(s[1] % area == 0) << "DepthToSpace channels " << s[1]
                                       << " are not a multiple of blocksize^2 = " << area;
            Shape out = {s[0], s[1] / area, 0, 0};
            SG_CHECK(!__builtin_mul_overflow(s[2], b, &out[2]) &&
                     !__builtin_mul_overflow(s[3], b, &out[3]))
                << "DepthToSpace output would be too large";
            c.out[0] = out;
          },
          [](KernelCtx& c) {
            const int64_t b = block_size(c.node), cout = c.out[0].dim(1);
            const bool crd = crd_mode(c.node);
            gather_nchw(c, [&](int64_t ch, int64_t h, int64_t w) {
              const int64_t i = h % b, j = w % b;
              return Src{crd ? (ch * b + i) * b + j : (i * b + j) * cout + ch, h / b, w / b};
            });
          }});

// SpaceToDepth(x) {blocksize}: [N, C, H, W] -> [N, C * b^2, H / b, W / b], the channel index
// (i * b + j) * C + c (DepthToSpace's DCR inverse).
extern const OpDef kSpaceToDepth;
const OpDef kSpaceToDepth = with_lowering(
    &kSpaceToDepthLowering, OpDef{"SpaceToDepth", 1, 1, 1, 1, types_same_as_input0,
                                  [](ShapeCtx& c) {
                                    const Shape& s = c.shape(0);
                                    check_rank4(s, "SpaceToDepth");
                                    const int64_t b = block_size(c.node), area = block_area(b);
                                    SG_CHECK(s[2] % b == 0 && s[3] % b == 0)
                                        << "SpaceToDepth spatial dims " << shape_str(s)
                                        << " are not multiples of blocksize " << b;
                                    Shape out = {s[0], 0, s[2] / b, s[3] / b};
                                    SG_CHECK(!__builtin_mul_overflow(s[1], area, &out[1]))
                                        << "SpaceToDepth output would be too large";
                                    c.out[0] = out;
                                  },
                                  [](KernelCtx& c) {
                                    const int64_t b = block_size(c.node), cin = c.in[0].dim(1);
                                    gather_nchw(c, [&](int64_t ch, int64_t h, int64_t w) {
                                      const int64_t c0 = ch % cin, blk = ch / cin;
                                      return Src{c0, h * b + blk / b, w * b + blk % b};
                                    });
                                  }});

}  // namespace sgraph::ops
