// Gradient checks for tests: the analytic gradients append_gradients builds against central
// finite differences in f64, on static and symbolic input dims.
#pragma once

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace sgraph::test {

// An f64 tensor of `shape` with values uniform in [lo, hi], the sign flipped at random when
// `signs` (values bounded away from 0 for Relu and Div).
inline Tensor uniform(Shape shape, uint32_t seed, double lo = -1, double hi = 1,
                      bool signs = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  Tensor t(DType::f64, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<double>()[i] = d(rng) * (signs && (rng() & 1) ? -1 : 1);
  return t;
}

// Graph inputs for `inputs`: static dims, or each dim above 1 symbolic ("s3" for a 3: equal
// sizes share a symbol, so broadcasting still infers); with `only`, just the dims of that size.
inline std::vector<ValueId> declare(GraphBuilder& b, const std::vector<Tensor>& inputs,
                                    bool symbolic, int64_t only = 0) {
  std::vector<ValueId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    DimList dims;
    for (int64_t d : inputs[i].shape())
      dims.push_back(symbolic && d > 1 && (only == 0 || d == only) ? Dim("s" + std::to_string(d))
                                                                   : Dim(d));
    ids.push_back(b.input("in" + std::to_string(i), inputs[i].dtype(), dims));
  }
  return ids;
}

using Build = std::function<ValueId(GraphBuilder&, const std::vector<ValueId>&)>;

// The scalar sum(f(inputs) * r) for a random r of f's output shape (an input after `inputs`,
// declared like them), as a graph; its outputs are the loss and the gradients of the inputs
// `wrt` marks (none: the forward graph only).
inline Graph loss_graph(const std::vector<Tensor>& inputs, const Build& f, const Tensor& r,
                        bool symbolic, const std::vector<bool>& wrt, int64_t only = 0) {
  GraphBuilder b("grad_check");
  std::vector<Tensor> all = inputs;
  all.push_back(r);
  std::vector<ValueId> in = declare(b, all, symbolic, only);
  const ValueId weights = in.back();
  in.pop_back();
  ValueId y = f(b, in);
  if (b.graph().values[y].dtype != DType::f64) y = b.cast(y, Attributes{{"to", int64_t{11}}});
  const ValueId loss = b.reduce_sum(b.mul(y, weights), Attributes{{"keepdims", int64_t{0}}});
  b.output(loss, "loss");
  std::vector<ValueId> ids;
  for (size_t i = 0; i < wrt.size(); ++i)
    if (wrt[i]) ids.push_back(in[i]);
  if (!ids.empty())
    for (ValueId g : append_gradients(b, loss, ids)) b.output(g);
  return b.build();
}

struct Check {
  bool symbolic = true;       // also with symbolic input dims (where shape inference can follow f)
  int64_t symbolic_only = 0;  // > 0: only dims of this size turn symbolic (a batch size unlike
                              // every other dim)
  bool jit = false;           // also the backward graph compiled, against the interpreter
  double h = 1e-5, tol = 1e-6;
  std::vector<size_t> wrt = {};  // the inputs differentiated; empty: every f64 input
};

// Checks the analytic gradient of every f64 input against central differences, with static and
// (unless shape inference cannot follow f) symbolic input dims.
inline void check_gradients(const std::vector<Tensor>& inputs, const Build& f, Check opt = {}) {
  const double h = opt.h, tol = opt.tol;
  std::vector<bool> wrt(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i)
    wrt[i] = opt.wrt.empty() ? inputs[i].dtype() == DType::f64
                             : std::count(opt.wrt.begin(), opt.wrt.end(), i) > 0;
  const SessionOptions interpret{.interpret_only = true};
  // f's output shape, from one forward run.
  GraphBuilder fb("forward");
  const std::vector<ValueId> fin = declare(fb, inputs, false);
  fb.output(f(fb, fin));
  const Tensor out = Session(fb.build(), interpret).run(inputs)[0];
  const Tensor r = uniform(out.shape(), 99);

  for (bool symbolic : {false, true}) {
    if (symbolic && !opt.symbolic) continue;
    CAPTURE(symbolic);
    Session forward(loss_graph(inputs, f, r, symbolic, {}, opt.symbolic_only), interpret);
    Session backward(loss_graph(inputs, f, r, symbolic, wrt, opt.symbolic_only), interpret);
    std::vector<Tensor> feed = inputs;
    feed.push_back(r);
    const std::vector<Tensor> got = backward.run(feed);
    size_t k = 1;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!wrt[i]) continue;
      CAPTURE(i);
      const Tensor& g = got.at(k++);
      REQUIRE(g.shape() == inputs[i].shape());
      for (int64_t e = 0; e < inputs[i].numel(); ++e) {
        std::vector<Tensor> plus = feed, minus = feed;
        plus[i] = inputs[i].clone();
        minus[i] = inputs[i].clone();
        plus[i].data<double>()[e] += h;
        minus[i].data<double>()[e] -= h;
        const double numeric =
            (forward.run(plus)[0].at_double(0) - forward.run(minus)[0].at_double(0)) / (2 * h);
        CHECK_MESSAGE(
            std::abs(g.at_double(e) - numeric) <= tol * (1 + std::abs(numeric)),
            "element " << e << ": analytic " << g.at_double(e) << ", numeric " << numeric);
      }
    }
    if (opt.jit && !symbolic) {  // the backward graph compiled: the interpreter's gradients
      Session compiled(loss_graph(inputs, f, r, symbolic, wrt), SessionOptions{.warmup_runs = 1});
      compiled.run(feed);
      const std::vector<Tensor> fused = compiled.run(feed);
      const Report rep = compiled.report();
      CHECK(std::any_of(rep.regions.begin(), rep.regions.end(),
                        [](const RegionReport& rr) { return rr.compiled && rr.kernel_calls > 0; }));
      for (size_t o = 0; o < got.size(); ++o)
        check_close(fused[o], got[o].shape(), values(got[o]), 1e-9, 1e-9);
    }
  }
}

}  // namespace sgraph::test
