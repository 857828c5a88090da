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
// The attributes, layouts and activations it shares with GRU and RNN are in recurrent.h.
#include <algorithm>

#include "ops/gemm_kernel.h"
#include "ops/recurrent.h"

namespace sgraph::ops {
namespace {

enum LstmInput : size_t { kInitC = kInitH + 1, kP };

struct LstmAttrs : RecurrentAttrs {
  bool input_forget = false;
};

// acts: f, g, h for each direction.
LstmAttrs read_attrs(const Attributes& at) {
  LstmAttrs a{read_recurrent_attrs(at, {"Sigmoid", "Tanh", "Tanh"})};
  a.input_forget = at.get_int("input_forget", 0) != 0;
  return a;
}

void types_lstm(TypeCtx& c) {
  types_recurrent(c, {kW, kR, kB, kInitH, kInitC, kP});
  read_attrs(c.attrs());
}

void shapes_lstm(ShapeCtx& c) {
  const LstmAttrs a = read_attrs(c.attrs());
  const Shape state = shapes_recurrent(c, a, 4);
  expect_shape(c, kInitC, "initial_c", state);
  expect_shape(c, kP, "P", {a.dirs, 3 * a.hidden});
}

template <class T>
void run_lstm(KernelCtx& c, const LstmAttrs& a) {
  const SeqLayout l(c.in[kX].shape(), a);
  const int64_t seq = l.seq, batch = l.batch;
  const int64_t input = c.in[kX].dim(2), h = a.hidden, g4 = 4 * h, dirs = a.dirs;
  const std::vector<int64_t> len = sequence_lengths(c, l);
  const int64_t steps = batch == 0 ? 0 : *std::max_element(len.begin(), len.end());
  T* y = c.out.size() > 0 ? c.out[0].data<T>() : nullptr;
  if (y) std::fill_n(y, c.out[0].numel(), T(0));  // steps past a row's length stay zero

  // One block for the step's scratch: X·W^T for every step, H·R^T, a row's gates, the state, the
  // biases and h(C_t).
  std::vector<T> scratch(static_cast<size_t>((seq * batch + batch + 2) * g4 + 2 * batch * h + h));
  T* xw = scratch.data();
  T* hr = xw + seq * batch * g4;
  T* gates = hr + batch * g4;
  T* hid = gates + g4;
  T* cell = hid + batch * h;
  T* bias = cell + batch * h;
  T* hc = bias + g4;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool backward = a.reverse || d == 1;
    const Activation &f = a.acts[3 * d], &g = a.acts[3 * d + 1], &act_h = a.acts[3 * d + 2];
    const T* r = c.in[kR].data<T>() + d * g4 * h;
    const T* p = c.has(kP) ? c.in[kP].data<T>() + d * 3 * h : nullptr;
    gemm<T>(seq * batch, g4, input, c.in[kX].data<T>(), false, c.in[kW].data<T>() + d * g4 * input,
            true, xw);
    const T* wb = c.has(kB) ? c.in[kB].data<T>() + d * 2 * g4 : nullptr;
    for (int64_t j = 0; j < g4; ++j) bias[j] = wb ? wb[j] + wb[g4 + j] : T(0);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t at = l.state_at(d, b);
      for (int64_t j = 0; j < h; ++j) {
        hid[b * h + j] = c.has(kInitH) ? c.in[kInitH].data<T>()[at + j] : T(0);
        cell[b * h + j] = c.has(kInitC) ? c.in[kInitC].data<T>()[at + j] : T(0);
      }
    }
    const T clip = clip_bound<T>(a);
    for (int64_t s = 0; s < steps; ++s) {
      gemm<T>(batch, g4, h, hid, false, r, true, hr);
      for (int64_t b = 0; b < batch; ++b) {
        if (s >= len[b]) continue;  // this row has finished: its state stays as it is
        const int64_t t = backward ? len[b] - 1 - s : s;
        const T* xg = xw + l.x_row(t, b) * g4;
        const T* rg = hr + b * g4;
        T* hb = hid + b * h;
        T* cb = cell + b * h;
        T *gi = gates, *go = gi + h, *gf = go + h, *gc = gf + h;
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
        std::copy_n(cb, h, hc);
        apply(act_h, hc, h);
        for (int64_t j = 0; j < h; ++j) hb[j] = go[j] * hc[j];
        if (y) std::copy_n(hb, h, y + l.y_at(t, d, b));
      }
    }
    for (size_t k = 1; k < c.out.size(); ++k) {
      const T* src = k == 1 ? hid : cell;
      T* dst = c.out[k].data<T>();
      for (int64_t b = 0; b < batch; ++b) {
        T* o = dst + l.state_at(d, b);
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
