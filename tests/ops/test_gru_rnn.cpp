// GRU and RNN: hand-computed steps, and random inputs against a reference written here in double
// straight from the ONNX formulas: one batch row and one time step at a time, with plain dot
// products (no GEMM, no batched state).
#include <algorithm>
#include <cmath>
#include <string>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

// One GRU or RNN node's configuration; the sizes default to odd ones.
struct Config {
  bool gru = true;
  int64_t seq = 5, batch = 3, input = 13, hidden = 7;
  std::string direction = "forward";
  bool bias = false, init = false, seq_lens = false, linear_before_reset = false;
  int64_t layout = 0;
  double clip = 0;  // 0: no clip attribute
  Strings acts;     // empty: the defaults
  Floats alpha, beta;
  int outputs = 2;
  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return gru ? 3 : 1; }
  OpKind op() const { return gru ? OpKind::GRU : OpKind::RNN; }
};

// The activations of the ONNX RNN docs, by name.
double activation(const std::string& name, double a, double b, double x) {
  if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Relu") return std::max(0.0, x);
  if (name == "Affine") return a * x + b;
  if (name == "LeakyRelu") return x >= 0 ? x : a * x;
  if (name == "HardSigmoid") return std::min(std::max(a * x + b, 0.0), 1.0);
  if (name == "Softsign") return x / (1 + std::abs(x));
  FAIL("no such activation " << name);
  return 0;
}
bool takes_alpha(const std::string& n) {
  return n == "Affine" || n == "LeakyRelu" || n == "HardSigmoid";
}
bool takes_beta(const std::string& n) { return n == "Affine" || n == "HardSigmoid"; }

Attributes attrs_of(const Config& k) {
  Attributes a{{"hidden_size", k.hidden}, {"direction", k.direction}};
  if (k.layout) a.set("layout", k.layout);
  if (k.clip > 0) a.set("clip", k.clip);
  if (k.linear_before_reset) a.set("linear_before_reset", int64_t{1});
  if (!k.acts.empty()) a.set("activations", k.acts);
  if (!k.alpha.empty()) a.set("activation_alpha", k.alpha);
  if (!k.beta.empty()) a.set("activation_beta", k.beta);
  return a;
}

// Random inputs X, W, R, B, sequence_lens, initial_h (absent ones undefined). sequence_lens is
// seq, 0, 2, seq - 1, ... so that one row is empty and the others stop early.
std::vector<Tensor> make_inputs(const Config& k, DType dt, uint32_t seed) {
  auto rnd = [&](Shape s) {
    return dt == DType::f64 ? random_f64(std::move(s), seed++) : random_f32(std::move(s), seed++);
  };
  const int64_t d = k.dirs(), gh = k.gates() * k.hidden;
  const Shape x = k.layout ? Shape{k.batch, k.seq, k.input} : Shape{k.seq, k.batch, k.input};
  const Shape state = k.layout ? Shape{k.batch, d, k.hidden} : Shape{d, k.batch, k.hidden};
  std::vector<Tensor> in{rnd(x), rnd({d, gh, k.input}), rnd({d, gh, k.hidden})};
  in.push_back(k.bias ? rnd({d, 2 * gh}) : Tensor{});
  std::vector<int64_t> lens;
  for (int64_t b = 0; b < k.batch; ++b) {
    const int64_t pattern[] = {k.seq, 0, std::min<int64_t>(2, k.seq), k.seq - 1};
    lens.push_back(pattern[b % 4]);
  }
  in.push_back(k.seq_lens ? ints(lens) : Tensor{});
  in.push_back(k.init ? rnd(state) : Tensor{});
  return in;
}

// Y and Y_h from the ONNX equations, one batch row and one time step at a time.
std::vector<Expected> reference(const Config& k, const std::vector<Tensor>& in) {
  const int64_t S = k.seq, B = k.batch, I = k.input, H = k.hidden, D = k.dirs(), G = k.gates();
  auto x = [&](int64_t t, int64_t b, int64_t i) {
    return in[0].at_double((k.layout ? b * S + t : t * B + b) * I + i);
  };
  auto state = [&](int64_t d, int64_t b) { return (k.layout ? b * D + d : d * B + b) * H; };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return (k.layout ? (b * S + t) * D + d : (t * D + d) * B + b) * H;
  };
  std::vector<Expected> out{
      {k.layout ? Shape{B, S, D, H} : Shape{S, D, B, H}, std::vector<double>(S * D * B * H, 0.0)},
      {k.layout ? Shape{B, D, H} : Shape{D, B, H}, std::vector<double>(D * B * H, 0.0)}};
  struct Fn {
    std::string name;
    double a = 0, b = 0;
    double operator()(double v) const { return activation(name, a, b, v); }
  };
  std::vector<Fn> fns;
  Strings names = k.acts;
  if (names.empty())
    for (int64_t d = 0; d < D; ++d)
      for (const std::string& n : k.gru ? Strings{"Sigmoid", "Tanh"} : Strings{"Tanh"})
        names.push_back(n);
  size_t ai = 0, bi = 0;
  for (const std::string& n : names) {
    Fn fn{n};
    if (takes_alpha(n)) fn.a = k.alpha.at(ai++);
    if (takes_beta(n)) fn.b = k.beta.at(bi++);
    fns.push_back(fn);
  }
  auto clip = [&](double v) { return k.clip > 0 ? std::clamp(v, -k.clip, k.clip) : v; };
  const int64_t per_dir = k.gru ? 2 : 1;
  for (int64_t d = 0; d < D; ++d) {
    const Fn& f = fns[per_dir * d];
    const bool backward = k.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = k.seq_lens ? in[4].at_double(b) : S;
      std::vector<double> hs(H, 0.0);
      if (k.init)
        for (int64_t j = 0; j < H; ++j) hs[j] = in[5].at_double(state(d, b) + j);
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = backward ? len - 1 - step : step;
        auto row = [&](int64_t gate, int64_t j) { return d * G * H + gate * H + j; };
        auto wx = [&](int64_t gate, int64_t j) {  // X_t W[gate]^T + Wb[gate]
          double s = 0;
          for (int64_t i = 0; i < I; ++i) s += x(t, b, i) * in[1].at_double(row(gate, j) * I + i);
          return s + (k.bias ? in[3].at_double(d * 2 * G * H + gate * H + j) : 0.0);
        };
        auto rbias = [&](int64_t gate, int64_t j) {
          return k.bias ? in[3].at_double(d * 2 * G * H + G * H + gate * H + j) : 0.0;
        };
        auto rh = [&](const std::vector<double>& v, int64_t gate, int64_t j) {  // v R[gate]^T
          double s = 0;
          for (int64_t r = 0; r < H; ++r) s += v[r] * in[2].at_double(row(gate, j) * H + r);
          return s;
        };
        std::vector<double> hn(H);
        if (!k.gru) {
          for (int64_t j = 0; j < H; ++j) hn[j] = f(clip(wx(0, j) + rh(hs, 0, j) + rbias(0, j)));
        } else {
          const Fn& g = fns[2 * d + 1];
          std::vector<double> z(H), r(H), rhs(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = f(clip(wx(0, j) + rh(hs, 0, j) + rbias(0, j)));
            r[j] = f(clip(wx(1, j) + rh(hs, 1, j) + rbias(1, j)));
            rhs[j] = r[j] * hs[j];
          }
          for (int64_t j = 0; j < H; ++j) {
            const double rec = k.linear_before_reset ? r[j] * (rh(hs, 2, j) + rbias(2, j))
                                                     : rh(rhs, 2, j) + rbias(2, j);
            const double c = g(clip(wx(2, j) + rec));
            hn[j] = (1 - z[j]) * c + z[j] * hs[j];
          }
        }
        hs = hn;
        std::copy(hs.begin(), hs.end(), out[0].values.begin() + y_at(t, d, b));
      }
      if (len > 0) std::copy(hs.begin(), hs.end(), out[1].values.begin() + state(d, b));
    }
  }
  out.resize(k.outputs);
  return out;
}

void check_against_reference(const Config& k, uint32_t seed) {
  for (DType dt : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(dt));
    const std::vector<Tensor> in = make_inputs(k, dt, seed);
    const std::vector<Tensor> got = run_op(k.op(), in, attrs_of(k), k.outputs);
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

// The configurations both ops are checked in.
void common_subcases(Config& k) {
  SUBCASE("forward, no optional inputs") {}
  SUBCASE("forward, bias, initial state") { k.bias = k.init = true; }
  SUBCASE("reverse, bias, initial state") {
    k.direction = "reverse";
    k.bias = k.init = true;
  }
  SUBCASE("bidirectional, everything") {
    k.direction = "bidirectional";
    k.bias = k.init = k.seq_lens = true;
  }
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
    k.bias = k.init = k.seq_lens = true;
  }
  SUBCASE("clip") {
    k.clip = 0.3;
    k.bias = k.init = true;
  }
  SUBCASE("only Y") { k.outputs = 1; }
  SUBCASE("size-1 dims") { k.seq = k.batch = k.input = k.hidden = 1; }
  SUBCASE("empty sequence") {
    k.seq = 0;
    k.init = true;
  }
}

}  // namespace

TEST_CASE("GRU: one hand-computed step, both reset orders") {
  // hidden 1, input 1, batch 1, X = 1, W = (z 0.5, r -1, h 2), R = (z 1, r 2, h -1),
  // Wb = (0, 0, 0.5), Rb = (0, 1, 0.25), initial_h = 1:
  //   z = sigmoid(0.5 + 1)      = sigmoid(1.5) = 0.8175745
  //   r = sigmoid(-1 + 2 + 1)   = sigmoid(2)   = 0.8807971
  //   c = tanh(2 + 0.5 + r*1*(-1) + 0.25)  = tanh(1.8692029) = 0.9535218   (reset first)
  //   c = tanh(2 + 0.5 + r*(1*(-1) + 0.25)) = tanh(1.8394022) = 0.9507377  (linear first)
  //   H = (1 - z)*c + z*1       = 0.9915212 and 0.9910133
  const std::vector<Tensor> in{f32({1, 1, 1}, {1}),
                               f32({1, 3, 1}, {0.5f, -1, 2}),
                               f32({1, 3, 1}, {1, 2, -1}),
                               f32({1, 6}, {0, 0, 0.5f, 0, 1, 0.25f}),
                               Tensor{},
                               f32({1, 1, 1}, {1})};
  std::vector<Tensor> got = run_op(OpKind::GRU, in, {{"hidden_size", int64_t{1}}}, 2);
  REQUIRE(got.size() == 2);
  check_close(got[0], {1, 1, 1, 1}, {0.9915212});
  check_close(got[1], {1, 1, 1}, {0.9915212});
  got = run_op(OpKind::GRU, in, {{"hidden_size", int64_t{1}}, {"linear_before_reset", int64_t{1}}},
               2);
  check_close(got[1], {1, 1, 1}, {0.9910133});
}

TEST_CASE("RNN: one hand-computed step") {
  // hidden 2, input 1, X = 2, W = [1, -1], R = [[0.5, 0], [0, 2]], Wb = [0.1, 0], Rb = [0, -0.2],
  // initial_h = [1, -1]: H = tanh(2 + 0.5 + 0.1, -2 - 2 - 0.2) = tanh(2.6, -4.2)
  const std::vector<Tensor> got =
      run_op(OpKind::RNN,
             {f32({1, 1, 1}, {2}), f32({1, 2, 1}, {1, -1}), f32({1, 2, 2}, {0.5f, 0, 0, 2}),
              f32({1, 4}, {0.1f, 0, 0, -0.2f}), Tensor{}, f32({1, 1, 2}, {1, -1})},
             {{"hidden_size", int64_t{2}}}, 2);
  check_close(got[0], {1, 1, 1, 2}, {0.9890274, -0.9995504});
  check_close(got[1], {1, 1, 2}, {0.9890274, -0.9995504});
}

TEST_CASE("GRU: random inputs match a per-timestep reference") {
  Config k;
  common_subcases(k);
  SUBCASE("linear_before_reset") {
    k.linear_before_reset = true;
    k.bias = k.init = k.seq_lens = true;
  }
  SUBCASE("linear_before_reset, bidirectional, layout 1") {
    k.linear_before_reset = true;
    k.direction = "bidirectional";
    k.layout = 1;
    k.bias = k.init = true;
  }
  SUBCASE("non-default activations with alpha and beta") {
    k.direction = "bidirectional";
    k.bias = k.init = true;
    // f must stay in [0, 1] (z mixes the states), or the state grows without bound
    k.acts = {"HardSigmoid", "Softsign", "Sigmoid", "Affine"};
    k.alpha = {0.3, 0.5};
    k.beta = {0.45, 0.1};
  }
  check_against_reference(k, 17);
}

TEST_CASE("RNN: random inputs match a per-timestep reference") {
  Config k;
  k.gru = false;
  common_subcases(k);
  SUBCASE("non-default activations") {
    k.direction = "bidirectional";
    k.bias = k.init = true;
    k.acts = {"Relu", "Affine"};
    k.alpha = {0.5};
    k.beta = {0.25};
  }
  check_against_reference(k, 23);
}

TEST_CASE("GRU and RNN: shapes follow symbolic dims") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {Dim("seq"), Dim("batch"), 3});
  const ValueId w = b.constant("w", random_f32({2, 6, 3}, 1));
  const ValueId r = b.constant("r", random_f32({2, 6, 2}, 2));
  const auto outs =
      b.node(OpKind::GRU, {x, w, r},
             {{"hidden_size", int64_t{2}}, {"direction", std::string("bidirectional")}}, 2);
  const Graph g = b.build();
  CHECK(g.value(outs[0]).shape == DimList{Dim("seq"), 2, Dim("batch"), 2});
  CHECK(g.value(outs[1]).shape == DimList{2, Dim("batch"), 2});
}

TEST_CASE("GRU and RNN: errors") {
  for (bool gru : {true, false}) {
    CAPTURE(gru);
    Config k;
    k.gru = gru;
    k.seq = 2, k.batch = 2, k.input = 3, k.hidden = 2;
    k.bias = k.init = k.seq_lens = true;
    const int64_t gh = k.gates() * k.hidden;
    const std::vector<Tensor> good = make_inputs(k, DType::f32, 5);
    auto err = [&](std::vector<Tensor> in, Attributes a) { return op_error(k.op(), in, a, 2); };
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
    const std::string w_shape = "W must have shape [1," + std::to_string(gh) + ",3]";
    CHECK(err(good, attrs_of(k)).empty());
    CHECK(contains(with(0, random_f32({2, 6}, 1)), "X must have rank 3"));
    CHECK(contains(with(1, random_f32({gh, 3}, 1)), "W must have rank 3"));
    CHECK(contains(with(2, random_f32({1, gh, 2, 1}, 1)), "R must have rank 3"));
    CHECK(contains(with(1, random_f32({1, gh + 1, 3}, 1)), w_shape));
    CHECK(contains(with(1, random_f32({1, gh, 4}, 1)), w_shape));
    CHECK(contains(with(2, random_f32({1, gh, 3}, 1)),
                   "R must have shape [1," + std::to_string(gh) + ",2]"));
    CHECK(contains(with(3, random_f32({1, gh}, 1)),
                   "B must have shape [1," + std::to_string(2 * gh) + "]"));
    CHECK(contains(with(4, ints({1, 1, 1})), "sequence_lens must have shape"));
    CHECK(contains(with(5, random_f32({1, 2, 3}, 1)), "initial_h must have shape [1,2,2]"));
    CHECK(contains(attr("direction", std::string("bidirectional")), "W must have shape [2,"));
    CHECK(contains(attr("hidden_size", int64_t{0}), "hidden_size must be >= 1"));
    CHECK(contains(attr("hidden_size", int64_t{1} << 62), "overflows"));
    CHECK(contains(err(good, {{"direction", std::string("forward")}}), "hidden_size"));
    CHECK(contains(attr("direction", std::string("sideways")), "direction must be forward"));
    CHECK(contains(attr("activations", Strings(k.gates() == 3 ? 2 : 1, "Swish")),
                   "unknown activation 'Swish'"));
    CHECK(contains(attr("activations", Strings{"Sigmoid", "Tanh", "Tanh"}),
                   gru ? "activations must list 2" : "activations must list 1"));
    CHECK(contains(attr("layout", int64_t{2}), "layout must be 0 or 1"));
    CHECK(contains(attr("clip", -1.0), "clip must be > 0"));
    CHECK(contains(with(4, ints({1, 3})), "sequence_lens values must be in [0, 2], got 3"));
    CHECK(contains(with(4, ints({-1, 1})), "sequence_lens values must be in [0, 2], got -1"));
    CHECK(contains(with(1, random_f64({1, gh, 3}, 1)), "must have the same dtype"));
    CHECK(contains(with(4, f32({2}, {1, 1})), "input 4"));
    std::vector<Tensor> ints_x = good;
    ints_x[0] = iota<int32_t>({2, 2, 3});
    CHECK(contains(err(ints_x, attrs_of(k)), "must be a float tensor"));
  }
}
