// End-to-end: a 2-layer MLP and a small CNN built with the builder, checked against plain loops
// written here in double precision (an implementation independent of the op kernels).
#include <cmath>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// y[n,j] = sum_k x[n,k] w[k,j] + b[j]
std::vector<double> dense(const std::vector<double>& x, const std::vector<double>& w,
                          const std::vector<double>& b, int64_t n, int64_t k, int64_t m) {
  std::vector<double> y(n * m);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double acc = b[j];
      for (int64_t q = 0; q < k; ++q) acc += x[i * k + q] * w[q * m + j];
      y[i * m + j] = acc;
    }
  return y;
}

}  // namespace

TEST_CASE("End to end: 2-layer MLP with softmax, variable batch") {
  const Tensor w1 = test::random_f32({4, 5}, 1), b1 = test::random_f32({5}, 2);
  const Tensor w2 = test::random_f32({5, 3}, 3), b2 = test::random_f32({3}, 4);
  GraphBuilder b("mlp");
  ValueId x = b.input("x", DType::f32, {Dim("batch"), 4});
  ValueId h = b.relu(b.add(b.matmul(x, b.constant("w1", w1)), b.constant("b1", b1)));
  ValueId logits = b.add(b.matmul(h, b.constant("w2", w2)), b.constant("b2", b2));
  b.output(b.softmax(logits, Attributes{{"axis", int64_t{1}}}), "probs");
  // One warm-up run at batch 2: later batches of 2 run compiled, others fall back.
  Session s(b.build(), SessionOptions{.warmup_runs = 1});

  for (int64_t batch : {2, 2, 7, 1, 2}) {
    CAPTURE(batch);
    const Tensor in = test::random_f32({batch, 4}, 10 + static_cast<uint32_t>(batch), -2, 2);
    std::vector<double> hid = dense(values(in), values(w1), values(b1), batch, 4, 5);
    for (double& v : hid) v = std::max(v, 0.0);
    std::vector<double> out = dense(hid, values(w2), values(b2), batch, 5, 3);
    for (int64_t i = 0; i < batch; ++i) {
      double mx = -1e300, sum = 0;
      for (int j = 0; j < 3; ++j) mx = std::max(mx, out[i * 3 + j]);
      for (int j = 0; j < 3; ++j) sum += std::exp(out[i * 3 + j] - mx);
      for (int j = 0; j < 3; ++j) out[i * 3 + j] = std::exp(out[i * 3 + j] - mx) / sum;
    }
    test::check_close(s.run({in})[0], {batch, 3}, out, 1e-5, 1e-6);
  }
  CHECK(s.report().kernel_calls >= 1);  // the second batch of 2 at least ran compiled
}

TEST_CASE("End to end: small CNN (Conv, BatchNorm, Relu, MaxPool, Flatten, Gemm)") {
  // x[N,2,6,6] -> Conv 3x3 pad 1 (3 out channels) -> BatchNorm -> Relu -> MaxPool 2x2/2
  // -> Flatten [N,27] -> Gemm with W[4,27] (transB) + bias -> logits [N,4]
  const int64_t C = 2, H = 6, W = 6, M = 3, P = 3, K = M * P * P, O = 4;
  const Tensor wc = test::random_f32({M, C, 3, 3}, 21), bc = test::random_f32({M}, 22);
  const Tensor scale = test::random_f32({M}, 23, 0.5f, 1.5f), shift = test::random_f32({M}, 24);
  const Tensor mean = test::random_f32({M}, 25), var = test::random_f32({M}, 26, 0.5f, 2.0f);
  const Tensor wf = test::random_f32({O, K}, 27), bf = test::random_f32({O}, 28);
  GraphBuilder b("cnn");
  ValueId x = b.input("x", DType::f32, {Dim("N"), C, H, W});
  ValueId c = b.conv(x, b.constant("wc", wc), b.constant("bc", bc),
                     Attributes{{"pads", Ints{1, 1, 1, 1}}, {"kernel_shape", Ints{3, 3}}});
  ValueId bn = b.batch_normalization(c, b.constant("scale", scale), b.constant("shift", shift),
                                     b.constant("mean", mean), b.constant("var", var),
                                     Attributes{{"epsilon", 1e-3}});
  ValueId p =
      b.max_pool(b.relu(bn), Attributes{{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  ValueId f = b.flatten(p);
  b.output(
      b.gemm(f, b.constant("wf", wf), b.constant("bf", bf), Attributes{{"transB", int64_t{1}}}),
      "logits");
  Session s(b.build(), SessionOptions{.warmup_runs = 1});  // later runs at N = 1 compiled

  for (int64_t n : {1, 1, 3, 1}) {
    CAPTURE(n);
    const Tensor in = test::random_f32({n, C, H, W}, 30 + static_cast<uint32_t>(n));
    const auto xv = values(in), wv = values(wc), bv = values(bc);
    const auto sv = values(scale), tv = values(shift), mv = values(mean), vv = values(var);
    std::vector<double> act(n * M * H * W);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t y = 0; y < H; ++y)
          for (int64_t z = 0; z < W; ++z) {
            double acc = bv[m];
            for (int64_t ch = 0; ch < C; ++ch)
              for (int64_t dy = 0; dy < 3; ++dy)
                for (int64_t dz = 0; dz < 3; ++dz) {
                  const int64_t yy = y + dy - 1, zz = z + dz - 1;
                  if (yy < 0 || yy >= H || zz < 0 || zz >= W) continue;
                  acc +=
                      xv[((i * C + ch) * H + yy) * W + zz] * wv[((m * C + ch) * 3 + dy) * 3 + dz];
                }
            acc = (acc - mv[m]) / std::sqrt(vv[m] + 1e-3) * sv[m] + tv[m];
            act[((i * M + m) * H + y) * W + z] = std::max(acc, 0.0);
          }
    std::vector<double> pooled(n * K);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t y = 0; y < P; ++y)
          for (int64_t z = 0; z < P; ++z) {
            double mx = -1e300;
            for (int64_t dy = 0; dy < 2; ++dy)
              for (int64_t dz = 0; dz < 2; ++dz)
                mx = std::max(mx, act[((i * M + m) * H + 2 * y + dy) * W + 2 * z + dz]);
            pooled[i * K + (m * P + y) * P + z] = mx;
          }
    // Gemm with transB: logits[i,o] = sum_k pooled[i,k] * wf[o,k] + bf[o]
    const auto fv = values(wf), fb = values(bf);
    std::vector<double> logits(n * O);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < O; ++o) {
        double acc = fb[o];
        for (int64_t k = 0; k < K; ++k) acc += pooled[i * K + k] * fv[o * K + k];
        logits[i * O + o] = acc;
      }
    test::check_close(s.run({in})[0], {n, O}, logits, 1e-4, 1e-5);
  }
  CHECK(s.report().kernel_calls >= 1);  // the second N = 1 at least ran compiled
}
