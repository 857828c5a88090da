// MaxPool, AveragePool and GlobalAveragePool: hand-computed cases per attribute, and random 2-D
// and 3-D inputs against a naive window loop written here.
#include <limits>

#include "jit/lowering_samples.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {
// Window by window: max, mean over the input positions, mean over the padded positions. Output
// size floor (or ceil, dropping a window that starts past the input and the begin pad).
struct Naive {
  Shape shape;
  std::vector<double> max, mean, mean_with_pad;
};
Naive naive_pool(const Tensor& x, const Ints& k, const Ints& s, const Ints& pads, const Ints& dil,
                 bool ceil_mode) {
  const size_t r = k.size();
  const Ints in(x.shape().begin() + 2, x.shape().end());
  Ints out(r);
  for (size_t d = 0; d < r; ++d) {
    const double span =
        static_cast<double>(in[d] + pads[d] + pads[r + d] - (k[d] - 1) * dil[d] - 1);
    out[d] = static_cast<int64_t>(ceil_mode ? std::ceil(span / s[d]) : std::floor(span / s[d])) + 1;
    if (ceil_mode && (out[d] - 1) * s[d] >= in[d] + pads[d]) --out[d];
  }
  Naive e{{x.dim(0), x.dim(1)}, {}, {}, {}};
  e.shape.insert(e.shape.end(), out.begin(), out.end());
  for (int64_t plane = 0; plane < x.dim(0) * x.dim(1); ++plane)
    for (int64_t o = 0; o < numel(out); ++o) {
      const Ints oi = unravel(o, out);
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t n_in = 0, n_pad = 0;
      for (int64_t t = 0; t < numel(k); ++t) {
        const Ints ki = unravel(t, k);
        bool inside = true, in_pad = true;
        int64_t flat = 0;
        for (size_t d = 0; d < r; ++d) {
          const int64_t i = oi[d] * s[d] - pads[d] + ki[d] * dil[d];
          inside = inside && i >= 0 && i < in[d];
          in_pad = in_pad && i < in[d] + pads[r + d];
          flat = flat * in[d] + i;
        }
        n_pad += in_pad;
        if (!inside) continue;
        const double v = x.at_double(plane * numel(in) + flat);
        mx = std::max(mx, v);
        sum += v;
        ++n_in;
      }
      e.max.push_back(mx);
      e.mean.push_back(sum / n_in);
      e.mean_with_pad.push_back(sum / n_pad);
    }
  return e;
}

void check_pools(const Shape& xs, const Ints& k, const Ints& s, const Ints& pads, const Ints& dil,
                 bool ceil_mode, uint32_t seed) {
  CAPTURE(shape_str(xs));
  CAPTURE(shape_str(k));
  const Tensor x = test::random_f32(xs, seed);
  const Naive e = naive_pool(x, k, s, pads, dil, ceil_mode);
  Attributes a{{"kernel_shape", k},
               {"strides", s},
               {"pads", pads},
               {"dilations", dil},
               {"ceil_mode", int64_t{ceil_mode}}};
  check_close(run_op(OpKind::MaxPool, {x}, a)[0], e.shape, e.max);
  check_close(run_op(OpKind::AveragePool, {x}, a)[0], e.shape, e.mean);
  a.set("count_include_pad", int64_t{1});
  check_close(run_op(OpKind::AveragePool, {x}, a)[0], e.shape, e.mean_with_pad);
}
}  // namespace

TEST_CASE("MaxPool: 2-D hand-computed, with Indices") {
  const Tensor x = iota<float>({1, 1, 4, 4}, 1);
  const auto out =
      run_op(OpKind::MaxPool, {x}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}, 2);
  check_close(out[0], {1, 1, 2, 2}, {6, 8, 14, 16});
  CHECK(out[1].dtype() == DType::i64);
  check_close(out[1], {1, 1, 2, 2}, {5, 7, 13, 15});
  // ceil_mode keeps the partial windows at the end: 3x3 windows at rows/cols {0, 2}
  check_close(
      run_op(OpKind::MaxPool, {x},
             {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}})[0],
      {1, 1, 2, 2}, {11, 12, 15, 16});
  check_close(
      run_op(OpKind::MaxPool, {x}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}})[0],
      {1, 1, 1, 1}, {11});
}

TEST_CASE("MaxPool: 1-D pads, dilations, auto_pad") {
  const Tensor x = f32({1, 1, 3}, {3, 1, 2});
  // windows [-1,0], [0,1], [1,2], [2,3]: padding never wins
  const auto out =
      run_op(OpKind::MaxPool, {x}, {{"kernel_shape", Ints{2}}, {"pads", Ints{1, 1}}}, 2);
  check_close(out[0], {1, 1, 4}, {3, 3, 2, 2});
  check_close(out[1], {1, 1, 4}, {0, 0, 2, 2});
  // dilation 2: max(x0, x2), max(x1, x3), max(x2, x4)
  check_close(run_op(OpKind::MaxPool, {f32({1, 1, 5}, {1, 5, 2, 8, 3})},
                     {{"kernel_shape", Ints{2}}, {"dilations", Ints{2}}})[0],
              {1, 1, 3}, {2, 8, 3});
  const Tensor y = f32({1, 1, 4}, {4, 1, 3, 2});
  check_close(
      run_op(OpKind::MaxPool, {y}, {{"kernel_shape", Ints{2}}, {"auto_pad", "SAME_UPPER"}})[0],
      {1, 1, 4}, {4, 3, 3, 2});
  check_close(
      run_op(OpKind::MaxPool, {y}, {{"kernel_shape", Ints{2}}, {"auto_pad", "SAME_LOWER"}})[0],
      {1, 1, 4}, {4, 4, 3, 3});
  check_close(run_op(OpKind::MaxPool, {y},
                     {{"kernel_shape", Ints{2}}, {"auto_pad", "VALID"}, {"strides", Ints{2}}})[0],
              {1, 1, 2}, {4, 3});
}

TEST_CASE("MaxPool: Indices with storage_order and several planes") {
  // channel 0 [[1,2,9],[4,3,5]], channel 1 the same plus 10; 2x2 windows at columns 0 and 1
  const Tensor x = f32({1, 2, 2, 3}, {1, 2, 9, 4, 3, 5, 11, 12, 19, 14, 13, 15});
  const Attributes a{{"kernel_shape", Ints{2, 2}}};
  auto out = run_op(OpKind::MaxPool, {x}, a, 2);
  check_close(out[0], {1, 2, 1, 2}, {4, 9, 14, 19});
  check_close(out[1], {1, 2, 1, 2}, {3, 2, 9, 8});  // (1,0) and (0,2), row-major, plane offset 6
  Attributes col = a;
  col.set("storage_order", int64_t{1});
  out = run_op(OpKind::MaxPool, {x}, col, 2);
  check_close(out[1], {1, 2, 1, 2}, {1, 4, 7, 10});  // h + w * 2
}

TEST_CASE("MaxPool: int8, uint8 and f64") {
  const Tensor xi = Tensor::from<int8_t>({1, 1, 4}, {-5, -3, 7, -128});
  const Tensor yi = run_op(OpKind::MaxPool, {xi}, {{"kernel_shape", Ints{2}}})[0];
  CHECK(yi.dtype() == DType::i8);
  check_close(yi, {1, 1, 3}, {-3, 7, 7});
  check_close(run_op(OpKind::MaxPool, {Tensor::from<uint8_t>({1, 1, 3}, {200, 255, 3})},
                     {{"kernel_shape", Ints{2}}, {"pads", Ints{0, 1}}})[0],
              {1, 1, 3}, {255, 255, 3});
  check_close(run_op(OpKind::MaxPool, {Tensor::from<double>({1, 1, 2}, {0.25, -1})},
                     {{"kernel_shape", Ints{1}}})[0],
              {1, 1, 2}, {0.25, -1});
}

TEST_CASE("AveragePool: hand-computed: pads, count_include_pad, ceil_mode, auto_pad") {
  check_close(run_op(OpKind::AveragePool, {iota<float>({1, 1, 4, 4}, 1)},
                     {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}})[0],
              {1, 1, 2, 2}, {3.5, 5.5, 11.5, 13.5});
  const Tensor x = f32({1, 1, 3}, {3, 1, 2});
  const Attributes padded{{"kernel_shape", Ints{2}}, {"pads", Ints{1, 1}}};
  check_close(run_op(OpKind::AveragePool, {x}, padded)[0], {1, 1, 4}, {3, 2, 1.5, 2});
  Attributes incl = padded;
  incl.set("count_include_pad", int64_t{1});
  check_close(run_op(OpKind::AveragePool, {x}, incl)[0], {1, 1, 4}, {1.5, 2, 1.5, 1});
  // ceil_mode: the last window [4, 5] holds only x4, even when pads count
  const Tensor y = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  Attributes ceil{{"kernel_shape", Ints{2}}, {"strides", Ints{2}}, {"ceil_mode", int64_t{1}}};
  check_close(run_op(OpKind::AveragePool, {y}, ceil)[0], {1, 1, 3}, {1.5, 3.5, 5});
  ceil.set("count_include_pad", int64_t{1});
  check_close(run_op(OpKind::AveragePool, {y}, ceil)[0], {1, 1, 3}, {1.5, 3.5, 5});
  const Tensor z = f32({1, 1, 4}, {1, 2, 3, 4});
  check_close(
      run_op(OpKind::AveragePool, {z}, {{"kernel_shape", Ints{2}}, {"auto_pad", "SAME_UPPER"}})[0],
      {1, 1, 4}, {1.5, 2.5, 3.5, 4});
  check_close(run_op(OpKind::AveragePool, {z},
                     {{"kernel_shape", Ints{2}},
                      {"auto_pad", "SAME_LOWER"},
                      {"count_include_pad", int64_t{1}}})[0],
              {1, 1, 4}, {0.5, 1.5, 2.5, 3.5});
  const Tensor d = run_op(OpKind::AveragePool, {Tensor::from<double>({1, 2, 2}, {1, 2, 3, 5})},
                          {{"kernel_shape", Ints{2}}})[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {1, 2, 1}, {1.5, 4});
}

TEST_CASE("MaxPool/AveragePool: random 1-D, 2-D and 3-D against the naive loop") {
  check_pools({2, 3, 13}, {3}, {2}, {1, 2}, {1}, false, 1);
  check_pools({1, 2, 7, 13}, {3, 2}, {2, 3}, {1, 0, 1, 1}, {1, 2}, true, 2);
  check_pools({2, 1, 7, 7}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, 3);
  check_pools({1, 2, 5, 6, 7}, {2, 3, 2}, {1, 2, 2}, {1, 0, 1, 0, 1, 1}, {1, 1, 2}, false, 4);
  check_pools({1, 1, 1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, true, 5);
}

TEST_CASE("MaxPool/AveragePool: a kernel overhanging the input by less than a stride") {
  // 2x2 kernel, stride 2 over a 1x3 input: one row of windows clipped to the input
  // (as ONNX Runtime computes it); columns: [1,2] and [3].
  const Tensor x = f32({1, 1, 1, 3}, {1, 2, 3});
  const Attributes a{{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  check_close(run_op(OpKind::MaxPool, {x}, a)[0], {1, 1, 1, 1}, {2});
  check_close(run_op(OpKind::AveragePool, {x}, a)[0], {1, 1, 1, 1}, {1.5});
  // Overhanging by a whole stride or more is still an error.
  CHECK(contains(
      op_error(OpKind::MaxPool, {x}, {{"kernel_shape", Ints{3, 1}}, {"strides", Ints{2, 1}}}),
      "larger than the padded input"));
}

TEST_CASE("MaxPool/AveragePool: errors") {
  const Tensor x = Tensor(DType::f32, {1, 1, 4});
  CHECK(contains(op_error(OpKind::MaxPool, {x}), "kernel_shape is required"));
  CHECK(contains(op_error(OpKind::AveragePool, {x}, {{"kernel_shape", Ints{2, 2}}}),
                 "kernel_shape must have 1 values"));
  CHECK(contains(op_error(OpKind::MaxPool, {x}, {{"kernel_shape", Ints{5}}}),
                 "larger than the padded input"));
  CHECK(contains(op_error(OpKind::MaxPool, {x}, {{"kernel_shape", Ints{2}}, {"pads", Ints{1}}}),
                 "pads must have 2 values"));
  CHECK(contains(
      op_error(OpKind::AveragePool, {x}, {{"kernel_shape", Ints{2}}, {"auto_pad", "same"}}),
      "unsupported auto_pad"));
  CHECK(
      contains(op_error(OpKind::MaxPool, {Tensor(DType::f32, {4, 4})}, {{"kernel_shape", Ints{2}}}),
               "rank >= 3"));
  CHECK(contains(
      op_error(OpKind::MaxPool, {x}, {{"kernel_shape", Ints{2}}, {"storage_order", int64_t{2}}}),
      "storage_order must be 0 or 1"));
  CHECK(contains(
      op_error(OpKind::MaxPool, {Tensor(DType::i32, {1, 1, 4})}, {{"kernel_shape", Ints{2}}}),
      "expected one of"));
  CHECK(contains(
      op_error(OpKind::AveragePool, {Tensor(DType::u8, {1, 1, 4})}, {{"kernel_shape", Ints{2}}}),
      "must be a float tensor"));
}

TEST_CASE("GlobalAveragePool: mean over every spatial dim") {
  // [N=2, C=2, 2, 2]: plane means 2.5, 6.5, 10.5, 14.5
  check_close(run_op(OpKind::GlobalAveragePool, {iota<float>({2, 2, 2, 2}, 1)})[0], {2, 2, 1, 1},
              {2.5, 6.5, 10.5, 14.5});
  check_close(run_op(OpKind::GlobalAveragePool, {f32({1, 2, 3}, {1, 2, 6, -1, 0, 4})})[0],
              {1, 2, 1}, {3, 1});
  const Tensor d =
      run_op(OpKind::GlobalAveragePool, {Tensor::from<double>({1, 1, 1, 2, 1}, {1, 2})})[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {1, 1, 1, 1, 1}, {1.5});
  CHECK(contains(op_error(OpKind::GlobalAveragePool, {Tensor(DType::f32, {2, 3})}), "rank >= 3"));
  CHECK(contains(op_error(OpKind::GlobalAveragePool, {Tensor(DType::i64, {1, 1, 3})}),
                 "must be a float tensor"));
}

TEST_CASE("GlobalMaxPool: maximum over every spatial dim") {
  check_close(run_op(OpKind::GlobalMaxPool, {f32({1, 2, 2, 2}, {1, 5, 3, 2, -1, -7, -3, -2})})[0],
              {1, 2, 1, 1}, {5, -1});
  const Tensor d = run_op(OpKind::GlobalMaxPool,
                          {Tensor::from<double>({2, 1, 3}, {1, std::nan(""), 0, -4, -9, -5})})[0];
  CHECK(d.dtype() == DType::f64);
  check_close(d, {2, 1, 1}, {1, -4});  // NaN does not win, as in MaxPool
  check_close(run_op(OpKind::GlobalMaxPool, {Tensor(DType::f32, {0, 2, 3})})[0], {0, 2, 1}, {});
  CHECK(contains(op_error(OpKind::GlobalMaxPool, {Tensor(DType::f32, {2, 3})}), "rank >= 3"));
  CHECK(contains(op_error(OpKind::GlobalMaxPool, {Tensor(DType::u8, {1, 1, 3})}),
                 "must be a float tensor"));
}

// ---- JIT lowering samples (see tests/jit/lowering_samples.h) ----

SG_LOWERING_SAMPLE(MaxPool, pads_strides) {
  s.output(s.b.max_pool(s.input(DType::f32, {1, 2, n, 5}), Attributes{{"kernel_shape", Ints{3, 3}},
                                                                      {"pads", Ints{1, 1, 1, 1}},
                                                                      {"strides", Ints{2, 1}}}));
}

SG_LOWERING_SAMPLE(AveragePool, asymmetric_pads) {
  s.output(s.b.average_pool(s.input(DType::f32, {1, 2, n, 5}),
                            Attributes{{"kernel_shape", Ints{2, 2}}, {"pads", Ints{0, 1, 1, 0}}}));
}

SG_LOWERING_SAMPLE(GlobalAveragePool, rank_4) {
  s.rtol = 1e-4, s.atol = 1e-5;
  s.output(s.b.global_average_pool(s.input(DType::f32, {2, 3, n, 2})));
}

SG_LOWERING_SAMPLE(GlobalMaxPool, rank_4) {
  s.output(s.b.global_max_pool(s.input(DType::f32, {2, 3, n, 2})));
  s.output(s.b.global_max_pool(s.input(DType::f64, {1, n, 5})));
}

// Padding on both sides of a strided dim, not counted: the count varies by position.
SG_LOWERING_SAMPLE(AveragePool, excluded_pads_strided) {
  s.output(s.b.average_pool(
      s.input(DType::f32, {1, 2, n, 4}),
      Attributes{
          {"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 1}}}));
}
