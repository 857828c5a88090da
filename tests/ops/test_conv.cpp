// Conv and ConvTranspose: hand-computed cases per attribute, and random 1-D/2-D/3-D inputs
// against naive direct loops written here (a gather loop for Conv, a scatter loop for
// ConvTranspose), independent of the im2col/GEMM/col2im kernels.
#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
struct Params {
  Ints strides, pads, dilations, output_padding;  // empty: defaults
  int64_t group = 1;
  Attributes attrs() const {
    Attributes a{{"group", group}};
    if (!strides.empty()) a.set("strides", strides);
    if (!pads.empty()) a.set("pads", pads);
    if (!dilations.empty()) a.set("dilations", dilations);
    if (!output_padding.empty()) a.set("output_padding", output_padding);
    return a;
  }
  int64_t s(size_t d) const { return strides.empty() ? 1 : strides[d]; }
  int64_t dil(size_t d) const { return dilations.empty() ? 1 : dilations[d]; }
  int64_t pb(size_t d) const { return pads.empty() ? 0 : pads[d]; }
  int64_t pe(size_t d, size_t r) const { return pads.empty() ? 0 : pads[r + d]; }
  int64_t op(size_t d) const { return output_padding.empty() ? 0 : output_padding[d]; }
};

// y[n, m, o] = b[m] + sum over c in m's group and taps k of x[n, c, o * s - pb + k * dil] w[m, c,
// k]
Expected naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, const Params& p) {
  const size_t r = static_cast<size_t>(x.rank()) - 2;
  const int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0), cg = C / p.group, mg = M / p.group;
  const Ints in(x.shape().begin() + 2, x.shape().end()), k(w.shape().begin() + 2, w.shape().end());
  Ints out(r);
  for (size_t d = 0; d < r; ++d)
    out[d] = (in[d] + p.pb(d) + p.pe(d, r) - (k[d] - 1) * p.dil(d) - 1) / p.s(d) + 1;
  Expected e{{N, M}, {}};
  e.shape.insert(e.shape.end(), out.begin(), out.end());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < numel(out); ++o) {
        const Ints oi = unravel(o, out);
        double sum = b ? b->at_double(m) : 0;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t t = 0; t < numel(k); ++t) {
            const Ints ki = unravel(t, k);
            Ints ii(r);
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              ii[d] = oi[d] * p.s(d) - p.pb(d) + ki[d] * p.dil(d);
              inside = inside && ii[d] >= 0 && ii[d] < in[d];
            }
            if (!inside) continue;
            const int64_t xc = n * C + (m / mg) * cg + c;
            sum += x.at_double(xc * numel(in) + ravel(ii, in)) *
                   w.at_double((m * cg + c) * numel(k) + t);
          }
        e.values.push_back(sum);
      }
  return e;
}

// Every x[n, c, i] w[c, m, k] is added to y[n, group(c) * mg + m, i * s - pb + k * dil].
Expected naive_conv_transpose(const Tensor& x, const Tensor& w, const Tensor* b, const Params& p) {
  const size_t r = static_cast<size_t>(x.rank()) - 2;
  const int64_t N = x.dim(0), C = x.dim(1), mg = w.dim(1), M = mg * p.group, cg = C / p.group;
  const Ints in(x.shape().begin() + 2, x.shape().end()), k(w.shape().begin() + 2, w.shape().end());
  Ints out(r);
  for (size_t d = 0; d < r; ++d)
    out[d] = p.s(d) * (in[d] - 1) + p.op(d) + (k[d] - 1) * p.dil(d) + 1 - p.pb(d) - p.pe(d, r);
  Expected e{{N, M}, {}};
  e.shape.insert(e.shape.end(), out.begin(), out.end());
  e.values.assign(numel(e.shape), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < numel(out); ++o)
        e.values[(n * M + m) * numel(out) + o] = b ? b->at_double(m) : 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < numel(in); ++i)
        for (int64_t m = 0; m < mg; ++m)
          for (int64_t t = 0; t < numel(k); ++t) {
            const Ints ii = unravel(i, in), ki = unravel(t, k);
            Ints oi(r);
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              oi[d] = ii[d] * p.s(d) - p.pb(d) + ki[d] * p.dil(d);
              inside = inside && oi[d] >= 0 && oi[d] < out[d];
            }
            if (!inside) continue;
            const int64_t ym = (c / cg) * mg + m;
            e.values[(n * M + ym) * numel(out) + ravel(oi, out)] +=
                x.at_double((n * C + c) * numel(in) + i) * w.at_double((c * mg + m) * numel(k) + t);
          }
  return e;
}

void check_conv(const Shape& xs, const Shape& ws, bool bias, const Params& p, uint32_t seed,
                bool f64 = false) {
  CAPTURE(shape_str(xs));
  CAPTURE(shape_str(ws));
  auto rnd = [&](const Shape& s, uint32_t sd) {
    return f64 ? random_f64(s, sd) : test::random_f32(s, sd);
  };
  const Tensor x = rnd(xs, seed), w = rnd(ws, seed + 1);
  const Tensor b = bias ? rnd({ws[0]}, seed + 2) : Tensor{};
  const Expected e = naive_conv(x, w, bias ? &b : nullptr, p);
  check_close(run_op(OpKind::Conv, {x, w, b}, p.attrs())[0], e.shape, e.values, 1e-4, 1e-5);
}

void check_conv_transpose(const Shape& xs, const Shape& ws, bool bias, const Params& p,
                          uint32_t seed, bool f64 = false) {
  CAPTURE(shape_str(xs));
  CAPTURE(shape_str(ws));
  auto rnd = [&](const Shape& s, uint32_t sd) {
    return f64 ? random_f64(s, sd) : test::random_f32(s, sd);
  };
  const Tensor x = rnd(xs, seed), w = rnd(ws, seed + 1);
  const Tensor b = bias ? rnd({ws[1] * p.group}, seed + 2) : Tensor{};
  const Expected e = naive_conv_transpose(x, w, bias ? &b : nullptr, p);
  check_close(run_op(OpKind::ConvTranspose, {x, w, b}, p.attrs())[0], e.shape, e.values, 1e-4,
              1e-5);
}
}  // namespace

TEST_CASE("Conv: 1-D hand-computed, with pads, strides and dilations") {
  const Tensor x = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  const Tensor w = f32({1, 1, 3}, {1, 0, -1});  // y[i] = x[i] - x[i + 2]
  check_close(run_op(OpKind::Conv, {x, w})[0], {1, 1, 3}, {-2, -2, -2});
  check_close(run_op(OpKind::Conv, {x, w}, {{"pads", Ints{1, 1}}})[0], {1, 1, 5},
              {-2, -2, -2, -2, 4});
  check_close(run_op(OpKind::Conv, {x, w}, {{"pads", Ints{1, 1}}, {"strides", Ints{2}}})[0],
              {1, 1, 3}, {-2, -2, 4});
  // dilation 2 with w = [1, 1]: x[i] + x[i + 2]
  check_close(run_op(OpKind::Conv, {x, f32({1, 1, 2}, {1, 1})}, {{"dilations", Ints{2}}})[0],
              {1, 1, 3}, {4, 6, 8});
}

TEST_CASE("Conv: 2-D hand-computed, bias, strides with pads, f64") {
  const Tensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  // 2x2 box sums: 1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9
  check_close(run_op(OpKind::Conv, {x, f32({1, 1, 2, 2}, {1, 1, 1, 1}), f32({1}, {0.5f})})[0],
              {1, 1, 2, 2}, {12.5, 16.5, 24.5, 28.5});
  // 3x3 box with pads 1, stride 2: windows centred on the corners see the same 2x2 blocks
  const Tensor ones3 = f32({1, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  check_close(
      run_op(
          OpKind::Conv, {x, ones3},
          {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}, {"kernel_shape", Ints{3, 3}}})[0],
      {1, 1, 2, 2}, {12, 16, 24, 28});
  const Tensor y = run_op(OpKind::Conv, {Tensor::from<double>({1, 1, 2, 2}, {1, 2, 3, 4}),
                                         Tensor::from<double>({2, 1, 1, 1}, {2, -1})})[0];
  CHECK(y.dtype() == DType::f64);
  check_close(y, {1, 2, 2, 2}, {2, 4, 6, 8, -1, -2, -3, -4});
}

TEST_CASE("Conv: groups and depthwise") {
  const Tensor x = f32({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  // group 2: channel 0 scaled by 2, channel 1 by 3
  check_close(run_op(OpKind::Conv, {x, f32({2, 1, 1}, {2, 3})}, {{"group", int64_t{2}}})[0],
              {1, 2, 3}, {2, 4, 6, 12, 15, 18});
  // depthwise with multiplier 2: outputs 0,1 read channel 0; outputs 2,3 read channel 1
  check_close(run_op(OpKind::Conv, {x, f32({4, 1, 1}, {1, 2, 3, 4})}, {{"group", int64_t{2}}})[0],
              {1, 4, 3}, {1, 2, 3, 2, 4, 6, 12, 15, 18, 16, 20, 24});
  // depthwise 1-D with a 2-tap kernel: channel 0 sums neighbours, channel 1 differences them
  check_close(run_op(OpKind::Conv, {x, f32({2, 1, 2}, {1, 1, 1, -1})}, {{"group", int64_t{2}}})[0],
              {1, 2, 2}, {3, 5, -1, -1});
}

TEST_CASE("Conv: auto_pad SAME_UPPER, SAME_LOWER and VALID") {
  const Tensor x = f32({1, 1, 4}, {1, 2, 3, 4});
  const Tensor w = f32({1, 1, 2}, {1, 10});  // y[i] = x[i] + 10 x[i + 1]
  auto conv = [&](const char* mode, Ints strides = {1}) {
    return run_op(OpKind::Conv, {x, w}, {{"auto_pad", mode}, {"strides", strides}})[0];
  };
  check_close(conv("SAME_UPPER"), {1, 1, 4}, {21, 32, 43, 4});   // the odd pad goes at the end
  check_close(conv("SAME_LOWER"), {1, 1, 4}, {10, 21, 32, 43});  // ... or at the beginning
  check_close(conv("VALID"), {1, 1, 3}, {21, 32, 43});
  check_close(conv("SAME_UPPER", {2}), {1, 1, 2}, {21, 43});  // ceil(4 / 2) outputs, no pad
  check_close(conv("NOTSET", {3}), {1, 1, 1}, {21});
}

TEST_CASE("Conv: random 1-D, 2-D and 3-D against the naive loop") {
  check_conv({2, 3, 13}, {4, 3, 3}, true, {{2}, {1, 2}, {}, {}, 1}, 1);
  check_conv({1, 1, 1}, {1, 1, 1}, false, {}, 2);
  check_conv({1, 1, 7}, {1, 1, 7}, true, {}, 3);
  check_conv({2, 4, 7, 13}, {6, 2, 3, 2}, true, {{2, 1}, {1, 0, 2, 1}, {1, 2}, {}, 2}, 4);
  check_conv({1, 7, 13, 7}, {7, 1, 3, 3}, false, {{}, {1, 1, 1, 1}, {}, {}, 7}, 5);  // depthwise
  check_conv({2, 3, 7, 7}, {6, 1, 3, 3}, true, {{2, 2}, {1, 1, 1, 1}, {}, {}, 3}, 6);
  check_conv({2, 13, 7, 7}, {5, 13, 1, 1}, true, {}, 7);                        // pointwise
  check_conv({2, 13, 7, 7}, {5, 13, 1, 1}, false, {{2, 2}, {}, {}, {}, 1}, 8);  // strided 1x1
  check_conv({1, 2, 5, 7, 6}, {3, 2, 3, 2, 3}, true, {{1, 2, 1}, {1, 0, 1, 1, 1, 0}, {}, {}, 1}, 9);
  check_conv({1, 16, 13, 13}, {32, 16, 3, 3}, true, {{}, {1, 1, 1, 1}, {}, {}, 1}, 10);
  check_conv({2, 4, 7, 13}, {6, 2, 3, 2}, true, {{1, 2}, {0, 1, 1, 0}, {2, 1}, {}, 2}, 11, true);
  check_conv({1, 2, 3}, {2, 2, 2}, false, {{1}, {3, 4}, {}, {}, 1}, 12);  // pads beyond kernel
}

TEST_CASE("Conv: errors") {
  const Tensor x = Tensor(DType::f32, {1, 3, 5});
  CHECK(
      contains(op_error(OpKind::Conv, {x, Tensor(DType::f32, {3, 1, 1})}, {{"group", int64_t{2}}}),
               "not divisible by group 2"));
  CHECK(contains(op_error(OpKind::Conv, {x, Tensor(DType::f32, {2, 2, 1})}),
                 "expects 2 input channels, but X [1,3,5] has 3"));
  CHECK(contains(
      op_error(OpKind::Conv, {Tensor(DType::f32, {1, 1, 2}), Tensor(DType::f32, {1, 1, 3})}),
      "larger than the padded input"));
  CHECK(contains(op_error(OpKind::Conv, {x, Tensor(DType::f32, {2, 3, 1})}, {{"pads", Ints{1}}}),
                 "pads must have 2 values, got 1"));
  CHECK(contains(op_error(OpKind::Conv, {x, Tensor(DType::f32, {2, 3, 1})}, {{"auto_pad", "SAME"}}),
                 "unsupported auto_pad 'SAME'"));
  CHECK(contains(
      op_error(OpKind::Conv, {x, Tensor(DType::f32, {2, 3, 1})}, {{"kernel_shape", Ints{2}}}),
      "does not match W's spatial dims"));
  CHECK(
      contains(op_error(OpKind::Conv, {x, Tensor(DType::f32, {2, 3, 1}), Tensor(DType::f32, {3})}),
               "B must have shape [2]"));
  CHECK(contains(op_error(OpKind::Conv, {Tensor(DType::f32, {1, 3}), Tensor(DType::f32, {2, 3})}),
                 "rank >= 3"));
  CHECK(contains(op_error(OpKind::Conv, {x, Tensor(DType::f32, {2, 3, 1, 1})}),
                 "W must have rank 3"));
  CHECK(contains(op_error(OpKind::Conv, {x, Tensor(DType::f32, {2, 3, 1})}, {{"strides", Ints{0}}}),
                 "strides values must be >= 1"));
  CHECK(contains(
      op_error(OpKind::Conv, {Tensor(DType::i32, {1, 3, 5}), Tensor(DType::i32, {2, 3, 1})}),
      "expected one of"));
}

TEST_CASE("ConvTranspose: 1-D hand-computed: strides, pads, output_padding, bias") {
  const Tensor x = f32({1, 1, 3}, {1, 2, 3});
  const Tensor w = f32({1, 1, 2}, {1, 1});
  check_close(run_op(OpKind::ConvTranspose, {x, w})[0], {1, 1, 4}, {1, 3, 5, 3});
  check_close(run_op(OpKind::ConvTranspose, {x, w}, {{"strides", Ints{2}}})[0], {1, 1, 6},
              {1, 1, 2, 2, 3, 3});
  check_close(run_op(OpKind::ConvTranspose, {x, w, f32({1}, {0.5f})},
                     {{"strides", Ints{2}}, {"output_padding", Ints{1}}})[0],
              {1, 1, 7}, {1.5, 1.5, 2.5, 2.5, 3.5, 3.5, 0.5});
  check_close(
      run_op(OpKind::ConvTranspose, {x, w}, {{"strides", Ints{2}}, {"pads", Ints{1, 1}}})[0],
      {1, 1, 4}, {1, 2, 2, 3});
  // dilation 2 with 2 taps: x[i] lands on 2i... no stride: positions i and i + 2
  check_close(run_op(OpKind::ConvTranspose, {x, w}, {{"dilations", Ints{2}}})[0], {1, 1, 5},
              {1, 2, 4, 2, 3});
}

TEST_CASE("ConvTranspose: output_shape and auto_pad choose the pads") {
  const Tensor x = f32({1, 1, 3}, {1, 2, 3});
  const Tensor w2 = f32({1, 1, 2}, {1, 1});
  // full output [1,1,2,2,3,3]; output_shape 5 trims one: NOTSET trims the start
  check_close(
      run_op(OpKind::ConvTranspose, {x, w2}, {{"strides", Ints{2}}, {"output_shape", Ints{5}}})[0],
      {1, 1, 5}, {1, 2, 2, 3, 3});
  check_close(
      run_op(
          OpKind::ConvTranspose, {x, w2},
          {{"strides", Ints{2}}, {"output_shape", Ints{1, 1, 5}}, {"auto_pad", "SAME_UPPER"}})[0],
      {1, 1, 5}, {1, 1, 2, 2, 3});
  // 3 taps, stride 2: full output [1,1,3,2,5,3,3]; SAME asks for 3 * 2 = 6
  const Tensor w3 = f32({1, 1, 3}, {1, 1, 1});
  check_close(
      run_op(OpKind::ConvTranspose, {x, w3}, {{"strides", Ints{2}}, {"auto_pad", "SAME_UPPER"}})[0],
      {1, 1, 6}, {1, 1, 3, 2, 5, 3});
  check_close(
      run_op(OpKind::ConvTranspose, {x, w3}, {{"strides", Ints{2}}, {"auto_pad", "SAME_LOWER"}})[0],
      {1, 1, 6}, {1, 3, 2, 5, 3, 3});
}

TEST_CASE("ConvTranspose: 2-D and groups, hand-computed") {
  // [[1,2],[3,4]] scattered through a 2x2 box of ones
  check_close(run_op(OpKind::ConvTranspose,
                     {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 2, 2}, {1, 1, 1, 1})})[0],
              {1, 1, 3, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4});
  // group 2: channel 0 scaled by 2, channel 1 by 10
  const Tensor y = run_op(
      OpKind::ConvTranspose,
      {Tensor::from<double>({1, 2, 2}, {1, 2, 3, 4}), Tensor::from<double>({2, 1, 1}, {2, 10})},
      {{"group", int64_t{2}}})[0];
  CHECK(y.dtype() == DType::f64);
  check_close(y, {1, 2, 2}, {2, 4, 30, 40});
}

TEST_CASE("ConvTranspose: random 1-D and 2-D against the naive scatter loop") {
  check_conv_transpose({2, 3, 7}, {3, 2, 3}, true, {{2}, {1, 0}, {}, {1}, 1}, 1);
  check_conv_transpose({1, 1, 1}, {1, 1, 1}, false, {}, 2);
  check_conv_transpose({1, 4, 5, 7}, {4, 3, 3, 2}, true, {{2, 3}, {1, 0, 0, 1}, {1, 2}, {1, 2}, 2},
                       3);
  check_conv_transpose({2, 6, 7, 13}, {6, 1, 3, 3}, true, {{2, 2}, {1, 1, 1, 1}, {}, {}, 6}, 4);
  check_conv_transpose({2, 13, 7, 7}, {13, 5, 1, 1}, false, {}, 5);
  check_conv_transpose({1, 3, 4, 5}, {3, 2, 2, 3}, true, {{1, 2}, {}, {2, 1}, {}, 1}, 6, true);
}

TEST_CASE("ConvTranspose: errors") {
  const Tensor x = Tensor(DType::f32, {1, 3, 5});
  CHECK(contains(op_error(OpKind::ConvTranspose, {x, Tensor(DType::f32, {2, 1, 1})}),
                 "expects 2 input channels, but X [1,3,5] has 3"));
  CHECK(contains(
      op_error(OpKind::ConvTranspose, {x, Tensor(DType::f32, {3, 1, 1})}, {{"group", int64_t{2}}}),
      "not divisible by group 2"));
  CHECK(contains(
      op_error(OpKind::ConvTranspose, {x, Tensor(DType::f32, {3, 1, 1})}, {{"pads", Ints{3, 2}}}),
      "leave no output"));
  CHECK(contains(op_error(OpKind::ConvTranspose, {x, Tensor(DType::f32, {3, 1, 1})},
                          {{"output_shape", Ints{4, 4}}}),
                 "output_shape must have 1 values"));
  CHECK(contains(op_error(OpKind::ConvTranspose, {x, Tensor(DType::f32, {3, 1, 1})},
                          {{"output_padding", Ints{-1}}}),
                 "output_padding values must be >= 0"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(Conv, direct_3x3) {
  s.rtol = 1e-4, s.atol = 1e-5;
  const ValueId x = s.input(DType::f32, {1, 2, n, 5});
  s.output(s.b.conv(x, s.b.constant("", random_f32({3, 2, 3, 3}, 2)),
                    s.b.constant("", random_f32({3}, 3)), Attributes{{"pads", Ints{1, 1, 1, 1}}}));
}

SG_LOWERING_SAMPLE(Conv, gemm_strided) {
  s.rtol = 1e-4, s.atol = 1e-5;
  const ValueId x = s.input(DType::f32, {1, 5, n, 4});
  s.output(s.b.conv(x, s.b.constant("", random_f32({4, 5, 3, 3}, 2)),
                    Attributes{{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 1}}}));
}

// A batch of n images through grouped im2col + GEMM (run-time item offsets in the dynamic tier).
SG_LOWERING_SAMPLE(Conv, batch_gemm_groups) {
  s.rtol = 1e-4, s.atol = 1e-5;
  const ValueId x = s.input(DType::f32, {n, 8, 5, 6});
  s.output(s.b.conv(x, s.b.constant("", random_f32({4, 4, 3, 3}, 4)),
                    s.b.constant("", random_f32({4}, 5)),
                    Attributes{{"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{2}}}));
}

// A 1-D conv striding along its only (innermost) spatial dim, as audio front ends do.
SG_LOWERING_SAMPLE(Conv, conv1d_strided) {
  s.rtol = 1e-4, s.atol = 1e-5;
  const ValueId x = s.input(DType::f32, {1, 4, n});
  s.output(s.b.conv(x, s.b.constant("", random_f32({6, 4, 3}, 6)),
                    Attributes{{"pads", Ints{1, 1}}, {"strides", Ints{2}}}));
}
