// LSTM: a hand-computed step, and random inputs against a reference written here in double straight
// from the ONNX formulas: one batch row and one time step at a time, with plain dot products (no
// GEMM, no batched state).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/recurrent.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace test_lstm {  // this file's own names (the tests build as unity sources)

namespace {

// One LSTM node's configuration; the sizes default to odd ones.
struct Config {
  int64_t seq = 5, batch = 3, input = 13, hidden = 7;
  std::string direction = "forward";
  bool bias = false, init = false, peep = false, seq_lens = false, input_forget = false;
  int64_t layout = 0;
  double clip = 0;  // 0: no clip attribute
  Strings acts;     // empty: the default Sigmoid, Tanh, Tanh
  Floats alpha, beta;
  int outputs = 3;
  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
};

// The activations of the ONNX RNN docs, by name, and which of alpha / beta each one takes.
double activation(const std::string& name, double a, double b, double x) {
  if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Relu") return std::max(0.0, x);
  if (name == "Affine") return a * x + b;
  if (name == "LeakyRelu") return x >= 0 ? x : a * x;
  if (name == "ThresholdedRelu") return x >= a ? x : 0;
  if (name == "ScaledTanh") return a * std::tanh(b * x);
  if (name == "HardSigmoid") return std::min(std::max(a * x + b, 0.0), 1.0);
  if (name == "Elu") return x >= 0 ? x : a * (std::exp(x) - 1);
  if (name == "Softsign") return x / (1 + std::abs(x));
  if (name == "Softplus") return std::log(1 + std::exp(x));
  FAIL("no such activation " << name);
  return 0;
}
bool takes_alpha(const std::string& n) {
  return n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" ||
         n == "HardSigmoid" || n == "Elu";
}
bool takes_beta(const std::string& n) {
  return n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid";
}

Attributes attrs_of(const Config& k) {
  Attributes a{{"hidden_size", k.hidden}, {"direction", k.direction}};
  if (k.layout) a.set("layout", k.layout);
  if (k.clip > 0) a.set("clip", k.clip);
  if (k.input_forget) a.set("input_forget", int64_t{1});
  if (!k.acts.empty()) a.set("activations", k.acts);
  if (!k.alpha.empty()) a.set("activation_alpha", k.alpha);
  if (!k.beta.empty()) a.set("activation_beta", k.beta);
  return a;
}

// Random inputs X, W, R, B, sequence_lens, initial_h, initial_c, P (absent ones undefined).
// sequence_lens is seq, 0, 2, seq - 1, ... so that one row is empty and the others stop early.
std::vector<Tensor> make_inputs(const Config& k, DType dt, uint32_t seed) {
  auto rnd = [&](Shape s) {
    return dt == DType::f64 ? random_f64(std::move(s), seed++) : random_f32(std::move(s), seed++);
  };
  const int64_t d = k.dirs(), h = k.hidden;
  const Shape x = k.layout ? Shape{k.batch, k.seq, k.input} : Shape{k.seq, k.batch, k.input};
  const Shape state = k.layout ? Shape{k.batch, d, h} : Shape{d, k.batch, h};
  std::vector<Tensor> in{rnd(x), rnd({d, 4 * h, k.input}), rnd({d, 4 * h, h})};
  in.push_back(k.bias ? rnd({d, 8 * h}) : Tensor{});
  std::vector<int32_t> lens;
  for (int64_t b = 0; b < k.batch; ++b) {
    const int64_t pattern[] = {k.seq, 0, std::min<int64_t>(2, k.seq), k.seq - 1};
    lens.push_back(static_cast<int32_t>(pattern[b % 4]));
  }
  in.push_back(k.seq_lens ? Tensor::from<int32_t>({k.batch}, lens) : Tensor{});
  in.push_back(k.init ? rnd(state) : Tensor{});
  in.push_back(k.init ? rnd(state) : Tensor{});
  in.push_back(k.peep ? rnd({d, 3 * h}) : Tensor{});
  return in;
}

// Y, Y_h and Y_c from the ONNX equations, one batch row and one time step at a time.
std::vector<Expected> reference(const Config& k, const std::vector<Tensor>& in) {
  const int64_t S = k.seq, B = k.batch, I = k.input, H = k.hidden, D = k.dirs();
  auto x = [&](int64_t t, int64_t b, int64_t i) {
    return in[0].at_double((k.layout ? b * S + t : t * B + b) * I + i);
  };
  auto state = [&](int64_t d, int64_t b) { return (k.layout ? b * D + d : d * B + b) * H; };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return (k.layout ? (b * S + t) * D + d : (t * D + d) * B + b) * H;
  };
  const Shape st = k.layout ? Shape{B, D, H} : Shape{D, B, H};
  std::vector<Expected> out{
      {k.layout ? Shape{B, S, D, H} : Shape{S, D, B, H}, std::vector<double>(S * D * B * H, 0.0)},
      {st, std::vector<double>(D * B * H, 0.0)},
      {st, std::vector<double>(D * B * H, 0.0)}};
  // The activations f, g, h of each direction with the alpha / beta they consume, in order.
  struct Fn {
    std::string name;
    double a = 0, b = 0;
    double operator()(double v) const { return activation(name, a, b, v); }
  };
  std::vector<Fn> fns;
  const Strings names =
      k.acts.empty() ? Strings{"Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Tanh"} : k.acts;
  size_t ai = 0, bi = 0;
  for (int64_t n = 0; n < 3 * D; ++n) {
    Fn fn{names[n]};
    if (takes_alpha(fn.name)) fn.a = k.alpha.at(ai++);
    if (takes_beta(fn.name)) fn.b = k.beta.at(bi++);
    fns.push_back(fn);
  }
  auto clip = [&](double v) { return k.clip > 0 ? std::clamp(v, -k.clip, k.clip) : v; };
  for (int64_t d = 0; d < D; ++d) {
    const Fn &f = fns[3 * d], &g = fns[3 * d + 1], &h = fns[3 * d + 2];
    const bool backward = k.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = k.seq_lens ? in[4].at_double(b) : S;
      std::vector<double> hs(H, 0.0), cs(H, 0.0);
      if (k.init)
        for (int64_t j = 0; j < H; ++j) {
          hs[j] = in[5].at_double(state(d, b) + j);
          cs[j] = in[6].at_double(state(d, b) + j);
        }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = backward ? len - 1 - step : step;
        // pre(gate, j) = Xt W[gate]^T + H R[gate]^T + Wb + Rb, gates i=0, o=1, f=2, c=3.
        auto pre = [&](int64_t gate, int64_t j) {
          const int64_t row = d * 4 * H + gate * H + j;
          double s = 0;
          for (int64_t i = 0; i < I; ++i) s += x(t, b, i) * in[1].at_double(row * I + i);
          for (int64_t r = 0; r < H; ++r) s += hs[r] * in[2].at_double(row * H + r);
          if (k.bias)
            s += in[3].at_double(d * 8 * H + gate * H + j) +
                 in[3].at_double(d * 8 * H + 4 * H + gate * H + j);
          return s;
        };
        auto peep = [&](int64_t which, int64_t j) {  // P is i, o, f
          return k.peep ? in[7].at_double(d * 3 * H + which * H + j) : 0.0;
        };
        std::vector<double> hn(H), cn(H);
        for (int64_t j = 0; j < H; ++j) {
          const double i = f(clip(pre(0, j) + peep(0, j) * cs[j]));
          const double fg = k.input_forget ? 1 - i : f(clip(pre(2, j) + peep(2, j) * cs[j]));
          const double c = g(clip(pre(3, j)));
          cn[j] = fg * cs[j] + i * c;
          const double o = f(clip(pre(1, j) + peep(1, j) * cn[j]));
          hn[j] = o * h(cn[j]);
        }
        hs = hn;
        cs = cn;
        std::copy(hs.begin(), hs.end(), out[0].values.begin() + y_at(t, d, b));
      }
      if (len > 0) {
        std::copy(hs.begin(), hs.end(), out[1].values.begin() + state(d, b));
        std::copy(cs.begin(), cs.end(), out[2].values.begin() + state(d, b));
      }
    }
  }
  out.resize(k.outputs);
  return out;
}

void check_against_reference(const Config& k, uint32_t seed) {
  for (DType dt : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(dt));
    const std::vector<Tensor> in = make_inputs(k, dt, seed);
    const std::vector<Tensor> got = run_op(OpKind::LSTM, in, attrs_of(k), k.outputs);
    const std::vector<Expected> want = reference(k, in);
    REQUIRE(got.size() == want.size());
    for (size_t o = 0; o < got.size(); ++o) {
      CAPTURE(o);
      CHECK(got[o].dtype() == dt);
      const double rtol = dt == DType::f64 ? 1e-10 : 1e-4, atol = dt == DType::f64 ? 1e-12 : 1e-5;
      check_close(got[o], want[o].shape, want[o].values, rtol, atol);
    }
  }
}

}  // namespace

TEST_CASE("LSTM: one hand-computed step") {
  // hidden 1, input 1, batch 1, X = 1, W = (i 0.5, o 1, f -1, c 2), R = (1, -1, 2, 0),
  // Wb = (0, 0, 0, -1), Rb = (0.5, 0, 0, 0), initial_h = 1, initial_c = 2:
  //   i = sigmoid(0.5 + 1 + 0.5) = sigmoid(2) = 0.8807971
  //   o = sigmoid(1 - 1)         = 0.5
  //   f = sigmoid(-1 + 2)        = sigmoid(1) = 0.7310586
  //   c = tanh(2 + 0 - 1)        = tanh(1)    = 0.7615942
  //   C = f * 2 + i * c = 1.4621172 + 0.6708099 = 2.1329271
  //   H = o * tanh(C)   = 0.5 * 0.9723090       = 0.4861545
  const std::vector<Tensor> got =
      run_op(OpKind::LSTM,
             {f32({1, 1, 1}, {1}), f32({1, 4, 1}, {0.5f, 1, -1, 2}), f32({1, 4, 1}, {1, -1, 2, 0}),
              f32({1, 8}, {0, 0, 0, -1, 0.5f, 0, 0, 0}), Tensor{}, f32({1, 1, 1}, {1}),
              f32({1, 1, 1}, {2})},
             {{"hidden_size", int64_t{1}}}, 3);
  REQUIRE(got.size() == 3);
  check_close(got[0], {1, 1, 1, 1}, {0.4861545});
  check_close(got[1], {1, 1, 1}, {0.4861545});
  check_close(got[2], {1, 1, 1}, {2.1329271});
}

TEST_CASE("LSTM: random inputs match a per-timestep reference") {
  Config k;
  SUBCASE("forward, no optional inputs") {}
  SUBCASE("forward, bias, initial states, peepholes") { k.bias = k.init = k.peep = true; }
  SUBCASE("reverse, bias, initial states") {
    k.direction = "reverse";
    k.bias = k.init = true;
  }
  SUBCASE("bidirectional, everything") {
    k.direction = "bidirectional";
    k.bias = k.init = k.peep = k.seq_lens = true;
  }
  SUBCASE("bidirectional, no optional inputs") { k.direction = "bidirectional"; }
  SUBCASE("forward, sequence_lens with an empty row") {
    k.batch = 5;
    k.seq_lens = k.init = true;
  }
  SUBCASE("reverse, sequence_lens with an empty row") {
    k.direction = "reverse";
    k.batch = 4;
    k.seq_lens = k.bias = k.init = true;
  }
  SUBCASE("layout 1") {
    k.layout = 1;
    k.direction = "bidirectional";
    k.bias = k.init = k.peep = k.seq_lens = true;
  }
  SUBCASE("clip") {
    k.clip = 0.7;
    k.bias = k.peep = k.init = true;
  }
  SUBCASE("non-default activations with alpha and beta") {
    k.direction = "bidirectional";
    k.bias = k.init = true;
    k.acts = {"HardSigmoid", "ScaledTanh", "Softsign", "LeakyRelu", "Elu", "Affine"};
    k.alpha = {0.3, 0.9, 0.05, 1.5, 0.7};
    k.beta = {0.45, 1.2, 0.1};
  }
  SUBCASE("Relu, Softplus, ThresholdedRelu") {
    k.acts = {"Sigmoid", "Softplus", "ThresholdedRelu"};
    k.alpha = {0.2};
    k.init = true;
  }
  SUBCASE("input_forget") {
    k.input_forget = true;
    k.bias = k.init = k.peep = true;
  }
  SUBCASE("only Y") { k.outputs = 1; }
  SUBCASE("Y and Y_h, reverse") {
    k.outputs = 2;
    k.direction = "reverse";
    k.seq_lens = true;
  }
  SUBCASE("size-1 dims") { k.seq = k.batch = k.input = k.hidden = 1; }
  SUBCASE("empty sequence") {
    k.seq = 0;
    k.init = true;
  }
  check_against_reference(k, 11);
}

TEST_CASE("LSTM: activation names are case-insensitive, a missing alpha takes the default") {
  Config k;
  k.acts = {"Sigmoid", "LeakyRelu", "Relu"};
  Attributes a = attrs_of(k);
  a.set("activations", Strings{"sigmoid", "LEAKYRELU", "relu"});
  const std::vector<Tensor> in = make_inputs(k, DType::f64, 3);
  k.alpha = {0.01};  // LeakyRelu's default
  const std::vector<Expected> want = reference(k, in);
  const std::vector<Tensor> got = run_op(OpKind::LSTM, in, a, 3);
  for (size_t o = 0; o < got.size(); ++o) check_close(got[o], want[o].shape, want[o].values);
}

TEST_CASE("LSTM: shapes follow symbolic dims") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {Dim("seq"), Dim("batch"), 3});
  const ValueId w = b.constant("w", random_f32({2, 8, 3}, 1));
  const ValueId r = b.constant("r", random_f32({2, 8, 2}, 2));
  const auto outs =
      b.node(OpKind::LSTM, {x, w, r},
             {{"hidden_size", int64_t{2}}, {"direction", std::string("bidirectional")}}, 3);
  const Graph g = b.build();
  CHECK(g.value(outs[0]).shape == DimList{Dim("seq"), 2, Dim("batch"), 2});
  CHECK(g.value(outs[1]).shape == DimList{2, Dim("batch"), 2});
}

TEST_CASE("LSTM: errors") {
  Config k;
  k.seq = 2, k.batch = 2, k.input = 3, k.hidden = 2;
  k.bias = k.init = k.peep = k.seq_lens = true;
  const std::vector<Tensor> good = make_inputs(k, DType::f32, 5);
  auto err = [&](std::vector<Tensor> in, Attributes a) { return op_error(OpKind::LSTM, in, a, 3); };
  auto with = [&](size_t i, Tensor t) {
    std::vector<Tensor> in = good;
    in[i] = std::move(t);
    return err(in, attrs_of(k));
  };
  auto attr = [&](const char* name, AttrValue v) {
    Attributes a = attrs_of(k);
    a.set(name, std::move(v));
    return err(good, a);
  };
  CHECK(err(good, attrs_of(k)).empty());
  CHECK(contains(with(0, random_f32({2, 6}, 1)), "X must have rank 3"));
  CHECK(contains(with(1, random_f32({8, 3}, 1)), "W must have rank 3"));
  CHECK(contains(with(2, random_f32({1, 8, 2, 1}, 1)), "R must have rank 3"));
  CHECK(contains(with(1, random_f32({1, 12, 3}, 1)), "W must have shape [1,8,3]"));
  CHECK(contains(with(1, random_f32({1, 8, 4}, 1)), "W must have shape [1,8,3]"));
  CHECK(contains(with(2, random_f32({1, 8, 3}, 1)), "R must have shape [1,8,2]"));
  CHECK(contains(with(3, random_f32({1, 8}, 1)), "B must have shape [1,16]"));
  CHECK(contains(with(4, Tensor::from<int32_t>({3}, {1, 1, 1})), "sequence_lens must have shape"));
  CHECK(contains(with(5, random_f32({1, 2, 3}, 1)), "initial_h must have shape [1,2,2]"));
  CHECK(contains(with(6, random_f32({2, 2, 2}, 1)), "initial_c must have shape [1,2,2]"));
  CHECK(contains(with(7, random_f32({1, 7}, 1)), "P must have shape [1,6]"));
  // num_directions: bidirectional needs two of everything
  CHECK(contains(attr("direction", std::string("bidirectional")), "W must have shape [2,8,3]"));
  CHECK(contains(attr("hidden_size", int64_t{3}), "W must have shape [1,12,3]"));
  CHECK(contains(attr("hidden_size", int64_t{0}), "hidden_size must be >= 1"));
  CHECK(contains(err(good, {{"direction", std::string("forward")}}), "hidden_size"));
  CHECK(contains(attr("direction", std::string("sideways")), "direction must be forward"));
  CHECK(contains(attr("activations", Strings{"Sigmoid", "Tanh", "Swish"}),
                 "unknown activation 'Swish'"));
  CHECK(contains(attr("activations", Strings{"Sigmoid", "Tanh"}), "activations must list 3"));
  CHECK(contains(attr("layout", int64_t{2}), "layout must be 0 or 1"));
  CHECK(contains(attr("clip", 0.0), "clip must be > 0"));
  CHECK(contains(with(4, Tensor::from<int32_t>({2}, {1, 3})),
                 "sequence_lens values must be in [0, 2], got 3"));
  CHECK(contains(with(4, Tensor::from<int32_t>({2}, {-1, 1})),
                 "sequence_lens values must be in [0, 2], got -1"));
  CHECK(contains(with(1, random_f64({1, 8, 3}, 1)), "must have the same dtype"));
  CHECK(contains(with(5, random_f64({1, 2, 2}, 1)), "must have the same dtype"));
  CHECK(contains(with(4, f32({2}, {1, 1})), "input 4"));
  std::vector<Tensor> ints_x = good;
  ints_x[0] = iota<int32_t>({2, 2, 3});
  CHECK(contains(err(ints_x, attrs_of(k)), "must be a float tensor"));
}

TEST_CASE("Recurrent gates: the vectorised sigmoid and tanh against <cmath>") {
  // Every float in [-20, 20] on a fine grid, the approximations' cut-offs, the extremes, zeros,
  // denormals, infinities and NaN, at lengths that end inside a vector and inside a block.
  std::vector<float> x;
  for (int i = -40000; i <= 40000; ++i) x.push_back(float(i) / 2000.0f);
  for (float v : {-9.0f, 9.0f, -15.7243833f, 15.7243833f, 88.0f, -88.0f, -104.0f, 1e30f, -1e30f,
                  1e-30f, -1e-30f, 1e-40f, 0.0f, -0.0f, std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(),
                  float(kNaN), -float(kNaN)})
    x.push_back(v);
  for (const bool sig : {true, false})
    for (size_t n : {x.size(), size_t{1}, size_t{5}, size_t{257}}) {
      const size_t from = x.size() - n;  // the tail: the special values
      std::vector<float> y(x.begin() + from, x.end());
      if (sig)
        ops::sigmoid_f32(y.data(), int64_t(n));
      else
        ops::tanh_f32(y.data(), int64_t(n));
      for (size_t i = 0; i < n; ++i) {
        const double v = x[from + i];
        const double want = sig ? 1 / (1 + std::exp(-v)) : std::tanh(v);
        INFO(std::string(sig ? "sigmoid(" : "tanh(") << v << ") = " << y[i] << ", want " << want);
        if (std::isnan(v)) {
          REQUIRE(std::isnan(y[i]));
        } else {
          // A few float ulps of the result, and an absolute 1e-37 for sigmoid's tiny results.
          REQUIRE(std::abs(y[i] - want) <= 4e-7 * std::abs(want) + 1e-37);
        }
      }
    }
}

}  // namespace test_lstm
