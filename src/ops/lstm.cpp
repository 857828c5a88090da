// LSTM (ONNX opsets 7 and 14): a one-layer LSTM run forward, reverse or both ways.
//
// Gates are stored i, o, f, c in W [dirs, 4h, input], R [dirs, 4h, h] and B [dirs, 8h] (Wb, Rb).
// Per direction, X·W^T for every time step is one GEMM before the time loop; each step adds
// H_{t-1}·R^T (one [batch, h] x [h, 4h] GEMM) and applies the gates:
//   i = f(Xi + Hi + Pi*C_{t-1})   f = f(Xf + Hf + Pf*C_{t-1})   c = g(Xc + Hc)
//   C_t = f*C_{t-1} + i*c         o = f(Xo + Ho + Po*C_t)       H_t = o*h(C_t)
// where X? and H? include the biases, `clip` bounds every gate's pre-activation and
// input_forget couples the gates as f = 1 - i (onnxruntime's reading of the spec). A batch row
// with sequence_lens[b] = L runs L steps (the reverse direction from step L-1 down to 0): its Y is
// zero past L and Y_h/Y_c hold its state after the last step (zero when L = 0, as onnxruntime).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "ops/gemm_kernel.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

enum Input : size_t { kX, kW, kR, kB, kSeqLens, kInitH, kInitC, kP };

enum class Act {
  sigmoid,
  tanh,
  relu,
  hard_sigmoid,
  leaky_relu,
  affine,
  scaled_tanh,
  elu,
  softsign,
  softplus,
  thresholded_relu
};

// The activations ONNX's recurrent ops accept: how many of (alpha, beta) each takes from the
// activation_alpha / activation_beta lists, and the defaults (those of the standalone ONNX ops)
// used when a list runs out.
struct ActSpec {
  const char* name;  // lower case; attribute values match case-insensitively
  Act kind;
  int params;  // 0: none, 1: alpha, 2: alpha and beta
  double alpha, beta;
};
constexpr ActSpec kActs[] = {
    {"sigmoid", Act::sigmoid, 0, 0, 0},
    {"tanh", Act::tanh, 0, 0, 0},
    {"relu", Act::relu, 0, 0, 0},
    {"hardsigmoid", Act::hard_sigmoid, 2, 0.2, 0.5},
    {"leakyrelu", Act::leaky_relu, 1, 0.01, 0},
    {"affine", Act::affine, 2, 1.0, 0.0},
    {"scaledtanh", Act::scaled_tanh, 2, 1.0, 1.0},
    {"elu", Act::elu, 1, 1.0, 0},
    {"softsign", Act::softsign, 0, 0, 0},
    {"softplus", Act::softplus, 0, 0, 0},
    {"thresholdedrelu", Act::thresholded_relu, 1, 1.0, 0},
};

struct Activation {
  Act kind;
  double alpha, beta;
};

struct LstmAttrs {
  int64_t hidden = 0;
  int64_t dirs = 1;
  bool reverse = false;      // direction "reverse" (one direction, run backwards)
  bool batch_major = false;  // layout 1: X [batch, seq, input], states [batch, dirs, hidden]
  double clip = std::numeric_limits<double>::infinity();
  bool input_forget = false;
  std::vector<Activation> acts;  // f, g, h for each direction
};

LstmAttrs read_attrs(const Attributes& at) {
  LstmAttrs a;
  a.hidden = at.get_int("hidden_size");
  SG_CHECK(a.hidden >= 1) << "hidden_size must be >= 1, got " << a.hidden;
  const std::string dir = at.get_string("direction", "forward");
  SG_CHECK(dir == "forward" || dir == "reverse" || dir == "bidirectional")
      << "direction must be forward, reverse or bidirectional, got '" << dir << "'";
  a.dirs = dir == "bidirectional" ? 2 : 1;
  a.reverse = dir == "reverse";
  const int64_t layout = at.get_int("layout", 0);
  SG_CHECK(layout == 0 || layout == 1) << "layout must be 0 or 1, got " << layout;
  a.batch_major = layout == 1;
  if (at.has("clip")) {
    a.clip = at.get_float("clip");
    SG_CHECK(a.clip > 0) << "clip must be > 0, got " << a.clip;
  }
  a.input_forget = at.get_int("input_forget", 0) != 0;

  Strings names;
  if (const AttrValue* v = at.find("activations")) {
    const Strings* list = std::get_if<Strings>(v);
    SG_CHECK(list) << "attribute 'activations' must be a list of strings";
    names = *list;
  }
  if (names.empty())
    for (int64_t d = 0; d < a.dirs; ++d) names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
  SG_CHECK(static_cast<int64_t>(names.size()) == 3 * a.dirs)
      << "activations must list " << 3 * a.dirs << " functions (f, g, h per direction), got "
      << names.size();
  const Floats alphas = at.has("activation_alpha") ? at.get_floats("activation_alpha") : Floats{};
  const Floats betas = at.has("activation_beta") ? at.get_floats("activation_beta") : Floats{};
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    std::string low = name;
    for (char& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const ActSpec* spec = std::find_if(std::begin(kActs), std::end(kActs),
                                       [&](const ActSpec& s) { return low == s.name; });
    SG_CHECK(spec != std::end(kActs)) << "unknown activation '" << name << "'";
    Activation act{spec->kind, spec->alpha, spec->beta};
    if (spec->params >= 1 && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (spec->params >= 2 && next_beta < betas.size()) act.beta = betas[next_beta++];
    a.acts.push_back(act);
  }
  return a;
}

template <class T>
void apply(const Activation& a, T* x, int64_t n) {
  const T al = static_cast<T>(a.alpha), be = static_cast<T>(a.beta);
  auto each = [&](auto f) {
    for (int64_t i = 0; i < n; ++i) x[i] = f(x[i]);
  };
  switch (a.kind) {
    case Act::sigmoid:
      return each([](T v) {
        const T e = std::exp(-std::abs(v));
        return v >= 0 ? T(1) / (T(1) + e) : e / (T(1) + e);
      });
    case Act::tanh:
      return each([](T v) { return std::tanh(v); });
    case Act::relu:
      return each([](T v) { return std::max(v, T(0)); });
    case Act::hard_sigmoid:
      return each([&](T v) { return std::clamp(al * v + be, T(0), T(1)); });
    case Act::leaky_relu:
      return each([&](T v) { return v >= 0 ? v : al * v; });
    case Act::affine:
      return each([&](T v) { return al * v + be; });
    case Act::scaled_tanh:
      return each([&](T v) { return al * std::tanh(be * v); });
    case Act::elu:
      return each([&](T v) { return v >= 0 ? v : al * std::expm1(v); });
    case Act::softsign:
      return each([](T v) { return v / (T(1) + std::abs(v)); });
    case Act::softplus:
      return each([](T v) { return std::max(v, T(0)) + std::log1p(std::exp(-std::abs(v))); });
    case Act::thresholded_relu:
      return each([&](T v) { return v >= al ? v : T(0); });
  }
}

void expect_shape(const ShapeCtx& c, size_t i, const char* name, const Shape& want) {
  if (c.has(i))
    SG_CHECK(c.shape(i) == want) << name << " must have shape " << shape_str(want) << ", got "
                                 << shape_str(c.shape(i));
}

void types_lstm(TypeCtx& c) {
  c.expect_float(kX);
  for (size_t i : {kW, kR, kB, kInitH, kInitC, kP})
    if (c.has(i)) c.expect_same(kX, i);
  if (c.has(kSeqLens)) c.expect_int_index(kSeqLens);
  read_attrs(c.attrs());
  for (DType& t : c.out) t = c.in[kX];
}

void shapes_lstm(ShapeCtx& c) {
  const LstmAttrs a = read_attrs(c.attrs());
  const char* names[] = {"X", "W", "R"};
  for (size_t i : {kX, kW, kR})
    SG_CHECK(c.rank(i) == 3) << names[i] << " must have rank 3, got shape "
                             << shape_str(c.shape(i));
  const Shape& x = c.shape(kX);
  const int64_t seq = x[a.batch_major ? 1 : 0], batch = x[a.batch_major ? 0 : 1], h = a.hidden;
  expect_shape(c, kW, "W", {a.dirs, 4 * h, x[2]});
  expect_shape(c, kR, "R", {a.dirs, 4 * h, h});
  expect_shape(c, kB, "B", {a.dirs, 8 * h});
  expect_shape(c, kSeqLens, "sequence_lens", {batch});
  const Shape state = a.batch_major ? Shape{batch, a.dirs, h} : Shape{a.dirs, batch, h};
  expect_shape(c, kInitH, "initial_h", state);
  expect_shape(c, kInitC, "initial_c", state);
  expect_shape(c, kP, "P", {a.dirs, 3 * h});
  const Shape y = a.batch_major ? Shape{batch, seq, a.dirs, h} : Shape{seq, a.dirs, batch, h};
  for (size_t k = 0; k < c.out.size(); ++k) c.out[k] = k == 0 ? y : state;
}

template <class T>
void run_lstm(KernelCtx& c, const LstmAttrs& a) {
  const Shape& xs = c.in[kX].shape();
  const int64_t seq = xs[a.batch_major ? 1 : 0], batch = xs[a.batch_major ? 0 : 1];
  const int64_t input = xs[2], h = a.hidden, g4 = 4 * h, dirs = a.dirs;
  std::vector<int64_t> len(batch, seq);
  if (c.has(kSeqLens)) {
    len = c.in[kSeqLens].to_int64();
    for (int64_t l : len)
      SG_CHECK(l >= 0 && l <= seq)
          << "sequence_lens values must be in [0, " << seq << "], got " << l;
  }
  const int64_t steps = batch == 0 ? 0 : *std::max_element(len.begin(), len.end());
  // Offsets (in elements) of X's row (t, b), and of the hidden vectors of Y and of the states.
  auto x_row = [&](int64_t t, int64_t b) { return a.batch_major ? b * seq + t : t * batch + b; };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return (a.batch_major ? (b * seq + t) * dirs + d : (t * dirs + d) * batch + b) * h;
  };
  auto state_at = [&](int64_t d, int64_t b) {
    return (a.batch_major ? b * dirs + d : d * batch + b) * h;
  };
  T* y = c.out.size() > 0 ? c.out[0].data<T>() : nullptr;
  if (y) std::fill_n(y, c.out[0].numel(), T(0));  // steps past a row's length stay zero

  std::vector<T> xw(static_cast<size_t>(seq * batch * g4)), hr(batch * g4), gates(g4);
  std::vector<T> hid(batch * h), cell(batch * h), bias(g4), hc(h);
  for (int64_t d = 0; d < dirs; ++d) {
    const bool backward = a.reverse || d == 1;
    const Activation &f = a.acts[3 * d], &g = a.acts[3 * d + 1], &act_h = a.acts[3 * d + 2];
    const T* r = c.in[kR].data<T>() + d * g4 * h;
    const T* p = c.has(kP) ? c.in[kP].data<T>() + d * 3 * h : nullptr;
    gemm<T>(seq * batch, g4, input, c.in[kX].data<T>(), false, c.in[kW].data<T>() + d * g4 * input,
            true, xw.data());
    const T* wb = c.has(kB) ? c.in[kB].data<T>() + d * 2 * g4 : nullptr;
    for (int64_t j = 0; j < g4; ++j) bias[j] = wb ? wb[j] + wb[g4 + j] : T(0);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t at = state_at(d, b);
      for (int64_t j = 0; j < h; ++j) {
        hid[b * h + j] = c.has(kInitH) ? c.in[kInitH].data<T>()[at + j] : T(0);
        cell[b * h + j] = c.has(kInitC) ? c.in[kInitC].data<T>()[at + j] : T(0);
      }
    }
    const T clip = static_cast<T>(std::min<double>(a.clip, std::numeric_limits<T>::max()));
    for (int64_t s = 0; s < steps; ++s) {
      gemm<T>(batch, g4, h, hid.data(), false, r, true, hr.data());
      for (int64_t b = 0; b < batch; ++b) {
        if (s >= len[b]) continue;  // this row has finished: its state stays as it is
        const int64_t t = backward ? len[b] - 1 - s : s;
        const T* xg = xw.data() + x_row(t, b) * g4;
        const T* rg = hr.data() + b * g4;
        T* hb = hid.data() + b * h;
        T* cb = cell.data() + b * h;
        T *gi = gates.data(), *go = gi + h, *gf = go + h, *gc = gf + h;
        for (int64_t j = 0; j < g4; ++j) gates[j] = xg[j] + rg[j] + bias[j];
        if (p)
          for (int64_t j = 0; j < h; ++j) {
            gi[j] += p[j] * cb[j];
            gf[j] += p[2 * h + j] * cb[j];
          }
        for (T* q : {gi, gf, gc})
          for (int64_t j = 0; j < h; ++j) q[j] = std::clamp(q[j], -clip, clip);
        apply(f, gi, h);
        if (a.input_forget)
          for (int64_t j = 0; j < h; ++j) gf[j] = T(1) - gi[j];
        else
          apply(f, gf, h);
        apply(g, gc, h);
        for (int64_t j = 0; j < h; ++j) cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
        for (int64_t j = 0; j < h; ++j)
          go[j] = std::clamp(go[j] + (p ? p[h + j] * cb[j] : T(0)), -clip, clip);
        apply(f, go, h);
        std::copy_n(cb, h, hc.data());
        apply(act_h, hc.data(), h);
        for (int64_t j = 0; j < h; ++j) hb[j] = go[j] * hc[j];
        if (y) std::copy_n(hb, h, y + y_at(t, d, b));
      }
    }
    for (size_t k = 1; k < c.out.size(); ++k) {
      const T* src = k == 1 ? hid.data() : cell.data();
      T* dst = c.out[k].data<T>();
      for (int64_t b = 0; b < batch; ++b) {
        T* o = dst + state_at(d, b);
        if (len[b] == 0)
          std::fill_n(o, h, T(0));
        else
          std::copy_n(src + b * h, h, o);
      }
    }
  }
}

}  // namespace

extern const OpDef kLSTM;
const OpDef kLSTM{"LSTM", 3, 8, 1, 3, types_lstm, shapes_lstm, [](KernelCtx& c) {
                    const LstmAttrs a = read_attrs(c.attrs());
                    visit_float(c.in[kX].dtype(), [&]<class T>() { run_lstm<T>(c, a); });
                  }};

}  // namespace sgraph::ops
