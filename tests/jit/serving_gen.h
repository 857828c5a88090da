// The serving fuzzer's graphs (test_jit_fuzz_serving.cpp): ServeGen(seed).make() builds a random
// graph whose inputs have symbolic dims, and tracks every value's shape at each of kScenarios
// sizes of the symbols (scenario 0 is the warm-up's), so that every op it adds is valid at all of
// them. See test_jit_fuzz_serving.cpp for what the graphs hold.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "jit/fuzz_util.h"
#include "test_util.h"

namespace sgraph::fuzz::serving {

constexpr double kBound = 8;                      // larger magnitudes are clipped before use
constexpr int64_t kMaxNumel = 8192;               // per value, in every scenario
constexpr int64_t kDims[] = {1, 2, 3, 5};         // static dims
constexpr int64_t kSizes[] = {1, 2, 3, 4, 5, 6};  // symbol sizes
const char* const kSymbols[] = {"n", "m"};

struct Val {
  ValueId id;
  Shapes shapes;
  double bound;        // of |element|
  bool start = false;  // a graph input or an interpreted op's output: twins may start here
};
inline size_t rank_of(const Val& v) { return v.shapes[0].size(); }

class ServeGen {
 public:
  explicit ServeGen(uint32_t seed) : rng_(seed), b_("serve_" + std::to_string(seed)) {}

  int uniform(int lo, int hi) { return draw(rng_, lo, hi); }
  bool chance(double p) { return coin(rng_, p); }

  // The constant integer operand v, or (often) v as exporters compute it over constants: a
  // Concat of its two parts, maybe flattened by a Reshape. The compiled Session folds the chain
  // back into v (SessionOptions::fold_constants); the interpreting reference runs it.
  ValueId ints(const Ints& v, Rng& g) {
    if (v.empty() || !coin(g, 0.3)) return b_.ints(v);
    ValueId r = b_.ints(v);
    if (v.size() >= 2) {
      const auto k = static_cast<std::ptrdiff_t>(draw(g, 1, static_cast<int>(v.size()) - 1));
      r = b_.node(OpKind::Concat,
                  {b_.ints(Ints(v.begin(), v.begin() + k)), b_.ints(Ints(v.begin() + k, v.end()))},
                  {{"axis", int64_t{0}}})
              .front();
    }
    if (v.size() < 2 || coin(g, 0.5)) r = b_.reshape(r, b_.ints({-1}));
    return r;
  }
  template <class T>
  const T& one_of(const std::vector<T>& v) {
    return v[uniform(0, static_cast<int>(v.size()) - 1)];
  }

  void make() {
    for (auto& sym : sizes) {  // a serving size differs from the warm-up's
      sym[0] = kSizes[uniform(1, 5)];
      for (int k = 1; k < kScenarios; ++k)
        for (sym[k] = sym[0]; sym[k] == sym[0];) sym[k] = kSizes[uniform(0, 5)];
      // Often the largest size last: beyond what a warm-up at 0, 1 and 2 saw.
      if (sym[0] != kSizes[5] && chance(0.5)) sym[kScenarios - 1] = kSizes[5];
    }
    const int rank = uniform(1, 4);
    std::vector<int> sym_of(rank, -1);  // per base dim: its symbol, or -1 (static)
    Shape dims(rank);
    for (int d = 0; d < rank; ++d) {
      if (chance(0.45)) sym_of[d] = uniform(0, 1);
      dims[d] = kDims[uniform(0, 3)];
    }
    if (std::count(sym_of.begin(), sym_of.end(), -1) == rank && chance(0.9))
      sym_of[uniform(0, rank - 1)] = 0;
    for (int i = 0, inputs = uniform(1, 3); i < inputs; ++i) {
      const int drop = i > 0 && chance(0.5) ? uniform(0, rank - 1) : 0;
      DimList decl;
      Val v{kNoValue, {}, 2, true};
      for (int d = drop; d < rank; ++d) {
        const bool one = i > 0 && chance(0.25);
        decl.push_back(one ? Dim(1) : sym_of[d] >= 0 ? Dim(kSymbols[sym_of[d]]) : Dim(dims[d]));
        for (int k = 0; k < kScenarios; ++k)
          v.shapes[k].push_back(one ? 1 : sym_of[d] >= 0 ? sizes[sym_of[d]][k] : dims[d]);
      }
      v.id = b_.input("x" + std::to_string(i), DType::f32, decl);
      vals_.push_back(v);
      inputs_.push_back(v);
    }
    if (chance(0.3))  // the symbols' sizes as values, a source of computed shapes
      sizes_id_ = b_.input("sizes", DType::i64, {2});
    for (int i = uniform(3, 10); i > 0; --i) add_node();
    output(vals_.back());
    for (int i = uniform(0, 2); i > 0; --i) output(one_of(vals_));
    graph = b_.build();
  }

  std::vector<Tensor> feeds(int scenario) {
    std::vector<Tensor> f;
    for (const Val& v : inputs_)
      f.push_back(test::random_f32(v.shapes[scenario], static_cast<uint32_t>(rng_()), -2, 2));
    if (sizes_id_ != kNoValue)
      f.push_back(Tensor::from<int64_t>({2}, {sizes[0][scenario], sizes[1][scenario]}));
    return f;
  }

  // The graph as far as make() got (when it throws).
  std::string partial() { return b_.graph().to_string(); }

  Graph graph;
  std::array<std::array<int64_t, kScenarios>, 2> sizes{};  // per symbol, per scenario
  int twins = 0, computed_shapes = 0, cumsums = 0, convs = 0;

 private:
  void output(const Val& v) {
    if (std::find(outs_.begin(), outs_.end(), v.id) != outs_.end()) return;
    for (const Val& in : inputs_)
      if (in.id == v.id) return;
    outs_.push_back(v.id);
    b_.output(v.id);
  }
  Val pick() {
    if (chance(0.5)) return vals_[std::max(0, static_cast<int>(vals_.size()) - uniform(1, 3))];
    return one_of(vals_);
  }
  Val made(ValueId id, Shapes s, double bound) { return {id, std::move(s), bound, false}; }
  Val tame(const Val& v) {
    if (v.bound <= kBound) return v;
    return made(b_.clip(v.id, b_.scalar(float(-kBound)), b_.scalar(float(kBound))), v.shapes,
                kBound);
  }
  // A constant broadcasting with `s` in every scenario: its dims 1 or s's fixed ones.
  Val constant_like(const Shapes& s, Rng& g, uint32_t seed) {
    const size_t r = s[0].size(), drop = coin(g, 0.3) ? draw(g, 0, static_cast<int>(r)) : 0;
    Shape c;
    for (size_t d = drop; d < r; ++d)
      c.push_back(fixed(s, d) > 0 && coin(g, 0.7) ? fixed(s, d) : 1);
    Shapes cs;
    cs.fill(c);
    return {b_.constant("", test::random_f32(c, seed, -1, 1)), cs, 1};
  }
  Val pick_compatible(const Shapes& s) {
    std::vector<Val> c;
    for (const Val& v : vals_)
      if (all_broadcast(v.shapes, s, nullptr)) c.push_back(v);
    if (c.empty() || chance(0.25)) return constant_like(s, rng_, static_cast<uint32_t>(rng_()));
    return chance(0.4) ? c.back() : one_of(c);
  }

  void add_node() {
    const int kind = uniform(0, 99);
    if (kind >= 80) return twin();
    Val r;
    if (kind < 22)
      r = elementwise();
    else if (kind < 40)
      r = movement(pick());
    else if (kind < 47)
      r = reduction(tame(pick()), rng_, rng_, false);
    else if (kind < 67)
      r = computed_shape();
    else if (kind < 71)
      r = conv(pick());
    else
      r = interpreted(tame(pick()));
    vals_.push_back(r);
  }

  // A conv as CNNs have them, of the kind Winograd's F(2,3) takes (ops/winograd.h): x seen as
  // [N, C, (H,) W] with C static in the graph, widened by a 1x1 conv to 6-8 channels when it has
  // fewer, then a conv 3 wide along W (pads 1, unit stride) and 1 or 3 tall along H (pads keeping
  // H, or stride 2), to 2-4 channels, maybe with a bias. N, H and W may be symbols: one dynamic
  // kernel serves every width. (An elementwise op instead when x does not fit.)
  Val conv(const Val& x0) {
    const Val x = tame(x0);
    const size_t r = rank_of(x);
    const std::optional<DimList>& declared = b_.graph().values[x.id].shape;
    if ((r != 3 && r != 4) || !declared || !(*declared)[1].is_static() || x.shapes[0][1] < 1)
      return elementwise();
    const auto constant = [&](const Shape& cs) {
      return b_.constant("", test::random_f32(cs, static_cast<uint32_t>(rng_()), -0.5f, 0.5f));
    };
    const auto fits = [](const Shapes& ss) {
      return std::all_of(ss.begin(), ss.end(),
                         [](const Shape& t) { return numel(t) <= kMaxNumel; });
    };
    Val in = x;
    int64_t c = x.shapes[0][1];
    if (c < 6) {
      const int64_t wide = uniform(6, 8);
      const Shapes ws = each(x.shapes, [&](const Shape& t) {
        Shape u = t;
        u[1] = wide;
        return u;
      });
      if (!fits(ws)) return elementwise();
      Shape w = {wide, c};
      w.resize(r, 1);
      in = made(b_.node(OpKind::Conv, {x.id, constant(w)}, Attributes{}).front(), ws,
                x.bound * static_cast<double>(c) * 0.5);
      c = wide;
    }
    const int64_t m = uniform(2, 4), kh = r == 4 && chance(0.5) ? 3 : 1;
    const int64_t sh = r == 4 && chance(0.3) ? 2 : 1, ph = (kh - 1) / 2;
    const Shapes out = each(in.shapes, [&](const Shape& t) {
      Shape u = t;
      u[1] = m;
      if (r == 4) u[2] = (t[2] + 2 * ph - kh) / sh + 1;
      return u;
    });
    if (!fits(out)) return in;
    Shape w = {m, c};
    if (r == 4) w.push_back(kh);
    w.push_back(3);
    Attributes a = r == 4 ? Attributes{{"pads", Ints{ph, 1, ph, 1}}, {"strides", Ints{sh, 1}}}
                          : Attributes{{"pads", Ints{1, 1}}};
    std::vector<ValueId> ins = {in.id, constant(w)};
    if (chance(0.5)) ins.push_back(constant({m}));
    ++convs;
    return made(b_.node(OpKind::Conv, ins, a).front(), out,
                in.bound * static_cast<double>(c * kh * 3) * 0.5 + 0.5);
  }

  Val unary(const Val& x, Rng& g) {
    switch (draw(g, 0, 5)) {
      case 0:
        return made(b_.neg(x.id), x.shapes, x.bound);
      case 1:
        return made(b_.relu(x.id), x.shapes, x.bound);
      case 2:
        return made(b_.tanh(x.id), x.shapes, 1);
      case 3: {
        if (rank_of(x) < 2) return made(b_.abs(x.id), x.shapes, x.bound);
        Ints perm(rank_of(x));
        for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
        std::shuffle(perm.begin(), perm.end(), g);
        const Shapes t = each(x.shapes, [&](const Shape& s) {
          Shape p(s.size());
          for (size_t i = 0; i < s.size(); ++i) p[i] = s[perm[i]];
          return p;
        });
        return made(b_.transpose(x.id, Attributes{{"perm", perm}}), t, x.bound);
      }
      case 4:
        return made(b_.sigmoid(x.id), x.shapes, 1);
      default: {  // running sums along an axis (a sum of at most the dim's elements)
        if (rank_of(x) == 0) return made(b_.sigmoid(x.id), x.shapes, 1);
        const int a = draw(g, 0, static_cast<int>(rank_of(x)) - 1);
        int64_t most = 1;
        for (const Shape& s : x.shapes) most = std::max(most, s[static_cast<size_t>(a)]);
        const Attributes flags{{"exclusive", int64_t{coin(g, 0.3) ? 1 : 0}},
                               {"reverse", int64_t{coin(g, 0.3) ? 1 : 0}}};
        ++cumsums;
        return made(b_.node(OpKind::CumSum, {x.id, ints({a}, g)}, flags).front(), x.shapes,
                    x.bound * static_cast<double>(most));
      }
    }
  }

  // x (op) y: y a value or a constant tensor that broadcasts with x in every scenario.
  Val binary(const Val& x, const Val& y, int op) {
    Shapes s;
    all_broadcast(x.shapes, y.shapes, &s);
    switch (op) {
      case 0:
        return made(b_.add(x.id, y.id), s, x.bound + y.bound);
      case 1:
        return made(b_.mul(x.id, y.id), s, x.bound * y.bound);
      case 2:
        return made(b_.max(x.id, y.id), s, std::max(x.bound, y.bound));
      case 3:
        return made(b_.sub(x.id, y.id), s, x.bound + y.bound);
      default: {
        const ValueId d = b_.add(b_.abs(y.id), b_.scalar(1.0f));
        return made(b_.div(x.id, d), s, x.bound);
      }
    }
  }

  // A unary or binary op, Where(x > y, x, y) (a maximum however x and y round), or Softmax.
  Val elementwise() {
    const Val x = tame(pick());
    const int kind = uniform(0, 11);
    if (kind < 4) return unary(x, rng_);
    if (kind == 11 && rank_of(x) > 0) {
      const int64_t axis = uniform(0, static_cast<int>(rank_of(x)) - 1);
      return made(b_.softmax(x.id, Attributes{{"axis", axis}}), x.shapes, 1);
    }
    const Val y = tame(pick_compatible(x.shapes));
    if (kind < 10) return binary(x, y, kind % 5);
    Shapes s;
    all_broadcast(x.shapes, y.shapes, &s);
    const ValueId c = chance(0.5) ? b_.greater(x.id, y.id) : b_.less(y.id, x.id);
    return made(b_.where(c, x.id, y.id), s, std::max(x.bound, y.bound));
  }

  Val movement(const Val& x) {
    const size_t r = rank_of(x);
    if (r == 0) return unary(x, rng_);
    switch (uniform(0, 5)) {
      case 0:
        return slice(x, rng_, rng_, false);
      case 1:
        return pad(x, rng_, rng_, false);
      case 2:
        return gather(x, rng_, rng_, false);
      case 3:
        return concat(x);
      case 4:
        return reshape(x);
      default:
        return expand(x);
    }
  }

  // The output shapes of Pad (pads begin..., end... over `axes`), or nullopt when an axis would
  // keep fewer than 2 elements, reflect past them, or grow the value past kMaxNumel (zero pads
  // always fit).
  static std::optional<Shapes> pad_shapes(const Shapes& in, const Ints& axes, const Ints& pads,
                                          bool reflect) {
    Shapes out = in;
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t b = pads[i], e = pads[i + axes.size()];
      for (int k = 0; k < kScenarios; ++k) {
        const int64_t n = in[k][axes[i]];
        const int64_t kept = n - std::max<int64_t>(-b, 0) - std::max<int64_t>(-e, 0);
        if ((b != 0 || e != 0) && (kept < 2 || (reflect && std::max(b, e) >= kept)))
          return std::nullopt;
        out[k][axes[i]] = n + b + e;
      }
    }
    if (max_numel(out) > std::max(kMaxNumel, max_numel(in))) return std::nullopt;
    return out;
  }

  // Pad over all axes or a few (an axes input); `g` draws what decides shapes, `alt` (for a twin)
  // moves pads from one side to the other where that keeps the shapes.
  Val pad(const Val& x, Rng& g, Rng& alt_g, bool alt) {
    const size_t r = rank_of(x);
    const std::string mode = std::vector<std::string>{"constant", "edge", "reflect"}[draw(g, 0, 2)];
    Ints axes;
    const bool axes_input = coin(g, 0.3);
    for (size_t d = 0; d < r; ++d)
      if (!axes_input || coin(g, 0.5)) axes.push_back(static_cast<int64_t>(d));
    if (axes.empty()) axes.push_back(draw(g, 0, static_cast<int>(r) - 1));
    const size_t k = axes.size();
    Ints pads(2 * k, 0);
    for (size_t i = 0; i < k; ++i) {
      Ints p = {draw(g, -1, 2), draw(g, -1, 2)};
      Ints trial = pads;
      trial[i] = p[0], trial[i + k] = p[1];
      if (pad_shapes(x.shapes, axes, trial, mode == "reflect")) pads = trial;
    }
    if (alt)
      for (size_t i = 0; i < k; ++i) {
        Ints trial = pads;
        trial[i] = draw(alt_g, -1, 2);
        trial[i + k] = pads[i] + pads[i + k] - trial[i];
        const bool reflect = mode == "reflect";
        if (pad_shapes(x.shapes, axes, trial, reflect) == pad_shapes(x.shapes, axes, pads, reflect))
          pads = trial;
      }
    const Shapes out = *pad_shapes(x.shapes, axes, pads, mode == "reflect");
    std::vector<ValueId> in = {x.id, ints(pads, g)};
    double bound = x.bound;
    if (mode == "constant" && coin(g, 0.5)) {
      in.push_back(b_.scalar(static_cast<float>(draw(g, -4, 4)) / 4));
      bound = std::max(bound, 1.0);
    }
    if (axes_input) {
      if (in.size() == 2) in.push_back(kNoValue);
      for (int64_t& a : axes)
        if (coin(g, 0.3)) a -= static_cast<int64_t>(r);
      in.push_back(b_.ints(axes));
    }
    return made(b_.node(OpKind::Pad, in, {{"mode", mode}}).front(), out, bound);
  }

  // x[start:end:step] on one or two axes; a twin's alternative starts, ends and steps read other
  // elements into the same shapes.
  Val slice(const Val& x, Rng& g, Rng& alt_g, bool alt) {
    const int r = static_cast<int>(rank_of(x));
    Ints axes = {draw(g, 0, r - 1)};
    if (r > 1 && coin(g, 0.5)) axes.push_back((axes[0] + draw(g, 1, r - 1)) % r);
    Ints starts, ends, steps;
    const auto lens = [&](int64_t a, int64_t s, int64_t e, int64_t st) {
      std::array<int64_t, kScenarios> l;
      for (int k = 0; k < kScenarios; ++k) l[k] = slice_len(x.shapes[k][a], s, e, st);
      return l;
    };
    // The graph's shape inference runs a symbolic dim at two large sizes and calls the length
    // static when both agree; params where that length is not every scenario's (x[-3:2] is empty
    // at large sizes, not at 3) would make it reject the graph, so they are not used. (A dim the
    // graph has symbolic may be the same in every scenario: what counts is the graph's.)
    const std::optional<DimList>& declared = b_.graph().values[x.id].shape;
    const auto inferable = [&](int64_t a, int64_t s, int64_t e, int64_t st) {
      const int64_t big = slice_len(1000, s, e, st);
      const bool static_dim = declared && (*declared)[a].is_static();
      if (static_dim || big != slice_len(100000, s, e, st)) return true;
      const auto l = lens(a, s, e, st);
      return std::all_of(l.begin(), l.end(), [&](int64_t n) { return n == big; });
    };
    const auto random_params = [&](Rng& rg, int64_t n) {
      const int64_t st = std::vector<int64_t>{1, 1, 2, -1, 3}[draw(rg, 0, 4)];
      const int64_t s = draw(rg, static_cast<int>(-n - 1), static_cast<int>(n + 1));
      const int64_t e =
          coin(rg, 0.2) ? INT64_MAX : draw(rg, static_cast<int>(-n - 1), static_cast<int>(n + 1));
      return std::array<int64_t, 3>{s, e, st};
    };
    for (int64_t a : axes) {
      const int64_t n = x.shapes[0][a];
      std::array<int64_t, 3> p = {0, INT64_MAX, 1};
      for (int tries = 0; tries < 4; ++tries) {
        const auto q = random_params(g, n);
        const auto l = lens(a, q[0], q[1], q[2]);
        if (*std::min_element(l.begin(), l.end()) > 0 && inferable(a, q[0], q[1], q[2])) {
          p = q;
          break;
        }
      }
      for (int tries = 0; alt && tries < 12; ++tries) {
        const auto q = random_params(alt_g, n);
        if (lens(a, q[0], q[1], q[2]) == lens(a, p[0], p[1], p[2]) &&
            inferable(a, q[0], q[1], q[2])) {
          p = q;
          break;
        }
      }
      starts.push_back(p[0]), ends.push_back(p[1]), steps.push_back(p[2]);
    }
    Shapes out = x.shapes;
    for (size_t i = 0; i < axes.size(); ++i)
      for (int k = 0; k < kScenarios; ++k)
        out[k][axes[i]] = slice_len(x.shapes[k][axes[i]], starts[i], ends[i], steps[i]);
    Ints ax = axes;
    for (int64_t& a : ax)
      if (coin(g, 0.3)) a -= r;
    const bool unit = std::all_of(steps.begin(), steps.end(), [](int64_t s) { return s == 1; });
    const ValueId v =
        unit && coin(g, 0.3)
            ? b_.slice(x.id, b_.ints(starts), b_.ints(ends), b_.ints(ax))
            : b_.slice(x.id, b_.ints(starts), b_.ints(ends), b_.ints(ax), b_.ints(steps));
    return made(v, out, x.bound);
  }

  // x gathered on an axis by constant indices (any in range in every scenario).
  Val gather(const Val& x, Rng& g, Rng& alt_g, bool alt) {
    const int r = static_cast<int>(rank_of(x));
    const int a = draw(g, 0, r - 1);
    int64_t n = INT64_MAX;
    for (const Shape& s : x.shapes) n = std::min(n, s[a]);
    Shape is(draw(g, 0, 2));
    for (int64_t& d : is) d = kDims[draw(g, 0, 2)];
    Ints idx(numel(is));
    for (int64_t& i : idx) i = draw(g, static_cast<int>(-n), static_cast<int>(n - 1));
    if (alt)
      for (int64_t& i : idx) i = draw(alt_g, static_cast<int>(-n), static_cast<int>(n - 1));
    const Shapes out = each(x.shapes, [&](const Shape& s) {
      Shape t(s.begin(), s.begin() + a);
      t.insert(t.end(), is.begin(), is.end());
      t.insert(t.end(), s.begin() + a + 1, s.end());
      return t;
    });
    if (max_numel(out) > kMaxNumel) return unary(x, g);
    const ValueId iv = b_.constant("", Tensor::from<int64_t>(is, idx));
    return made(b_.gather(x.id, iv, Attributes{{"axis", int64_t{a - (coin(g, 0.3) ? r : 0)}}}), out,
                x.bound);
  }

  // x with values (or x again) that agree with it on every dim but one, in every scenario.
  Val concat(const Val& x) {
    const size_t r = rank_of(x);
    const size_t a = uniform(0, static_cast<int>(r) - 1);
    std::vector<ValueId> ops = {x.id};
    Shapes t = x.shapes;
    double bound = x.bound;
    for (const Val& v : vals_) {
      if (ops.size() == 3 || rank_of(v) != r || !chance(0.5)) continue;
      bool fits = true;
      for (int k = 0; k < kScenarios; ++k)
        for (size_t d = 0; d < r; ++d) fits &= d == a || v.shapes[k][d] == t[k][d];
      if (!fits || max_numel(t) + max_numel(v.shapes) > kMaxNumel) continue;
      ops.push_back(v.id);
      for (int k = 0; k < kScenarios; ++k) t[k][a] += v.shapes[k][a];
      bound = std::max(bound, v.bound);
    }
    return made(b_.node(OpKind::Concat, ops, {{"axis", int64_t(a)}}).front(), t, bound);
  }

  // A constant shape operand for Reshape from the input's and output's shapes in every scenario:
  // 0 (copy) where the dim is the input's, its size where fixed, one -1; nullopt when none fits.
  static std::optional<Ints> reshape_spec(const Shapes& in, const Shapes& out, Rng& g) {
    Ints spec;
    bool inferred = false;
    for (size_t j = 0; j < out[0].size(); ++j) {
      bool same = j < in[0].size();
      for (int k = 0; same && k < kScenarios; ++k) same = in[k][j] == out[k][j];
      if (same && (fixed(out, j) < 0 || coin(g, 0.5))) {
        spec.push_back(0);
      } else if (fixed(out, j) >= 0 && (inferred || coin(g, 0.7))) {
        spec.push_back(fixed(out, j));
      } else if (!inferred) {
        spec.push_back(-1);
        inferred = true;
      } else {
        return std::nullopt;
      }
    }
    return spec;
  }

  // Reshape by a constant shape: flatten, merge two adjacent dims, or insert a 1.
  Val reshape(const Val& x) {
    const size_t r = rank_of(x);
    const int how = r < 2 ? 2 * uniform(0, 1) : uniform(0, 2);
    const size_t i = uniform(0, static_cast<int>(r) - (how == 1 ? 2 : 1));
    const Shapes out = each(x.shapes, [&](const Shape& s) {
      if (how == 0) return Shape{numel(s)};
      Shape t(s.begin(), s.begin() + i);
      if (how == 1) {
        t.push_back(s[i] * s[i + 1]);
        t.insert(t.end(), s.begin() + i + 2, s.end());
      } else {
        t.push_back(1);
        t.insert(t.end(), s.begin() + i, s.end());
      }
      return t;
    });
    const std::optional<Ints> spec = reshape_spec(x.shapes, out, rng_);
    if (!spec) return unary(x, rng_);
    return made(b_.reshape(x.id, ints(*spec, rng_)), out, x.bound);
  }

  // Expand by a constant shape: fixed size-1 dims grow, maybe a new leading dim; the shape
  // operand keeps 1s where the input is larger.
  Val expand(const Val& x) {
    Shape target;
    if (rank_of(x) < 4 && chance(0.5)) target.push_back(kDims[uniform(1, 3)]);
    for (size_t d = 0; d < rank_of(x); ++d)
      target.push_back(fixed(x.shapes, d) == 1 && chance(0.6) ? kDims[uniform(1, 3)] : 1);
    Shapes out;
    for (int k = 0; k < kScenarios; ++k) broadcast(x.shapes[k], target, &out[k]);
    if (max_numel(out) > kMaxNumel) return unary(x, rng_);
    return made(b_.expand(x.id, ints(target, rng_)), out, x.bound);
  }

  // ReduceSum/Mean/Max/Min/L1/L2/SumSquare over one or two axes (a constant input or the
  // attribute); a twin's alternative axes give the same shapes.
  Val reduction(const Val& x, Rng& g, Rng& alt_g, bool alt) {
    const int r = static_cast<int>(rank_of(x));
    if (r == 0) return unary(x, g);
    const OpKind op = std::vector<OpKind>{
        OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax,      OpKind::ReduceMin,
        OpKind::ReduceL1,  OpKind::ReduceL2,   OpKind::ReduceSumSquare}[draw(g, 0, 6)];
    const bool keep = coin(g, 0.5), as_input = coin(g, 0.7);
    const auto pick_axes = [&](Rng& rg) {
      Ints axes = {draw(rg, 0, r - 1)};
      if (r > 1 && coin(rg, 0.6)) axes.push_back((axes[0] + draw(rg, 1, r - 1)) % r);
      return axes;
    };
    const auto shapes_of = [&](const Ints& axes) {
      return each(x.shapes, [&](const Shape& s) {
        Shape t;
        for (int d = 0; d < r; ++d) {
          const bool red = std::find(axes.begin(), axes.end(), d) != axes.end();
          if (!red) t.push_back(s[d]);
          if (red && keep) t.push_back(1);
        }
        return t;
      });
    };
    Ints axes = pick_axes(g);
    for (int tries = 0; alt && tries < 8; ++tries) {
      const Ints other = pick_axes(alt_g);
      if (other.size() == axes.size() && shapes_of(other) == shapes_of(axes)) {
        axes = other;
        break;
      }
    }
    double count = 1;  // elements summed, at most
    for (int64_t a : axes) {
      int64_t n = 1;
      for (const Shape& s : x.shapes) n = std::max(n, s[a]);
      count *= static_cast<double>(n);
    }
    const double bound = op == OpKind::ReduceSum || op == OpKind::ReduceL1 ? x.bound * count
                         : op == OpKind::ReduceSumSquare ? x.bound * x.bound * count
                         : op == OpKind::ReduceL2        ? x.bound * std::sqrt(count)
                                                         : x.bound;
    const Attributes kd = {{"keepdims", int64_t{keep}}};
    const ValueId y = as_input ? b_.node(op, {x.id, b_.ints(axes)}, kd).front()
                               : b_.node(op, {x.id}, test::axes_attr(axes, keep)).front();
    return made(y, shapes_of(axes), bound);
  }

  // An op the JIT does not compile: an identity Einsum ("...->..."), ReduceLogSumExp keeping
  // dims, or CastLike to f32. (CumSum and Mod were ones until they compiled.)
  Val interpreted(const Val& x) {
    const int r = static_cast<int>(rank_of(x));
    Val v;
    const int kind = uniform(0, 2);
    if (kind == 1 && r > 0) {
      const int a = uniform(0, r - 1);
      const Shapes t = each(x.shapes, [&](Shape s) {
        s[a] = 1;
        return s;
      });
      int64_t most = 1;
      for (const Shape& s : x.shapes) most = std::max(most, s[a]);
      v = made(b_.node(OpKind::ReduceLogSumExp, {x.id}, test::axes_attr({a}, 1)).front(), t,
               x.bound + std::log(static_cast<double>(most)));
    } else if (kind == 2) {
      v = made(b_.node(OpKind::CastLike, {x.id, b_.scalar(0.0f)}).front(), x.shapes, x.bound);
    } else if (r > 0) {
      const ValueId y =
          b_.node(OpKind::Einsum, {x.id}, {{"equation", std::string("...->...")}}).front();
      v = made(y, x.shapes, x.bound);
    } else {
      v = made(b_.node(OpKind::CastLike, {x.id, b_.scalar(0.0f)}).front(), x.shapes, x.bound);
    }
    v.start = true;
    return v;
  }

  // A shape computed from values: Shape(u)[...] gathered by constant indices, maybe through i64
  // arithmetic, concatenated with constant dims, then the shape operand of Expand (of a value or
  // a constant), Reshape (with a -1) or ConstantOfShape, Slice's ends, or one dim as Range's limit.
  Val computed_shape() {
    ++computed_shapes;
    std::array<Ints, kScenarios> part;  // the gathered dims' values, per scenario
    Ints idx;
    ValueId p;
    if (sizes_id_ != kNoValue && chance(0.3)) {  // sizes[idx]
      for (int i = uniform(1, 3); i > 0; --i) idx.push_back(uniform(-2, 1));
      for (int k = 0; k < kScenarios; ++k)
        for (int64_t i : idx) part[k].push_back(sizes[i < 0 ? i + 2 : i][k]);
      p = b_.gather(sizes_id_, b_.ints(idx));
    } else {  // Shape(u)[start:][idx], u's dims preferably changing between scenarios
      std::vector<Val> sources;
      for (const Val& v : vals_)
        if (rank_of(v) > 0 && fixed(v.shapes, 0) < 0) sources.push_back(v);
      const Val u = sources.empty() || chance(0.2) ? pick() : one_of(sources);
      const int r = static_cast<int>(rank_of(u));
      if (r == 0) return unary(u, rng_);
      const int start = chance(0.3) ? uniform(0, r - 1) : 0;
      const ValueId sh =
          start > 0 ? b_.shape(u.id, Attributes{{"start", int64_t{start}}}) : b_.shape(u.id);
      for (int i = uniform(1, std::min(3, r - start)); i > 0; --i)
        idx.push_back(uniform(start - r, r - start - 1));
      for (int k = 0; k < kScenarios; ++k)
        for (int64_t i : idx) part[k].push_back(u.shapes[k][start + (i < 0 ? i + r - start : i)]);
      p = b_.gather(sh, b_.ints(idx));
    }
    if (chance(0.3)) {  // i64 arithmetic on the dims
      const int64_t c = uniform(1, 2);
      const bool add = chance(0.5);
      // Min by c + 1, or by the largest dim of scenarios 0-2: the identity over a warm-up at
      // those, so that the dims seem to be the symbols themselves, but maybe not at scenario 3.
      int64_t bound = c + 1;
      if (!add && chance(0.5)) {
        bound = 1;
        for (int k = 0; k + 1 < kScenarios; ++k)
          for (int64_t d : part[k]) bound = std::max(bound, d);
      }
      p = add ? b_.add(p, b_.scalar<int64_t>(c - 1)) : b_.min(p, b_.scalar<int64_t>(bound));
      for (auto& pk : part)
        for (int64_t& d : pk) d = add ? d + c - 1 : std::min(d, bound);
    }
    // Constant dims before and after, up to rank 4.
    Ints before, after;
    while (idx.size() + before.size() + after.size() < 4 && chance(0.4))
      (chance(0.5) ? before : after).push_back(kDims[uniform(0, 3)]);
    std::array<Shape, kScenarios> target;
    for (int k = 0; k < kScenarios; ++k) {
      target[k] = before;
      target[k].insert(target[k].end(), part[k].begin(), part[k].end());
      target[k].insert(target[k].end(), after.begin(), after.end());
    }
    const auto concat = [&](const Ints& lead, const Ints& tail) {
      std::vector<ValueId> in;
      if (!lead.empty()) in.push_back(b_.ints(lead));
      in.push_back(p);
      if (!tail.empty()) in.push_back(b_.ints(tail));
      return in.size() == 1 ? p : b_.node(OpKind::Concat, in, {{"axis", int64_t{0}}}).front();
    };
    Shapes ts;
    for (int k = 0; k < kScenarios; ++k) ts[k] = target[k];
    const int use = uniform(0, 9);
    if (use < 3) {  // Reshape(v, [before, dims, after, -1]) for a v of a multiple of their numel
      std::vector<Val> c;
      for (const Val& v : vals_) {
        bool fits = true;
        for (int k = 0; k < kScenarios; ++k) fits &= numel(v.shapes[k]) % numel(target[k]) == 0;
        if (fits) c.push_back(v);
      }
      if (!c.empty()) {
        Ints tail = after;
        tail.push_back(-1);
        const Val v = one_of(c);
        Shapes out;
        for (int k = 0; k < kScenarios; ++k) {
          out[k] = target[k];
          out[k].push_back(numel(v.shapes[k]) / numel(target[k]));
        }
        return made(b_.reshape(v.id, concat(before, tail)), out, v.bound);
      }
    }
    if (use < 5) {  // Slice(v, 0s or 1s, [before, dims, after]) over v's last dims, clamped
      const size_t len = target[0].size();
      std::vector<Val> c;
      for (const Val& v : vals_)
        if (len > 0 && rank_of(v) >= len) c.push_back(v);
      if (!c.empty()) {
        const Val v = one_of(c);
        const size_t first = rank_of(v) - len;
        Ints axes, starts;
        for (size_t j = 0; j < len; ++j) {
          axes.push_back(static_cast<int64_t>(first + j));
          starts.push_back(chance(0.3) ? 1 : 0);
        }
        Shapes out = v.shapes;
        bool empty = false;  // (no empty outputs: later ops would divide by their sizes)
        for (int k = 0; k < kScenarios; ++k)
          for (size_t j = 0; j < len; ++j) {
            const int64_t d = v.shapes[k][first + j];
            out[k][first + j] = std::min(target[k][j], d) - std::min(starts[j], d);
            empty |= out[k][first + j] < 1;
          }
        if (!empty)
          return made(b_.slice(v.id, b_.ints(starts), concat(before, after), b_.ints(axes)), out,
                      v.bound);
      }
    }
    if (use == 8 && idx.size() == 1) {  // Range(0 or 1, the dim, 1) as floats: positions
      const int64_t start = chance(0.3) ? 1 : 0;
      Shapes out;
      double bound = 1;
      bool empty = false;
      for (int k = 0; k < kScenarios; ++k) {
        out[k] = {part[k][0] - start};
        empty |= out[k][0] < 1;
        bound = std::max(bound, static_cast<double>(part[k][0]));
      }
      if (!empty) {
        const ValueId r = b_.range(b_.scalar<int64_t>(start), p, b_.scalar<int64_t>(1));
        return made(b_.cast(r, Attributes{{"to", int64_t{1}}}), out, bound);  // (FLOAT)
      }
    }
    if (max_numel(ts) > kMaxNumel) return unary(tame(pick()), rng_);
    const ValueId t = concat(before, after);
    if (use == 9) {  // a filled tensor of that shape, plus a value broadcasting to it
      const float fill = static_cast<float>(uniform(-4, 4)) / 4;
      const Val f = made(
          b_.constant_of_shape(t, Attributes{{"value", Tensor::from<float>({1}, {fill})}}), ts, 1);
      return binary(f, tame(pick_compatible(ts)), uniform(0, 2));
    }
    std::vector<Val> c;  // values Expand can broadcast to the target in every scenario
    for (const Val& v : vals_) {
      Shapes out;
      if (all_broadcast(v.shapes, ts, &out) && max_numel(out) <= kMaxNumel) c.push_back(v);
    }
    const Val v = c.empty() || chance(0.3) ? constant_like(ts, rng_, static_cast<uint32_t>(rng_()))
                                           : one_of(c);
    Shapes out;
    all_broadcast(v.shapes, ts, &out);
    return made(b_.expand(v.id, t), out, v.bound);
  }

  // Two chains alike but for their constants, from a graph input or an interpreted op's output.
  void twin() {
    ++twins;
    std::vector<Val> starts;
    for (const Val& v : vals_)
      if (v.start) starts.push_back(v);
    Val x = one_of(starts);  // bounded by kBound (interpreted() takes tamed values)
    if (chance(0.2)) {
      x = interpreted(tame(pick()));
      vals_.push_back(x);
    }
    const uint32_t shape_seed = static_cast<uint32_t>(rng_());
    for (bool alt : {false, true}) {
      Rng g(shape_seed);
      Val v = x;
      for (int i = draw(g, 1, 3); i > 0; --i) v = tame(twin_step(v, g, alt));
      output(v);
      if (chance(0.5)) vals_.push_back(v);
    }
  }

  // One op of a twin chain: `g` draws everything that decides shapes (the same for both twins),
  // rng_ the alternative constants of the second twin.
  Val twin_step(const Val& x, Rng& g, bool alt) {
    const int kind = draw(g, 0, 6);
    if (rank_of(x) == 0 && kind < 4) return unary(x, g);
    switch (kind) {
      case 0:
        return pad(x, g, rng_, alt);
      case 1:
        return slice(x, g, rng_, alt);
      case 2:
        return gather(x, g, rng_, alt);
      case 3:
        return reduction(x, g, rng_, alt);
      case 4: {  // x (op) a constant tensor, other values for the second twin
        const uint32_t ref_seed = static_cast<uint32_t>(g());
        const int op = draw(g, 0, 4);
        Rng shape_g(ref_seed);
        const Val c =
            constant_like(x.shapes, shape_g, alt ? static_cast<uint32_t>(rng_()) : ref_seed);
        return binary(x, c, op);
      }
      case 5:
        return matmul(x, g, alt);
      default:
        return unary(x, g);
    }
  }

  // x @ B, B [K, N]: a constant (K * N large enough for the kernel to pack it, or not), in the
  // second twin maybe a value computed each call: Celu(C + ReduceMin(x0) / K).
  Val matmul(const Val& x, Rng& g, bool alt) {
    const size_t r = rank_of(x);
    const int64_t K = r == 0 ? -1 : fixed(x.shapes, r - 1);
    const bool big = coin(g, 0.5);
    const uint32_t ref_seed = static_cast<uint32_t>(g());
    if (K <= 0) return unary(x, g);
    const int64_t N = big ? (4096 + K - 1) / K : kDims[draw(g, 0, 3)];
    const Shapes out = each(x.shapes, [&](Shape s) {
      s.back() = N;
      return s;
    });
    if (max_numel(out) > kMaxNumel) return unary(x, g);
    const float w = 1.0f / static_cast<float>(K);
    ValueId b;
    if (alt && chance(0.5)) {
      const ValueId c =
          b_.constant("", test::random_f32({K, N}, static_cast<uint32_t>(rng_()), -w, w));
      const ValueId m =
          b_.node(OpKind::ReduceMin, {inputs_[0].id}, {{"keepdims", int64_t{0}}}).front();
      b = b_.node(OpKind::Celu, {b_.add(c, b_.mul(m, b_.scalar(w)))}).front();
    } else {
      b = b_.constant(
          "", test::random_f32({K, N}, alt ? static_cast<uint32_t>(rng_()) : ref_seed, -w, w));
    }
    return made(b_.matmul(x.id, b), out, 3 * x.bound);
  }

  Rng rng_;
  GraphBuilder b_;
  std::vector<Val> vals_, inputs_;
  std::vector<ValueId> outs_;
  ValueId sizes_id_ = kNoValue;  // the graph input holding the symbols' sizes (i64[2]), if any
};

}  // namespace sgraph::fuzz::serving
