// GRU and RNN (ONNX opsets 7 and 14): one-layer recurrences run forward, reverse or both ways,
// with LSTM's inputs, attributes, layouts and sequence_lens reading (recurrent.h, lstm.cpp).
//
// RNN: W [dirs, h, input], R [dirs, h, h], B [dirs, 2h] (Wb, Rb); activation f (default Tanh):
//   H_t = f(X_t·W^T + H_{t-1}·R^T + Wb + Rb)
// GRU: gates stored z, r, h in W [dirs, 3h, input], R [dirs, 3h, h], B [dirs, 6h] (Wb, Rb);
// activations f, g (default Sigmoid, Tanh):
//   z = f(Xz + Hz)   r = f(Xr + Hr)     (X? = X_t·W?^T + Wb?, H? = H_{t-1}·R?^T + Rb?)
//   c = g(Xh + (r*H_{t-1})·Rh^T + Rbh)  (linear_before_reset = 0)
//   c = g(Xh + r*(H_{t-1}·Rh^T + Rbh))  (linear_before_reset = 1)
//   H_t = (1 - z)*c + z*H_{t-1}
// `clip` bounds every pre-activation. Per direction, X·W^T for every time step is one GEMM before
// the time loop, and each step's H_{t-1}·R^T one more. A batch row with sequence_lens[b] = L runs
// L steps (the reverse direction from step L-1 down to 0): its Y is zero past L and Y_h holds its
// state after the last step (zero when L = 0).
#include <algorithm>

#include "ops/gemm_kernel.h"
#include "ops/recurrent.h"

namespace sgraph::ops {
namespace {

// What both ops' kernels need, per direction: the initial state, and where the results go.
template <class T>
struct Run {
  KernelCtx& c;
  const RecurrentAttrs& a;
  SeqLayout l;
  std::vector<int64_t> len;
  int64_t steps;
  T* y;

  Run(KernelCtx& ctx, const RecurrentAttrs& attrs)
      : c(ctx), a(attrs), l(ctx.in[kX].shape(), attrs), len(sequence_lengths(ctx, l)) {
    steps = l.batch == 0 ? 0 : *std::max_element(len.begin(), len.end());
    y = c.out.size() > 0 ? c.out[0].data<T>() : nullptr;
    if (y) std::fill_n(y, c.out[0].numel(), T(0));  // steps past a row's length stay zero
  }
  // The bias of gate block `k` (of `gates`) of direction d: Wb, or Rb when `rec`; 0 when absent.
  std::vector<T> bias(int64_t d, int64_t gates, int64_t k, bool rec) const {
    const int64_t h = a.hidden;
    std::vector<T> out(h, T(0));
    if (c.has(kB)) {
      const T* p = c.in[kB].data<T>() + d * 2 * gates * h + (rec ? gates * h : 0) + k * h;
      std::copy_n(p, h, out.data());
    }
    return out;
  }
  std::vector<T> initial_state(int64_t d) const {
    std::vector<T> hid(l.batch * a.hidden, T(0));
    if (c.has(kInitH))
      for (int64_t b = 0; b < l.batch; ++b)
        std::copy_n(c.in[kInitH].data<T>() + l.state_at(d, b), a.hidden, hid.data() + b * a.hidden);
    return hid;
  }
  // X·W^T for every (time, batch) row of direction d: [rows, gates*h].
  std::vector<T> input_projection(int64_t d, int64_t gates) const {
    const int64_t input = c.in[kX].dim(2), gh = gates * a.hidden;
    std::vector<T> xw(static_cast<size_t>(l.seq * l.batch * gh));
    gemm<T>(l.seq * l.batch, gh, input, c.in[kX].data<T>(), false,
            c.in[kW].data<T>() + d * gh * input, true, xw.data());
    return xw;
  }
  // The time step of row b at step s of direction d.
  int64_t time(int64_t d, int64_t b, int64_t s) const {
    return a.reverse || d == 1 ? len[b] - 1 - s : s;
  }
  void finish(int64_t d, const std::vector<T>& hid) {
    if (c.out.size() < 2) return;
    for (int64_t b = 0; b < l.batch; ++b) {
      T* o = c.out[1].data<T>() + l.state_at(d, b);
      if (len[b] == 0)
        std::fill_n(o, a.hidden, T(0));
      else
        std::copy_n(hid.data() + b * a.hidden, a.hidden, o);
    }
  }
};

template <class T>
void clip_all(T* x, int64_t n, T bound) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::clamp(x[i], -bound, bound);
}

// ---- RNN

template <class T>
void run_rnn(KernelCtx& c, const RecurrentAttrs& a) {
  Run<T> run(c, a);
  const int64_t batch = run.l.batch, h = a.hidden;
  const T clip = clip_bound<T>(a);
  std::vector<T> hr(batch * h);
  for (int64_t d = 0; d < a.dirs; ++d) {
    const std::vector<T> xw = run.input_projection(d, 1), wb = run.bias(d, 1, 0, false),
                         rb = run.bias(d, 1, 0, true);
    const T* r = c.in[kR].data<T>() + d * h * h;
    std::vector<T> hid = run.initial_state(d);
    for (int64_t s = 0; s < run.steps; ++s) {
      gemm<T>(batch, h, h, hid.data(), false, r, true, hr.data());
      for (int64_t b = 0; b < batch; ++b) {
        if (s >= run.len[b]) continue;  // this row has finished: its state stays as it is
        const int64_t t = run.time(d, b, s);
        const T* xg = xw.data() + run.l.x_row(t, b) * h;
        T* hb = hid.data() + b * h;
        for (int64_t j = 0; j < h; ++j) hb[j] = xg[j] + hr[b * h + j] + wb[j] + rb[j];
        clip_all(hb, h, clip);
        apply(a.acts[d], hb, h);
        if (run.y) std::copy_n(hb, h, run.y + run.l.y_at(t, d, b));
      }
    }
    run.finish(d, hid);
  }
}

// ---- GRU

template <class T>
void run_gru(KernelCtx& c, const RecurrentAttrs& a, bool linear_before_reset) {
  Run<T> run(c, a);
  const int64_t batch = run.l.batch, h = a.hidden, g3 = 3 * h;
  const T clip = clip_bound<T>(a);
  // Per batch row: H·R^T (z, r, h blocks), the gates z and r, and the candidate's recurrent term.
  std::vector<T> hr(batch * g3), z(batch * h), rs(batch * h), rh(batch * h), cand(batch * h);
  for (int64_t d = 0; d < a.dirs; ++d) {
    const Activation &f = a.acts[2 * d], &g = a.acts[2 * d + 1];
    const std::vector<T> xw = run.input_projection(d, 3);
    std::vector<T> wb[3], rb[3];
    for (int64_t k = 0; k < 3; ++k) {
      wb[k] = run.bias(d, 3, k, false);
      rb[k] = run.bias(d, 3, k, true);
    }
    const T* r = c.in[kR].data<T>() + d * g3 * h;
    std::vector<T> hid = run.initial_state(d);
    auto active = [&](int64_t b, int64_t s) { return s < run.len[b]; };
    for (int64_t s = 0; s < run.steps; ++s) {
      gemm<T>(batch, g3, h, hid.data(), false, r, true, hr.data());
      for (int64_t b = 0; b < batch; ++b) {
        if (!active(b, s)) continue;
        const T* xg = xw.data() + run.l.x_row(run.time(d, b, s), b) * g3;
        const T* hg = hr.data() + b * g3;
        T *zb = z.data() + b * h, *rt = rs.data() + b * h;
        for (int64_t j = 0; j < h; ++j) {
          zb[j] = xg[j] + hg[j] + wb[0][j] + rb[0][j];
          rt[j] = xg[h + j] + hg[h + j] + wb[1][j] + rb[1][j];
        }
        clip_all(zb, h, clip);
        clip_all(rt, h, clip);
        apply(f, zb, h);
        apply(f, rt, h);
        for (int64_t j = 0; j < h; ++j) {
          if (linear_before_reset)
            cand[b * h + j] = rt[j] * (hg[2 * h + j] + rb[2][j]);
          else
            rh[b * h + j] = rt[j] * hid[b * h + j];
        }
      }
      if (!linear_before_reset) {  // (r*H)·Rh^T + Rbh; finished rows compute unused values
        gemm<T>(batch, h, h, rh.data(), false, r + 2 * h * h, true, cand.data());
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t j = 0; j < h; ++j) cand[b * h + j] += rb[2][j];
      }
      for (int64_t b = 0; b < batch; ++b) {
        if (!active(b, s)) continue;
        const int64_t t = run.time(d, b, s);
        const T* xg = xw.data() + run.l.x_row(t, b) * g3;
        T* cb = cand.data() + b * h;
        for (int64_t j = 0; j < h; ++j) cb[j] += xg[2 * h + j] + wb[2][j];
        clip_all(cb, h, clip);
        apply(g, cb, h);
        T *hb = hid.data() + b * h, *zb = z.data() + b * h;
        for (int64_t j = 0; j < h; ++j) hb[j] = (T(1) - zb[j]) * cb[j] + zb[j] * hb[j];
        if (run.y) std::copy_n(hb, h, run.y + run.l.y_at(t, d, b));
      }
    }
    run.finish(d, hid);
  }
}

// acts: f for each direction.
RecurrentAttrs rnn_attrs(const Attributes& at) { return read_recurrent_attrs(at, {"Tanh"}); }
// acts: f, g for each direction.
RecurrentAttrs gru_attrs(const Attributes& at) {
  return read_recurrent_attrs(at, {"Sigmoid", "Tanh"});
}

}  // namespace

extern const OpDef kGRU, kRNN;
const OpDef kGRU{"GRU",
                 3,
                 6,
                 1,
                 2,
                 [](TypeCtx& c) {
                   types_recurrent(c, {kW, kR, kB, kInitH});
                   gru_attrs(c.attrs());
                 },
                 [](ShapeCtx& c) { shapes_recurrent(c, gru_attrs(c.attrs()), 3); },
                 [](KernelCtx& c) {
                   const RecurrentAttrs a = gru_attrs(c.attrs());
                   const bool lbr = c.attrs().get_int("linear_before_reset", 0) != 0;
                   visit_float(c.in[kX].dtype(), [&]<class T>() { run_gru<T>(c, a, lbr); });
                 }};
const OpDef kRNN{"RNN",
                 3,
                 6,
                 1,
                 2,
                 [](TypeCtx& c) {
                   types_recurrent(c, {kW, kR, kB, kInitH});
                   rnn_attrs(c.attrs());
                 },
                 [](ShapeCtx& c) { shapes_recurrent(c, rnn_attrs(c.attrs()), 1); },
                 [](KernelCtx& c) {
                   const RecurrentAttrs a = rnn_attrs(c.attrs());
                   visit_float(c.in[kX].dtype(), [&]<class T>() { run_rnn<T>(c, a); });
                 }};

}  // namespace sgraph::ops
