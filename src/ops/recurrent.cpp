// The attribute decoding, type and shape rules LSTM, GRU and RNN share (see recurrent.h).
#include "ops/recurrent.h"

#include <Eigen/Core>
#include <algorithm>
#include <cctype>

#include "ops/int_math.h"

namespace sgraph::ops {
namespace {

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

// out = f(in) over x[0 .. n) in blocks, through a buffer; where x is NaN it stays NaN (Eigen's
// vector exp and tanh clamp their argument first, which can turn a NaN into a number).
template <class F>
void map_f32(float* x, int64_t n, F f) {
  constexpr int64_t kBlock = 256;
  alignas(64) float y[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t m = std::min(kBlock, n - i);
    Eigen::Map<Eigen::ArrayXf> out(y, m);
    f(out, Eigen::Map<const Eigen::ArrayXf>(x + i, m));
    for (int64_t j = 0; j < m; ++j) x[i + j] = x[i + j] != x[i + j] ? x[i + j] : y[j];
  }
}

}  // namespace

void sigmoid_f32(float* x, int64_t n) {
  // 1 / (1 + e^-x) on Eigen's vector exp: its logistic() is e^x below -9, off by e^x relatively.
  map_f32(x, n, [](auto& out, const auto& in) { out = (1.0f + (-in).exp()).inverse(); });
}

void tanh_f32(float* x, int64_t n) {
  map_f32(x, n, [](auto& out, const auto& in) { out = in.tanh(); });
}

RecurrentAttrs read_recurrent_attrs(const Attributes& at,
                                    std::initializer_list<const char*> defaults) {
  RecurrentAttrs a;
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

  Strings names;
  if (const AttrValue* v = at.find("activations")) {
    const Strings* list = std::get_if<Strings>(v);
    SG_CHECK(list) << "attribute 'activations' must be a list of strings";
    names = *list;
  }
  const int64_t per_dir = static_cast<int64_t>(defaults.size());
  if (names.empty())
    for (int64_t d = 0; d < a.dirs; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  SG_CHECK(static_cast<int64_t>(names.size()) == per_dir * a.dirs)
      << "activations must list " << per_dir * a.dirs << " functions (" << per_dir
      << " per direction), got " << names.size();
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

void types_recurrent(TypeCtx& c, std::initializer_list<size_t> same_as_x) {
  c.expect_float(kX);
  for (size_t i : same_as_x)
    if (c.has(i)) c.expect_same(kX, i);
  if (c.has(kSeqLens)) c.expect_int_index(kSeqLens);
  for (DType& t : c.out) t = c.in[kX];
}

void expect_shape(const ShapeCtx& c, size_t i, const char* name, const Shape& want) {
  if (c.has(i))
    SG_CHECK(c.shape(i) == want) << name << " must have shape " << shape_str(want) << ", got "
                                 << shape_str(c.shape(i));
}

Shape shapes_recurrent(ShapeCtx& c, const RecurrentAttrs& a, int64_t gates) {
  const char* names[] = {"X", "W", "R"};
  for (size_t i : {kX, kW, kR})
    SG_CHECK(c.rank(i) == 3) << names[i] << " must have rank 3, got shape "
                             << shape_str(c.shape(i));
  const Shape& x = c.shape(kX);
  const int64_t seq = x[a.batch_major ? 1 : 0], batch = x[a.batch_major ? 0 : 1], h = a.hidden;
  const int64_t gh = checked_mul(gates, h, "hidden_size"), bias = checked_mul(2, gh, "hidden_size");
  expect_shape(c, kW, "W", {a.dirs, gh, x[2]});
  expect_shape(c, kR, "R", {a.dirs, gh, h});
  expect_shape(c, kB, "B", {a.dirs, bias});
  expect_shape(c, kSeqLens, "sequence_lens", {batch});
  const Shape state = a.batch_major ? Shape{batch, a.dirs, h} : Shape{a.dirs, batch, h};
  expect_shape(c, kInitH, "initial_h", state);
  const Shape y = a.batch_major ? Shape{batch, seq, a.dirs, h} : Shape{seq, a.dirs, batch, h};
  for (size_t k = 0; k < c.out.size(); ++k) c.out[k] = k == 0 ? y : state;
  return state;
}

std::vector<int64_t> sequence_lengths(const KernelCtx& c, const SeqLayout& l) {
  if (!c.has(kSeqLens)) return std::vector<int64_t>(l.batch, l.seq);
  std::vector<int64_t> len = c.in[kSeqLens].to_int64();
  for (int64_t n : len)
    SG_CHECK(n >= 0 && n <= l.seq)
        << "sequence_lens values must be in [0, " << l.seq << "], got " << n;
  return len;
}

}  // namespace sgraph::ops
