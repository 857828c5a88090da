// Differential fuzzing of the JIT: random graphs of compilable ops (with the odd interpreted op
// that splits regions) run in a Session that compiles every region, compared with the
// interpreter on the same inputs. Each graph is made from its own seed (kSeed + graph index), so
// a failure names the seed and prints the graph (SGRAPH_FUZZ_GRAPHS and SGRAPH_FUZZ_SEED override
// the count and the first seed; see fuzz_util.h). Served at the warm-up's shapes; the serving
// fuzzer (test_jit_fuzz_serving.cpp) serves other shapes.
//
// Values are kept where the ops are well conditioned, so that the few-ulp differences between
// libm and libmvec cannot grow past the tolerance: divisors are |x| + 1, Pow's base is |x| + 0.5
// with small exponents, Exp's argument is clipped, Log's is |x| + 1, and a value whose magnitude
// may exceed kBound is clipped before another op uses it. Where's condition compares values that
// both sides compute bit for bit (inputs, constants, and values made from them by IEEE-exact
// ops), so that rounding cannot flip a branch.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "jit/fuzz_util.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::fuzz;

namespace {

constexpr uint32_t kSeed = 20240611;
constexpr int kGraphs = 600;          // by default (SGRAPH_FUZZ_GRAPHS)
constexpr double kBound = 8;          // larger magnitudes are clipped before further use
constexpr int64_t kMaxNumel = 20000;  // Expand stops growing values past this
constexpr int64_t kDims[] = {1, 2, 3, 7, 13};

struct Val {
  ValueId id;
  Shape shape;
  double bound;  // an upper bound of |element|
  bool exact;    // computed bit for bit alike by the interpreter and the JIT
  bool node;     // made by a node (not an input or a constant)
};

class GraphGen {
 public:
  explicit GraphGen(uint32_t seed) : rng_(seed), b_("fuzz_" + std::to_string(seed)) {}

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  float uniform_f(float lo, float hi) {
    return std::uniform_real_distribution<float>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <class T>
  const T& one_of(const std::vector<T>& v) {
    return v[uniform(0, static_cast<int>(v.size()) - 1)];
  }

  // A shape derived from the base: leading dims dropped, random dims set to 1.
  Shape derived(const Shape& base) {
    const int drop = chance(0.5) ? uniform(0, static_cast<int>(base.size())) : 0;
    Shape s(base.begin() + drop, base.end());
    for (int64_t& d : s)
      if (chance(0.25)) d = 1;
    return s;
  }

  void make() {
    Shape base(uniform(0, 4));
    for (int64_t& d : base) d = kDims[uniform(0, 4)];
    const int inputs = uniform(1, 3);
    for (int i = 0; i < inputs; ++i) {
      const Shape s = i == 0 ? base : derived(base);
      vals_.push_back(
          {b_.input("x" + std::to_string(i), DType::f32, to_dims(s)), s, 2, true, false});
      input_shapes.push_back(s);
    }
    for (int i = uniform(0, 2); i > 0; --i) {
      const Shape s = chance(0.5) ? Shape{} : derived(base);
      Tensor t = test::random_f32(s, static_cast<uint32_t>(rng_()), -1, 1);
      vals_.push_back({b_.constant("c" + std::to_string(i), std::move(t)), s, 1, true, false});
    }
    const int nodes = uniform(2, 12);
    for (int i = 0; i < nodes; ++i) add_node();
    // Outputs: the last node's value and up to two more node values, no duplicates.
    std::vector<ValueId> outs = {vals_.back().id};
    b_.output(vals_.back().id);
    for (int i = uniform(0, 2); i > 0; --i) {
      const Val& v = vals_[uniform(0, static_cast<int>(vals_.size()) - 1)];
      if (!v.node || std::find(outs.begin(), outs.end(), v.id) != outs.end()) continue;
      outs.push_back(v.id);
      b_.output(v.id);
    }
    graph = b_.build();
  }

  std::vector<Tensor> feeds() {
    std::vector<Tensor> f;
    for (const Shape& s : input_shapes)
      f.push_back(test::random_f32(s, static_cast<uint32_t>(rng_()), -2, 2));
    return f;
  }

  Graph graph;
  std::vector<Shape> input_shapes;
  int noncompilable = 0;
  int arg_ops = 0;     // ArgMax/ArgMin nodes
  int cumsum_ops = 0;  // CumSum nodes
  int mod_ops = 0;     // Mod nodes

 private:
  // A value to use, recent ones more likely (so chains get deep).
  Val pick() {
    if (chance(0.5)) return vals_[std::max(0, static_cast<int>(vals_.size()) - uniform(1, 3))];
    return one_of(vals_);
  }
  // A value broadcasting with `s` (one always exists: a scalar constant if nothing else).
  Val pick_compatible(const Shape& s, bool want_exact = false) {
    std::vector<Val> c;
    for (const Val& v : vals_)
      if (broadcast(v.shape, s, nullptr) && (!want_exact || v.exact)) c.push_back(v);
    if (c.empty()) return scalar(uniform_f(-1, 1));
    if (chance(0.4)) {  // prefer the most recent
      return c.back();
    }
    return one_of(c);
  }
  Val scalar(float x) { return {b_.scalar(x), {}, std::abs(x), true, false}; }

  // v, clipped to [-kBound, kBound] when it may be larger.
  Val tame(const Val& v) {
    if (v.bound <= kBound) return v;
    return clip(v, -kBound, kBound);
  }
  Val clip(const Val& v, float lo, float hi) {
    return {b_.clip(v.id, b_.scalar(lo), b_.scalar(hi)), v.shape,
            std::min<double>(v.bound, std::max(-lo, hi)), v.exact, true};
  }
  Val made(ValueId id, Shape s, double bound, bool exact) {
    return {id, std::move(s), bound, exact, true};
  }
  // |v| + c, built from ops.
  Val abs_plus(const Val& v, float c) {
    const ValueId id = b_.add(b_.abs(v.id), b_.scalar(c));
    return made(id, v.shape, v.bound + c, v.exact);
  }

  void add_node() {
    const int kind = uniform(0, 99);
    Val r;
    if (kind < 36)
      r = binary();
    else if (kind < 62)
      r = unary();
    else if (kind < 68)
      r = cnn_op();
    else if (kind < 80)
      r = index_op();
    else if (kind < 88)
      r = movement();
    else if (kind < 96)
      r = reduction();
    else
      r = chance(0.5) ? contraction() : interpreted();
    vals_.push_back(r);
  }

  Val binary() {
    const Val a = tame(pick());
    const Val b = tame(pick_compatible(a.shape));
    Shape s;
    broadcast(a.shape, b.shape, &s);
    const bool exact = a.exact && b.exact;
    switch (uniform(0, 7)) {
      case 0:
        return made(b_.add(a.id, b.id), s, a.bound + b.bound, exact);
      case 1:
        return made(b_.sub(a.id, b.id), s, a.bound + b.bound, exact);
      case 2:
        return made(b_.mul(a.id, b.id), s, a.bound * b.bound, exact);
      case 3:
        return made(b_.div(a.id, abs_plus(b, 1).id), s, a.bound, exact);
      case 4:
        return made(b_.max(a.id, b.id), s, std::max(a.bound, b.bound), exact);
      case 5:
        return made(b_.min(a.id, b.id), s, std::max(a.bound, b.bound), exact);
      case 6: {  // (|a| + 0.5) ^ e, e a small constant or a value clipped to [-2, 2]
        const Val base = abs_plus(a, 0.5f);
        const Val e = chance(0.5) ? scalar(one_of(std::vector<float>{-1, 0.5f, 1.5f, 2, 0.3f}))
                                  : clip(b, -2, 2);
        const double bound = std::max(std::pow(base.bound, 2.0), 4.0);
        broadcast(base.shape, e.shape, &s);
        return made(b_.pow(base.id, e.id), s, bound, false);
      }
      default: {  // Where(p > q, a, b), p and q exact
        const Val p = pick_compatible(s, true);
        Shape ps;
        broadcast(s, p.shape, &ps);
        const Val q = chance(0.5) ? scalar(uniform_f(-0.5f, 0.5f)) : pick_compatible(ps, true);
        broadcast(ps, q.shape, &ps);
        const ValueId cond = chance(0.5) ? b_.greater(p.id, q.id) : b_.less(p.id, q.id);
        return made(b_.where(cond, a.id, b.id), ps, std::max(a.bound, b.bound), exact);
      }
    }
  }

  Val unary() {
    const Val x = pick();
    const Shape& s = x.shape;
    switch (uniform(0, 12)) {
      case 0:
        return made(b_.neg(x.id), s, x.bound, x.exact);
      case 1:
        return made(b_.abs(x.id), s, x.bound, x.exact);
      case 2:
        return made(b_.relu(x.id), s, x.bound, x.exact);
      case 3: {
        const Attributes a = {{"alpha", static_cast<double>(uniform_f(0.01f, 0.5f))}};
        return made(b_.leaky_relu(x.id, a), s, x.bound, false);
      }
      case 4:
        return made(b_.sigmoid(x.id), s, 1, false);
      case 5:
        return made(b_.tanh(x.id), s, 1, false);
      case 6: {
        const Val c = clip(x, -10, 10);
        return made(b_.exp(c.id), s, std::exp(c.bound), false);
      }
      case 7: {
        const Val p = abs_plus(x, 1);
        return made(b_.log(p.id), s, std::log(p.bound), false);
      }
      case 8:
        return made(b_.sqrt(b_.abs(x.id)), s, std::sqrt(x.bound), false);
      case 9:
        return made(b_.erf(x.id), s, 1, false);
      case 10:
        return made(b_.softsign(x.id), s, 1, false);
      case 11: {
        const Attributes a = {{"alpha", static_cast<double>(uniform_f(0.1f, 0.5f))},
                              {"beta", static_cast<double>(uniform_f(0.2f, 0.8f))}};
        return made(b_.hard_sigmoid(x.id, a), s, 1, false);
      }
      default:
        return clip(x, uniform_f(-2, 0), uniform_f(0, 2));
    }
  }

  Val index_op() {
    const Val x = pick();
    const Shape& s = x.shape;
    const int rank = static_cast<int>(s.size());
    switch (uniform(0, 5)) {
      case 0:
        if (rank >= 2) {  // Transpose, random perm
          Ints perm(rank);
          for (int i = 0; i < rank; ++i) perm[i] = i;
          std::shuffle(perm.begin(), perm.end(), rng_);
          Shape t(rank);
          for (int i = 0; i < rank; ++i) t[i] = s[perm[i]];
          return made(b_.transpose(x.id, Attributes{{"perm", perm}}), t, x.bound, x.exact);
        }
        [[fallthrough]];
      case 1: {  // Reshape: flatten, merge two adjacent dims, or split a dim
        Shape t;
        const int how = uniform(0, 2);
        if (how == 0 || rank < 2) {
          t = {numel(s)};
        } else if (how == 1) {
          const int i = uniform(0, rank - 2);
          t.assign(s.begin(), s.begin() + i);
          t.push_back(s[i] * s[i + 1]);
          t.insert(t.end(), s.begin() + i + 2, s.end());
        } else {  // split a dim d into (f, d / f), f its smallest factor, or (1, d)
          const int i = uniform(0, rank - 1);
          int64_t f = 1;
          for (int64_t k = 2; k < s[i]; ++k)
            if (s[i] % k == 0) {
              f = k;
              break;
            }
          t.assign(s.begin(), s.begin() + i);
          t.push_back(f);
          t.push_back(s[i] / f);
          t.insert(t.end(), s.begin() + i + 1, s.end());
        }
        return made(b_.reshape(x.id, b_.ints(Ints(t.begin(), t.end()))), t, x.bound, x.exact);
      }
      case 2:
        if (rank < 5) {  // Unsqueeze one axis
          const int a = uniform(0, rank);
          Shape t = s;
          t.insert(t.begin() + a, 1);
          return made(b_.unsqueeze(x.id, b_.ints({a})), t, x.bound, x.exact);
        }
        [[fallthrough]];
      case 3: {  // Squeeze a size-1 dim
        std::vector<int> ones;
        for (int i = 0; i < rank; ++i)
          if (s[i] == 1) ones.push_back(i);
        if (!ones.empty()) {
          const int a = one_of(ones);
          Shape t = s;
          t.erase(t.begin() + a);
          return made(b_.squeeze(x.id, b_.ints({a - (chance(0.5) ? rank : 0)})), t, x.bound,
                      x.exact);
        }
        [[fallthrough]];
      }
      default: {  // Expand: size-1 dims grow, maybe a new leading dim
        Shape t = s;
        if (rank < 4 && chance(0.5)) t.insert(t.begin(), kDims[uniform(1, 3)]);
        for (int64_t& d : t)
          if (d == 1 && chance(0.6)) d = kDims[uniform(1, 3)];
        if (numel(t) > kMaxNumel) t = s;
        Shape target = t;  // the shape input may keep 1s where the input is larger
        for (size_t i = 0; i < target.size(); ++i) {
          const size_t lead = target.size() - s.size();
          if (i >= lead && s[i - lead] == target[i] && chance(0.3)) target[i] = 1;
        }
        return made(b_.expand(x.id, b_.ints(Ints(target.begin(), target.end()))), t, x.bound,
                    x.exact);
      }
    }
  }

  // Slice, Concat, Pad, Gather (constant parameters, or a constant table read at indices cast
  // from an exact value), or a Cast round trip: through i32 for exact values (truncation would
  // magnify rounding differences), else through f64.
  Val movement() {
    const Val x = pick();
    const Shape& s = x.shape;
    const int rank = static_cast<int>(s.size());
    const int kind = rank == 0 ? uniform(3, 4) : uniform(0, 4);
    const int64_t a = rank == 0 ? 0 : uniform(0, rank - 1);
    if (kind == 0) return slice(x, a);
    if (kind == 1) return concat(x, a);
    if (kind == 2) return pad(x);
    if (kind == 4 && (x.exact || rank > 0)) return gather(x, a);
    const DType via = x.exact ? DType::i32 : DType::f64;  // f64: exact both ways
    const ValueId i = b_.cast(x.id, Attributes{{"to", onnx_dtype_code(via)}});
    return made(b_.cast(i, Attributes{{"to", onnx_dtype_code(DType::f32)}}), s, x.bound, x.exact);
  }

  // x[start:end:step] on axis a and maybe one more (multi-element parameters); each length
  // counted element by element.
  Val slice(const Val& x, int64_t a) {
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    Ints axes = {a}, starts, ends, steps;
    if (rank > 1 && chance(0.4))
      axes.push_back((a + uniform(1, static_cast<int>(rank) - 1)) % rank);
    Shape t = x.shape;
    for (int64_t& ax : axes) {
      const int64_t n = x.shape[ax];
      int64_t start = uniform(-n - 2, n + 2),
              end = chance(0.2) ? INT64_MAX : uniform(-n - 2, n + 2);
      int64_t step = one_of(std::vector<int64_t>{1, 1, 2, 3, -1, -2});
      const auto first = [&] {
        const int64_t f = start < 0 ? start + n : start;
        return std::min(std::max<int64_t>(f, 0), step > 0 ? n : n - 1);
      };
      const auto stop = [&] {
        const int64_t e = end == INT64_MAX ? n : (end < 0 ? end + n : end);
        return std::min(std::max<int64_t>(e, step > 0 ? 0 : -1), step > 0 ? n : n - 1);
      };
      int64_t len = 0;
      for (int64_t i = first(); step > 0 ? i < stop() : i > stop(); i += step) ++len;
      if (len == 0) {  // keep values non-empty: the whole axis
        start = 0, end = n, step = 1, len = n;
      }
      t[ax] = len;
      starts.push_back(start), ends.push_back(end), steps.push_back(step);
      if (chance(0.5)) ax -= rank;
    }
    const ValueId v = b_.slice(x.id, b_.ints(starts), b_.ints(ends), b_.ints(axes), b_.ints(steps));
    return made(v, t, x.bound, x.exact);
  }

  // x with up to two more values (or x again) that agree on every dim but a.
  Val concat(const Val& x, int64_t a) {
    std::vector<ValueId> ops = {x.id};
    Shape t = x.shape;
    double bound = x.bound;
    bool exact = x.exact;
    for (const Val& v : vals_) {
      if (ops.size() == 3 || v.shape.size() != t.size() || !chance(0.5)) continue;
      bool fits = true;
      for (size_t d = 0; d < t.size(); ++d)
        fits &= static_cast<int64_t>(d) == a || v.shape[d] == t[d];
      if (!fits || numel(t) + numel(v.shape) > kMaxNumel) continue;
      ops.push_back(v.id);
      t[a] += v.shape[a];
      bound = std::max(bound, v.bound);
      exact = exact && v.exact;
    }
    return made(b_.node(OpKind::Concat, ops, {{"axis", a}}).front(), t, bound, exact);
  }

  // Pads of -1..2 per side (an axis keeps at least 2 elements), constant, edge or reflect.
  Val pad(const Val& x) {
    const std::string mode = one_of(std::vector<std::string>{"constant", "edge", "reflect"});
    const size_t rank = x.shape.size();
    Ints pads(2 * rank, 0);
    Shape t = x.shape;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t n = x.shape[d];
      int64_t b = uniform(-1, 2), e = uniform(-1, 2);
      const int64_t kept = n - std::max<int64_t>(-b, 0) - std::max<int64_t>(-e, 0);
      if (kept < 2 || (mode == "reflect" && std::max(b, e) >= kept)) b = e = 0;
      if (numel(t) / n * (n + b + e) > kMaxNumel) b = e = 0;
      pads[d] = b;
      pads[d + rank] = e;
      t[d] = n + b + e;
    }
    std::vector<ValueId> in = {x.id, b_.ints(pads)};
    double bound = x.bound;
    if (mode == "constant" && chance(0.5)) {
      const float v = uniform_f(-1, 1);
      in.push_back(b_.scalar(v));
      bound = std::max<double>(bound, std::abs(v));
    }
    return made(b_.node(OpKind::Pad, in, {{"mode", mode}}).front(), t, bound, x.exact);
  }

  // x gathered on axis a by constant indices, or a constant table read at indices made from x.
  Val gather(const Val& x, int64_t a) {
    if (x.exact && (x.shape.empty() || chance(0.3))) {  // table[Cast(Clip(x, -m, m - 1))]
      const int64_t m = kDims[uniform(1, 4)];
      const int64_t k = numel(x.shape) * 3 > kMaxNumel ? 1 : kDims[uniform(0, 2)];
      const Val c = clip(x, static_cast<float>(-m), static_cast<float>(m - 1));
      const ValueId i = b_.cast(c.id, Attributes{{"to", onnx_dtype_code(DType::i64)}});
      const ValueId table =
          b_.constant("", test::random_f32({m, k}, static_cast<uint32_t>(rng_()), -1, 1));
      Shape t = x.shape;
      t.push_back(k);
      return made(b_.gather(table, i), t, 1, true);
    }
    const int64_t n = x.shape[a];
    Shape is(uniform(0, 2));
    for (int64_t& d : is) d = kDims[uniform(0, 2)];
    std::vector<int64_t> idx(numel(is));
    for (int64_t& i : idx) i = uniform(static_cast<int>(-n), static_cast<int>(n - 1));
    Shape t(x.shape.begin(), x.shape.begin() + a);
    t.insert(t.end(), is.begin(), is.end());
    t.insert(t.end(), x.shape.begin() + a + 1, x.shape.end());
    const ValueId iv = b_.constant("", Tensor::from<int64_t>(is, idx));
    return made(b_.gather(x.id, iv, Attributes{{"axis", a}}), t, x.bound, x.exact);
  }

  // A CNN op on x seen as [N, C, spatial...]: BatchNormalization (rank >= 2), or on rank >= 3
  // GlobalAveragePool or GlobalMaxPool, Conv (groups, bias or not), MaxPool or AveragePool over
  // windows of random kernel, pads, strides and dilations, the window sometimes scaled by a
  // squeeze-excitation.
  Val cnn_op() {
    std::vector<Val> images;  // values of rank >= 3, preferred
    for (const Val& v : vals_)
      if (v.shape.size() >= 3) images.push_back(v);
    const Val x = tame(images.empty() || chance(0.2) ? pick()
                       : chance(0.5)                 ? images.back()
                                                     : one_of(images));
    const Shape& s = x.shape;
    const int rank = static_cast<int>(s.size());
    if (rank < 2) return unary();
    const int64_t c = s[1];
    const auto constant = [&](const Shape& cs, float lo, float hi) {
      return b_.constant("", test::random_f32(cs, static_cast<uint32_t>(rng_()), lo, hi));
    };
    const int kind = rank == 2 ? 0 : uniform(0, 4);
    if (kind == 0) {  // scale, B, mean, var
      const ValueId y = b_.node(OpKind::BatchNormalization,
                                {x.id, constant({c}, 0.5f, 1.5f), constant({c}, -1, 1),
                                 constant({c}, -1, 1), constant({c}, 0.5f, 2)})
                            .front();
      return made(y, s, 2.2 * (x.bound + 1) + 1, false);
    }
    if (kind == 1) {  // GlobalAveragePool or GlobalMaxPool
      Shape t = s;
      std::fill(t.begin() + 2, t.end(), 1);
      const ValueId y = chance(0.5) ? b_.global_average_pool(x.id) : b_.global_max_pool(x.id);
      return made(y, t, x.bound, false);
    }
    const Val y = window_op(x, kind);
    if (chance(0.5)) return y;
    // squeeze-excitation: y scaled by its pooled channels, so two nests read y
    const ValueId scale = b_.sigmoid(b_.global_average_pool(y.id));
    return made(b_.mul(y.id, scale), y.shape, y.bound, false);
  }

  // Conv (kind 2), MaxPool (3) or AveragePool (4) on x of rank >= 3. `f23`: a conv of the kind
  // Winograd's F(2,3) takes (below).
  Val window_op(const Val& x, int kind, bool f23_forced = false) {
    const Shape& s = x.shape;
    const int rank = static_cast<int>(s.size());
    const int64_t c = s[1];
    const auto constant = [&](const Shape& cs, float lo, float hi) {
      return b_.constant("", test::random_f32(cs, static_cast<uint32_t>(rng_()), lo, hi));
    };
    Ints kernel, strides, dilations, pads(2 * (rank - 2));
    Shape t = {s[0], c};
    // One conv in three is of the kind Winograd's F(2,3) takes (ops/winograd.h): one group, the
    // last dim 3 wide with unit stride and dilation, through the GEMM (6 or more input channels:
    // a 1x1 conv widens x first when it has fewer).
    const bool f23 = f23_forced || (kind == 2 && rank <= 4 && chance(0.33));
    if (f23 && !f23_forced && c < 6) {
      Shape wide = s;
      wide[1] = uniform(6, 8);
      if (numel(wide) <= kMaxNumel) {
        Shape ws = {wide[1], c};
        ws.resize(s.size(), 1);
        const ValueId y =
            b_.node(OpKind::Conv, {x.id, constant(ws, -0.5f, 0.5f)}, Attributes{}).front();
        return window_op(made(y, wide, x.bound * static_cast<double>(c) * 0.5 + 0.5, false), 2,
                         true);
      }
    }
    for (int d = 0; d < rank - 2; ++d) {
      const int64_t n = s[2 + d];
      const bool last = f23 && d == rank - 3;
      int64_t k = last ? 3 : uniform(1, 3), dil = last ? 1 : uniform(1, 2), b = uniform(0, 2),
              e = uniform(0, 2);
      b = std::min(b, k - 1);
      e = std::min(e, k - 1);
      if ((k - 1) * dil + 1 > n + b + e) k = dil = 1, b = e = 0;
      const int64_t st = last ? 1 : uniform(1, 2);
      kernel.push_back(k), strides.push_back(st), dilations.push_back(dil);
      pads[d] = b, pads[d + rank - 2] = e;
      t.push_back((n + b + e - (k - 1) * dil - 1) / st + 1);
    }
    Attributes a = {{"strides", strides}, {"dilations", dilations}, {"pads", pads}};
    if (kind == 2) {  // Conv: weights [M, C / group, kernel...], M a multiple of group
      const int64_t group = f23 || chance(0.5) ? 1 : c;
      t[1] = group * uniform(f23 ? 2 : 1, 3);  // (F(2,3) needs several output channels)
      if (numel(t) > kMaxNumel) t[1] = group;
      Shape ws = {t[1], c / group};
      ws.insert(ws.end(), kernel.begin(), kernel.end());
      std::vector<ValueId> in = {x.id, constant(ws, -0.5f, 0.5f)};
      if (chance(0.5)) in.push_back(constant({t[1]}, -0.5f, 0.5f));
      a.set("group", group);
      const double taps = static_cast<double>(numel(ws) / t[1]);
      return made(b_.node(OpKind::Conv, in, a).front(), t, x.bound * taps * 0.5 + 0.5, false);
    }
    a.set("kernel_shape", kernel);
    if (kind == 3) return made(b_.max_pool(x.id, a), t, x.bound, x.exact);
    a.set("count_include_pad", int64_t{uniform(0, 1)});
    return made(b_.average_pool(x.id, a), t, x.bound, false);
  }

  // An op the JIT cannot compile, so regions are split around it: an identity Einsum
  // ("...->..."), ReduceLogSumExp keeping dims, or CastLike to f32. (CumSum and Mod were ones
  // until they compiled.)
  Val interpreted() {
    ++noncompilable;
    const Val x = tame(pick());
    const int rank = static_cast<int>(x.shape.size());
    const int kind = uniform(0, 2);
    if (kind == 0 && rank > 0) {
      const ValueId y =
          b_.node(OpKind::Einsum, {x.id}, {{"equation", std::string("...->...")}}).front();
      return made(y, x.shape, x.bound, x.exact);
    }
    if (kind == 1 && rank > 0) {
      const int axis = uniform(0, rank - 1);
      Shape t = x.shape;
      t[axis] = 1;
      return made(b_.node(OpKind::ReduceLogSumExp, {x.id}, test::axes_attr({axis}, 1)).front(), t,
                  x.bound + std::log(std::max(1.0, static_cast<double>(x.shape[axis]))), false);
    }
    const ValueId c = b_.node(OpKind::CastLike, {x.id, b_.scalar(0.0f)}).front();  // (f32 to f32)
    return made(c, x.shape, x.bound, x.exact);
  }

  // A MatMul the JIT calls its GEMM for: x @ y^T, x . x for a scalar x, or x flattened and dotted
  // with itself.
  Val contraction() {
    const Val x = tame(pick());
    const int rank = static_cast<int>(x.shape.size());
    if (rank == 2 && chance(0.7)) {  // x @ y^T, y a 2-D value with x's column count
      std::vector<Val> c;
      for (const Val& v : vals_)
        if (v.shape.size() == 2 && v.shape[1] == x.shape[1]) c.push_back(v);
      const Val y = tame(one_of(c));
      const ValueId yt = b_.transpose(y.id, Attributes{{"perm", Ints{1, 0}}});
      return made(b_.matmul(x.id, yt), {x.shape[0], y.shape[0]},
                  x.bound * y.bound * static_cast<double>(x.shape[1]), false);
    }
    if (rank == 0) {  // a dot product of [x] and [x]
      const ValueId u = b_.unsqueeze(x.id, b_.ints({0}));
      return made(b_.matmul(u, u), {}, x.bound * x.bound, false);
    }
    const ValueId row = b_.reshape(x.id, b_.ints({1, -1}));  // x flattened, dotted with itself
    const ValueId col = b_.reshape(x.id, b_.ints({-1, 1}));
    return made(b_.matmul(row, col), {1, 1},
                x.bound * x.bound * static_cast<double>(numel(x.shape)), false);
  }

  // A reduction the JIT materialises inside the region: ReduceSum/Mean/Max over one or two axes
  // (attribute or constant input, keepdims 0 or 1), Softmax/LogSoftmax along one axis, or
  // LayerNormalization from an axis on.
  Val reduction() {
    const Val x = tame(pick());
    const int rank = static_cast<int>(x.shape.size());
    if (rank == 0) return made(b_.reduce_max(x.id), {}, x.bound, x.exact);
    const int axis = uniform(0, rank - 1);
    const int kind = uniform(0, 8);  // 6, 7: ArgMax/ArgMin (of exact values; else Max/Min)
    if (kind == 8) {  // running sums along the axis, maybe exclusive, maybe from the end
      const Attributes a{{"exclusive", int64_t{chance(0.3) ? 1 : 0}},
                         {"reverse", int64_t{chance(0.3) ? 1 : 0}}};
      const int64_t ax = chance(0.5) ? axis : axis - rank;
      const ValueId y = b_.node(OpKind::CumSum, {x.id, b_.ints({ax})}, a).front();
      ++cumsum_ops;
      return made(y, x.shape, x.bound * static_cast<double>(x.shape[axis]), false);
    }
    if (kind == 5) {  // epsilon 0.5: |x - mean| / sd stays below 1.5 |x - mean| (conditioned)
      const Shape row(x.shape.begin() + axis, x.shape.end());
      const Shape ps = chance(0.5) ? row : Shape{row.back()};
      std::vector<ValueId> in = {
          x.id, b_.constant("", test::random_f32(ps, static_cast<uint32_t>(rng_()), 0.5f, 2))};
      if (chance(0.5))
        in.push_back(b_.constant("", test::random_f32(ps, static_cast<uint32_t>(rng_()))));
      const double n = std::max(1.0, static_cast<double>(numel(row)));
      const ValueId y =
          b_.node(OpKind::LayerNormalization, in,
                  {{"axis", int64_t{chance(0.5) ? axis : axis - rank}}, {"epsilon", 0.5}})
              .front();
      return made(y, x.shape, std::min(std::sqrt(n), 3 * x.bound) * 2 + 1, false);
    }
    if (kind == 3)
      return made(b_.softmax(x.id, Attributes{{"axis", int64_t{axis}}}), x.shape, 1, false);
    if (kind == 4) {
      const double n = static_cast<double>(x.shape[axis]);
      return made(b_.log_softmax(x.id, Attributes{{"axis", int64_t{axis - rank}}}), x.shape,
                  2 * x.bound + std::log(std::max(n, 1.0)), false);
    }
    Ints axes = {axis};
    if (rank > 1 && chance(0.3)) axes.push_back((axis + 1) % rank);
    const bool keep = chance(0.6);
    Shape t;
    double count = 1;
    for (int i = 0; i < rank; ++i) {
      const bool red = std::find(axes.begin(), axes.end(), i) != axes.end();
      if (red) count *= static_cast<double>(x.shape[i]);
      if (!red)
        t.push_back(x.shape[i]);
      else if (keep)
        t.push_back(1);
    }
    const Attributes kd = {{"keepdims", int64_t{keep ? 1 : 0}}};
    const bool as_input = chance(0.5);
    const auto reduce = [&](OpKind op) {
      if (as_input) return b_.node(op, {x.id, b_.ints(axes)}, kd).front();
      return b_.node(op, {x.id}, test::axes_attr(axes, keep ? 1 : 0)).front();
    };
    if (kind == 0) {
      const int which = uniform(0, 3);  // Sum twice as often as L1 or SumSquare
      if (which == 2) return made(reduce(OpKind::ReduceL1), t, x.bound * count, false);
      if (which == 3)
        return made(reduce(OpKind::ReduceSumSquare), t, x.bound * x.bound * count, false);
      return made(reduce(OpKind::ReduceSum), t, x.bound * count, false);
    }
    if (kind == 1) {
      if (chance(0.3)) return made(reduce(OpKind::ReduceL2), t, x.bound * std::sqrt(count), false);
      return made(reduce(OpKind::ReduceMean), t, x.bound, false);
    }
    std::vector<Val> exact;  // ArgMax/ArgMin read a value computed bit for bit alike
    if (kind >= 6)
      for (const Val& v : vals_)
        if (v.exact && !v.shape.empty()) exact.push_back(v);
    if (!exact.empty() && chance(0.3)) {  // C's fmod by a constant (of exact values: it jumps)
      const Val v = one_of(exact);
      const float d = std::vector<float>{0.75f, -1.5f, 2.5f, 1.0f}[uniform(0, 3)];
      const ValueId m = b_.node(OpKind::Mod, {v.id, b_.scalar(d)}, {{"fmod", int64_t{1}}}).front();
      ++mod_ops;
      return made(m, v.shape, std::min<double>(v.bound, std::fabs(d)), true);
    }
    if (!exact.empty()) {  // the index, as a float
      const Val v = one_of(exact);
      const int vr = static_cast<int>(v.shape.size()), ax = uniform(0, vr - 1);
      const int64_t keep_axis = chance(0.6) ? 1 : 0;
      const Attributes a{{"axis", int64_t{chance(0.5) ? ax : ax - vr}},
                         {"keepdims", keep_axis},
                         {"select_last_index", int64_t{chance(0.5) ? 1 : 0}}};
      const ValueId i = b_.node(chance(0.5) ? OpKind::ArgMax : OpKind::ArgMin, {v.id}, a).front();
      ++arg_ops;
      Shape is = v.shape;
      if (keep_axis != 0)
        is[ax] = 1;
      else
        is.erase(is.begin() + ax);
      return made(b_.node(OpKind::Cast, {i}, {{"to", int64_t{1}}}).front(), is,
                  static_cast<double>(v.shape[ax] - 1), true);
    }
    return made(reduce(chance(0.5) ? OpKind::ReduceMin : OpKind::ReduceMax), t, x.bound, x.exact);
  }

  std::mt19937 rng_;
  GraphBuilder b_;
  std::vector<Val> vals_;
};

}  // namespace

TEST_CASE("JIT fuzz: random graphs of compilable ops, compiled vs interpreted") {
  const auto start = std::chrono::steady_clock::now();
  const int graphs = fuzz_graphs(kGraphs);
  const uint32_t first_seed = fuzz_seed(kSeed);
  int graphs_with_kernels = 0, regions_compiled = 0, regions_not_compiled = 0, with_interp = 0;
  int failed = 0, forced_graphs = 0, with_folded = 0, with_arg = 0, with_cumsum = 0, with_mod = 0;
  int64_t kernel_calls = 0;
  double max_err = 0;  // in units of the tolerance
  std::string not_compiled_example;
  for (int gi = 0; gi < graphs; ++gi) {
    const uint32_t seed = first_seed + static_cast<uint32_t>(gi);
    GraphGen gen(seed);
    const std::string bad = test::error_of([&] { gen.make(); });
    REQUIRE_MESSAGE(bad.empty(),
                    "FAILED seed " << seed << ": the generator made an invalid graph: " << bad);
    with_interp += gen.noncompilable > 0;
    with_arg += gen.arg_ops > 0;
    with_cumsum += gen.cumsum_ops > 0;
    with_mod += gen.mod_ops > 0;
    const ForcedThreads forced(seed);
    const ForcedPaths paths(seed);
    forced_graphs += forced.threads() > 0;
    const std::vector<Tensor> warm = gen.feeds(), feeds = gen.feeds();
    std::vector<Tensor> got, want;
    Report rep;
    const std::string error = test::error_of([&] {
      Session ref(gen.graph, SessionOptions{.interpret_only = true});
      want = ref.run(feeds);
      Session jit(gen.graph, SessionOptions{.warmup_runs = 1, .min_region_ops = 1});
      jit.run(warm);
      got = jit.run(feeds);
      rep = jit.report();
    });
    failed += !error.empty();
    CHECK_MESSAGE(error.empty(), "FAILED seed " << seed << forced.str() << paths.str() << ": "
                                                << error << "\n"
                                                << gen.graph.to_string());
    if (!error.empty()) continue;
    REQUIRE(got.size() == want.size());
    Mismatch m;
    for (size_t o = 0; o < got.size(); ++o) compare(got[o], want[o], o, m);
    max_err = std::max(max_err, m.max_err);
    failed += !m.first.empty();
    CHECK_MESSAGE(m.first.empty(), "FAILED seed " << seed << " (graph " << gi << ")" << forced.str()
                                                  << paths.str() << ": " << m.first << "\n"
                                                  << gen.graph.to_string() << rep.to_text());
    int compiled = 0;
    for (const RegionReport& r : rep.regions) {
      if (r.compiled) {
        ++compiled;
        if (forced.threads() > 0) CHECK(r.threads == forced.threads());  // (the hook took)
        CHECK_MESSAGE(r.kernel_calls == 1, "FAILED seed " << seed << ": region " << r.id << " ran "
                                                          << r.kernel_calls << " times");
      } else {
        ++regions_not_compiled;
        if (not_compiled_example.empty())
          not_compiled_example = "seed " + std::to_string(seed) + ": " + r.why_interpreted;
      }
    }
    regions_compiled += compiled;
    graphs_with_kernels += compiled > 0;
    kernel_calls += rep.kernel_calls;
    with_folded += rep.folded_ops > 0;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE(graphs << " graphs from seed " << first_seed << " (" << with_interp
                 << " with interpreted ops, " << forced_graphs << " on forced threads, "
                 << with_folded << " with ops folded into constants, " << with_arg
                 << " with ArgMax/ArgMin, " << with_cumsum << " with CumSum, " << with_mod
                 << " with Mod), " << graphs_with_kernels << " with kernels, " << regions_compiled
                 << " regions compiled (" << regions_not_compiled << " not), " << kernel_calls
                 << " kernel calls; " << failed << " failed; max error " << max_err
                 << " x tolerance; " << secs << " s");
  if (!not_compiled_example.empty()) MESSAGE("not compiled, e.g. " << not_compiled_example);
  CHECK(graphs_with_kernels * 10 >= graphs * 3);
}
