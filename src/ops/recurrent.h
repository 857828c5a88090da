// What LSTM, GRU and RNN share: their attributes (hidden_size, direction, layout, clip, and the
// activations with their alpha / beta), the activation functions, the layouts of X, Y and the
// states, sequence_lens, and the shape rule of inputs X, W, R, B, sequence_lens, initial_h.
#pragma once

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/op.h"

namespace sgraph::ops {

// The inputs every recurrent op takes first.
enum RecurrentInput : size_t { kX, kW, kR, kB, kSeqLens, kInitH };

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

struct Activation {
  Act kind;
  double alpha, beta;
};

struct RecurrentAttrs {
  int64_t hidden = 0;
  int64_t dirs = 1;
  bool reverse = false;      // direction "reverse" (one direction, run backwards)
  bool batch_major = false;  // layout 1: X [batch, seq, input], states [batch, dirs, hidden]
  double clip = std::numeric_limits<double>::infinity();
  std::vector<Activation> acts;  // the op's functions for each direction, in order
};

// Reads the attributes; `defaults` are one direction's activations when `activations` is absent
// (which then must list defaults.size() functions per direction).
RecurrentAttrs read_recurrent_attrs(const Attributes& at,
                                    std::initializer_list<const char*> defaults);

// The type rule: X float, W, R, B and the states X's dtype, sequence_lens i32 or i64; every output
// X's dtype.
void types_recurrent(TypeCtx& c, std::initializer_list<size_t> same_as_x);

// Checks that input i, when present, has shape `want`.
void expect_shape(const ShapeCtx& c, size_t i, const char* name, const Shape& want);

// The shape rule of X, W [dirs, gates*h, input], R [dirs, gates*h, h], B [dirs, 2*gates*h],
// sequence_lens [batch] and initial_h; sets Y and every state output. Returns the state shape.
Shape shapes_recurrent(ShapeCtx& c, const RecurrentAttrs& a, int64_t gates);

// Where things are in X, Y and the states, in elements.
struct SeqLayout {
  int64_t seq, batch, dirs, h;
  bool batch_major;
  SeqLayout(const Shape& x, const RecurrentAttrs& a)
      : seq(x[a.batch_major ? 1 : 0]),
        batch(x[a.batch_major ? 0 : 1]),
        dirs(a.dirs),
        h(a.hidden),
        batch_major(a.batch_major) {}
  int64_t x_row(int64_t t, int64_t b) const { return batch_major ? b * seq + t : t * batch + b; }
  int64_t y_at(int64_t t, int64_t d, int64_t b) const {
    return (batch_major ? (b * seq + t) * dirs + d : (t * dirs + d) * batch + b) * h;
  }
  int64_t state_at(int64_t d, int64_t b) const {
    return (batch_major ? b * dirs + d : d * batch + b) * h;
  }
};

// Each batch row's length: sequence_lens, checked to be in [0, seq], or seq for every row.
std::vector<int64_t> sequence_lengths(const KernelCtx& c, const SeqLayout& l);

// Sigmoid and Tanh of x[0 .. n) in place, vectorised (Eigen's vector exp and its rational tanh,
// within a few float ulps of <cmath>; a NaN stays NaN). An LSTM's or GRU's gates spent most of
// their time in scalar expf / tanhf calls.
void sigmoid_f32(float* x, int64_t n);
void tanh_f32(float* x, int64_t n);

// Applies activation `a` to x[0 .. n).
template <class T>
void apply(const Activation& a, T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (a.kind == Act::sigmoid) return sigmoid_f32(x, n);
    if (a.kind == Act::tanh) return tanh_f32(x, n);
  }
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

// `clip` as a T bound (infinity, the attribute's absence, stays out of the way).
template <class T>
T clip_bound(const RecurrentAttrs& a) {
  return static_cast<T>(std::min<double>(a.clip, std::numeric_limits<T>::max()));
}

}  // namespace sgraph::ops
