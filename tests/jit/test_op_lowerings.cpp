// Every op with a JIT lowering (ops::is_compilable), taken from the op table, compiled as one
// whole-graph region and compared with the interpreter: elementwise ops on samples generated from
// their arity and the dtypes their type rule accepts, the others on the samples their test files
// register (tests/jit/lowering_samples.h). A compilable op with neither fails the test, so a new
// op is covered without editing a list here.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "jit/lowering_samples.h"
#include "jit/region_test_util.h"
#include "ops/op.h"

using namespace sgraph;
using namespace sgraph::test::region;
using sgraph::test::LoweringSample;

namespace sgraph::test {

ValueId LoweringSample::input(DType t, Shape s, float lo, float hi, bool halves) {
  const uint32_t seed = 1000 + static_cast<uint32_t>(feeds.size()) * 7919;
  Tensor x = random_of(t, s, seed, lo, hi);
  if (halves && is_float(t))
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double h = std::round(x.at_double(i) * 2) / 2;
      if (h >= lo && h <= hi) ops::visit_float(t, [&]<class T>() { x.data<T>()[i] = T(h); });
    }
  const ValueId v = b.input("x" + std::to_string(feeds.size()), t, to_dims(s));
  // Fused: the sample reads Neg(-x) (Not(!x) for bools), a value made in the region.
  const bool negatable = t != DType::u8;
  if (!fused_ || !negatable) {
    feeds.push_back(std::move(x));
    return v;
  }
  const Tensor neg = Interpreter([&] {
                       GraphBuilder nb;
                       const ValueId in = nb.input("x", t, to_dims(s));
                       nb.output(t == DType::boolean ? nb.logical_not(in) : nb.neg(in));
                       return nb.build();
                     }())
                         .run(std::vector<Tensor>{x})
                         .front();
  feeds.push_back(neg);
  return t == DType::boolean ? b.logical_not(v) : b.neg(v);
}

void LoweringSample::output(ValueId v) {
  if (fused_) v = b.graph().values[v].dtype == DType::boolean ? b.logical_not(v) : b.add(v, v);
  b.output(v);
}

}  // namespace sgraph::test

namespace {

// Compiles g as one region and compares it with the interpreter; false (with a failed check)
// when it does not compile.
bool check_lowering(const Graph& g, const LoweringSample& s) {
  const Region r = whole_graph(g);
  const std::string why = why_not_compilable(g, r);
  CHECK_MESSAGE(why.empty(), "does not compile: " << why);
  if (!why.empty()) return false;
  const RegionRun run = run_region(g, s.feeds);
  REQUIRE(run.got.size() == run.want.size());
  for (size_t i = 0; i < run.got.size(); ++i) {
    if (is_float(run.want[i].dtype()))
      test::check_tensors_close(run.got[i], run.want[i], s.rtol, s.atol);
    else
      check_same(run.got[i], run.want[i]);
  }
  return true;
}

bool has_node(const Graph& g, OpKind op) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op == op; });
}

// ---- elementwise ops: samples from the arity ----

// Where an op's input is defined (the default: [-3, 3]). Only domains here: which ops are tested
// comes from the op table.
std::pair<float, float> domain(OpKind op, size_t input, DType t) {
  std::pair<float, float> r = {-3, 3};
  switch (op) {
    case OpKind::Log:
      r = {0.01f, 10};
      break;
    case OpKind::Sqrt:
      r = {0, 10};
      break;
    case OpKind::Acos:
    case OpKind::Asin:
      r = {-1, 1};
      break;
    case OpKind::Acosh:
      r = {1, 5};
      break;
    case OpKind::Atanh:
      r = {-0.9f, 0.9f};
      break;
    case OpKind::Tan:
      r = {-1.5f, 1.5f};
      break;
    case OpKind::Reciprocal:
      r = {0.5f, 5};
      break;
    case OpKind::Div:
    case OpKind::Mod:  // no zero divisors
      if (input == 1) r = is_float(t) ? std::pair{0.5f, 3.0f} : std::pair{1.0f, 9.0f};
      break;
    case OpKind::Pow:  // small exponents of positive bases (integers: of any base)
      if (input == 0 && is_float(t)) r = {0.1f, 3};
      if (input == 1) r = is_float(t) ? std::pair{-2.0f, 2.0f} : std::pair{0.0f, 3.0f};
      break;
    default:
      break;
  }
  if (t == DType::u8) r.first = std::max(r.first, 0.0f);
  return r;
}

// The input shapes of the generated samples, first `arity` of each: same shapes of sizes 1, 7 and
// 1023, a scalar, and broadcasts. Set 4 is the one every dtype runs on (its floats rounded to
// halves, so comparisons, Max and Min see ties) and, with set 2, in the fused form.
const std::vector<std::vector<Shape>> kShapeSets = {
    {{1}, {1}, {1}},       {{7}, {7}, {7}},          {{1023}, {1023}, {1023}}, {{}, {}, {}},
    {{7, 1}, {1, 5}, {5}}, {{2, 3, 4}, {4}, {3, 1}}, {{1023}, {1}, {}},        {{2, 1, 5}, {}, {}},
};

// Builds op(inputs) into s: input k of dtype types[k] and shape shapes[k] (float values rounded
// to halves when `halves`); throws sgraph::Error where the op's type or shape rule refuses them.
void build_elementwise(LoweringSample& s, OpKind op, const std::vector<DType>& types,
                       const std::vector<Shape>& shapes, bool halves = false) {
  std::vector<ValueId> in;
  for (size_t k = 0; k < types.size(); ++k) {
    const auto [lo, hi] = domain(op, k, types[k]);
    in.push_back(s.input(types[k], shapes[k], lo, hi, halves));
  }
  s.output(s.b.node(op, in).front());
}

bool builds(OpKind op, const std::vector<DType>& types, const std::vector<Shape>& shapes) {
  try {
    LoweringSample s(false);
    build_elementwise(s, op, types, shapes);
    s.b.build();
    return true;
  } catch (const Error&) {
    return false;
  }
}

const DType kDTypes[] = {DType::f32, DType::f64, DType::i32,    DType::i64,
                         DType::i8,  DType::u8,  DType::boolean};

// Runs the generated samples of an elementwise op; returns how many ran.
int check_elementwise(OpKind op) {
  const ops::OpDef& def = ops::op_def(op);
  int ran = 0;
  for (int arity = std::max(def.min_inputs, 1); arity <= std::min(def.max_inputs, 3); ++arity) {
    bool first_dtype = true;
    const auto shapes_of = [&](size_t set) {
      return std::vector<Shape>(kShapeSets[set].begin(), kShapeSets[set].begin() + arity);
    };
    const auto builds_on_any = [&](const std::vector<DType>& types) {
      for (size_t set = 0; set < kShapeSets.size(); ++set)
        if (builds(op, types, shapes_of(set))) return true;
      return false;
    };
    for (DType t : kDTypes) {
      // Every input of dtype t, or a bool condition first (Where).
      std::vector<DType> types(arity, t);
      if (!builds_on_any(types)) {
        types[0] = DType::boolean;
        if (t == DType::boolean || !builds_on_any(types)) continue;
      }
      // The first dtype the op takes on every shape set, the others on a broadcast (or the first
      // set that builds: Clip's bounds must be scalars).
      std::vector<size_t> sets;
      for (size_t set = 0; set < kShapeSets.size(); ++set)
        if ((first_dtype || set == 4) && builds(op, types, shapes_of(set))) sets.push_back(set);
      for (size_t set = 0; sets.empty() && set < kShapeSets.size(); ++set)
        if (builds(op, types, shapes_of(set))) sets.push_back(set);
      for (size_t set : sets) {
        const std::vector<Shape> shapes = shapes_of(set);
        for (bool fused : {false, true}) {
          if (fused && set != 4 && set != 2 && sets.size() > 1) continue;
          std::string what;
          for (size_t k = 0; k < types.size(); ++k)
            what += std::string(k ? ", " : "") + std::string(dtype_name(types[k])) +
                    shape_str(shapes[k]);
          INFO(op_name(op) << "(" << what << ")" << (fused ? " fused" : ""));
          LoweringSample s(fused);
          build_elementwise(s, op, types, shapes, /*halves=*/set == 4);
          if (!check_lowering(s.b.build(), s)) return ran;
          ++ran;
        }
      }
      first_dtype = false;
    }
  }
  return ran;
}

// ---- the other ops: registered samples ----

int check_registered(OpKind op) {
  int ran = 0;
  for (const test::LoweringSampleEntry& e : test::lowering_samples()) {
    if (e.op != op) continue;
    for (int64_t n : {1, 7, 1023})
      for (bool fused : {false, true}) {
        INFO(op_name(op) << " sample '" << e.variant << "' n=" << n << (fused ? " fused" : ""));
        LoweringSample s(fused);
        e.build(s, n);
        const Graph g = s.b.build();
        CHECK_MESSAGE(has_node(g, op), "the sample has no " << op_name(op) << " node");
        if (!check_lowering(g, s)) return ran;
        ++ran;
      }
  }
  return ran;
}

}  // namespace

TEST_CASE("JIT lowerings: every compilable op matches the interpreter, from the op table") {
  int automatic = 0, registered = 0, runs = 0;
  for (int i = 0; i < kNumOps; ++i) {
    const OpKind op = static_cast<OpKind>(i);
    if (!ops::is_compilable(op)) continue;
    const bool elementwise = ops::op_def(op).element != nullptr;
    const int from_samples = check_registered(op);
    const int generated = elementwise ? check_elementwise(op) : 0;
    CHECK_MESSAGE(from_samples + generated > 0,
                  op_name(op) << " has a JIT lowering but no sample: "
                              << (elementwise ? "no dtype or arity of it builds; " : "")
                              << "register one with SG_LOWERING_SAMPLE(" << op_name(op)
                              << ", ...) in its test file (tests/jit/lowering_samples.h)");
    automatic += generated > 0;
    registered += generated == 0 && from_samples > 0;
    runs += from_samples + generated;
  }
  MESSAGE(automatic << " ops from generated samples, " << registered << " from registered ones; "
                    << runs << " regions compiled");
  CHECK(automatic > 0);
  CHECK(registered > 0);
}

TEST_CASE("JIT lowerings: samples are registered only for ops with a lowering") {
  CHECK(!test::lowering_samples().empty());
  for (const test::LoweringSampleEntry& e : test::lowering_samples())
    CHECK_MESSAGE(ops::is_compilable(e.op),
                  "sample '" << e.variant << "' of " << op_name(e.op) << ", which has no lowering");
}
