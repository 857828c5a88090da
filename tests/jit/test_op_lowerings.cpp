// Every op with a JIT lowering (ops::is_compilable), taken from the op table, compiled as one
// whole-graph region and compared with the interpreter: elementwise ops on samples generated from
// their arity and the dtypes their type rule accepts, the others on the samples their test files
// register (tests/jit/lowering_samples.h). A compilable op with neither fails the test, so a new
// op is covered without editing a list here.
//
// The same samples test the dynamic tier: a sample whose graph depends on its base size n only
// through its input shapes is warmed up at several n, compiled once as a dynamic region (the dims
// made from n are symbols), and that one kernel is checked against the interpreter at n = 1, 2, 7,
// 17, 64 and 1023. An op whose lowering takes symbolic dims must have such a sample.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
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
  // Fused: the sample reads Neg(-x) (Xor(!x, true) for bools), a value made in the region.
  const bool negatable = t != DType::u8;
  if (!fused_ || !negatable) {
    feeds.push_back(std::move(x));
    return v;
  }
  const Tensor neg =
      Interpreter([&] {
        GraphBuilder nb;
        const ValueId in = nb.input("x", t, to_dims(s));
        nb.output(t == DType::boolean ? nb.logical_xor(in, nb.scalar(true)) : nb.neg(in));
        return nb.build();
      }())
          .run(std::vector<Tensor>{x})
          .front();
  feeds.push_back(neg);
  return t == DType::boolean ? b.logical_xor(v, b.scalar(true)) : b.neg(v);
}

void LoweringSample::output(ValueId v) {
  if (fused_)
    v = b.graph().values[v].dtype == DType::boolean ? b.logical_xor(v, b.scalar(true))
                                                    : b.add(v, v);
  b.output(v);
}

}  // namespace sgraph::test

namespace test_op_lowerings {  // this file's own names (the tests build as unity sources)

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
  // The same region as a dynamic kernel whose dims are all constants (warmed up at one shape):
  // how stable ops merged into a dynamic region are compiled (SessionOptions::merge_tiers).
  Dynamic d(g, {s.feeds});
  CHECK_MESSAGE(compiled(d.c), "not compiled in a dynamic kernel: " << d.c.why_not);
  if (compiled(d.c)) CHECK(d.run_and_check(s.feeds, 1, s.rtol, s.atol));
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
// 1023, broadcasts, and scalar operands (Clip's bounds). kBroadcast is the set the op's other
// dtypes and its fused form run on; its floats are rounded to halves, so comparisons, Max and Min
// see ties.
const std::vector<std::vector<Shape>> kShapeSets = {
    {{1}, {1}, {1}},       {{7}, {7}, {7}},          {{1023}, {1023}, {1023}},
    {{7, 1}, {1, 5}, {5}}, {{2, 3, 4}, {4}, {3, 1}}, {{1023}, {}, {}},
};
constexpr size_t kBroadcast = 3;

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

std::string signature(OpKind op, const std::vector<DType>& types) {
  std::string s = std::string(op_name(op)) + "(";
  for (size_t k = 0; k < types.size(); ++k)
    s += (k ? ", " : "") + std::string(dtype_name(types[k]));
  return s + ")";
}

// The generated samples of an elementwise op: for each arity (variadic ops 1..3 inputs) and each
// dtype its type rule takes (all inputs alike, or a bool condition first), one region holding the
// op on the shape sets (all of them for the first dtype, else kBroadcast, or the first that
// builds); and for the first dtype, the fused form on kBroadcast. A dtype the type rule takes but
// the emitter declines is listed in `declined`; returns how many regions ran.
int check_elementwise(OpKind op, std::vector<std::string>& declined) {
  const ops::OpDef& def = ops::op_def(op);
  int ran = 0;
  for (int arity = std::max(def.min_inputs, 1); arity <= std::min(def.max_inputs, 3); ++arity) {
    const auto shapes_of = [&](size_t set) {
      return std::vector<Shape>(kShapeSets[set].begin(), kShapeSets[set].begin() + arity);
    };
    bool first_dtype = true;
    for (DType t : kDTypes) {
      std::vector<DType> types(arity, t);
      const auto building_sets = [&] {
        std::vector<size_t> sets;
        for (size_t set = 0; set < kShapeSets.size(); ++set)
          if (builds(op, types, shapes_of(set))) sets.push_back(set);
        return sets;
      };
      std::vector<size_t> sets = building_sets();
      if (sets.empty() && t != DType::boolean) {
        types[0] = DType::boolean;
        sets = building_sets();
      }
      if (sets.empty()) continue;
      if (!first_dtype) {
        const bool has = std::find(sets.begin(), sets.end(), kBroadcast) != sets.end();
        sets = {has ? kBroadcast : sets.front()};
      }
      {  // the op alone: does its emitter take these dtypes?
        LoweringSample probe(false);
        build_elementwise(probe, op, types, shapes_of(sets.front()));
        const Graph g = probe.b.build();
        const std::string why = why_not_compilable(g, whole_graph(g));
        if (test::contains(why, "no element emitter for operands")) {
          declined.push_back(signature(op, types));
          continue;
        }
        // The op's lowering refuses operands given as graph inputs (an integer Mod's divisor must
        // be a constant): its own samples cover the cases it takes.
        if (const std::string refused = ops::why_not_lowered(g, g.nodes[0]); !refused.empty()) {
          declined.push_back(signature(op, types) + ": " + refused);
          continue;
        }
      }
      for (bool fused : {false, true}) {
        if (fused && !first_dtype) continue;
        INFO(signature(op, types) << std::string(fused ? " fused" : ""));
        LoweringSample s(fused);
        if (fused) {
          const bool has = std::find(sets.begin(), sets.end(), kBroadcast) != sets.end();
          build_elementwise(s, op, types, shapes_of(has ? kBroadcast : sets.front()), true);
        } else {
          for (size_t set : sets)
            build_elementwise(s, op, types, shapes_of(set), set == kBroadcast);
        }
        if (!check_lowering(s.b.build(), s)) return ran;
        ++ran;
      }
      first_dtype = false;
    }
  }
  return ran;
}

// ---- the other ops: registered samples ----

// Each registered sample of `op`: at base sizes 1, 7 and 1023 in one region, and fused at 7;
// returns how many regions ran.
int check_registered(OpKind op) {
  int ran = 0;
  for (const test::LoweringSampleEntry& e : test::lowering_samples()) {
    if (e.op != op) continue;
    for (bool fused : {false, true}) {
      INFO(op_name(op) << " sample '" << std::string(e.variant) << "'"
                       << std::string(fused ? " fused" : ""));
      LoweringSample s(fused);
      for (int64_t n : fused ? std::vector<int64_t>{7} : std::vector<int64_t>{1, 7, 1023})
        e.build(s, n);
      const Graph g = s.b.build();
      CHECK_MESSAGE(has_node(g, op), "the sample has no " << op_name(op) << " node");
      if (!check_lowering(g, s)) return ran;
      ++ran;
    }
  }
  return ran;
}

// ---- the dynamic tier: one kernel for every value of n ----

using Build = std::function<void(LoweringSample&, int64_t)>;

struct Built {
  Graph g;
  std::vector<Tensor> feeds;
  double rtol, atol;
};

Built build_at(const Build& f, bool fused, int64_t n) {
  LoweringSample s(fused);
  f(s, n);
  return {s.b.build(), std::move(s.feeds), s.rtol, s.atol};
}

// g without its shapes: its listing with every computed value's shape unknown, and its constants'
// bytes. Equal for two sizes of a sample when n reaches the graph only through its input shapes.
std::string structure(Graph g) {
  std::string bytes;
  for (ValueInfo& v : g.values) {
    if (!v.initializer.defined()) {
      v.shape.reset();
      continue;
    }
    const auto* p = static_cast<const char*>(v.initializer.raw_data());
    bytes.append(p, p + v.initializer.nbytes());
  }
  return g.to_string() + bytes;
}

const int64_t kWarmupSizes[] = {2, 7, 17};
const int64_t kServeSizes[] = {1, 2, 7, 17, 64, 1023};

// Warms the sample up at kWarmupSizes, compiles it once as a dynamic region and checks that kernel
// at every kServeSizes against the interpreter. "" when it ran, else why it did not.
std::string check_dynamic(const Build& f, bool fused) {
  std::vector<Built> warm;
  for (int64_t n : kWarmupSizes) warm.push_back(build_at(f, fused, n));
  const std::string shape = structure(warm[1].g);
  for (const Built& w : warm)
    if (structure(w.g) != shape) return "its graph depends on n beyond its input shapes";
  Graph g = warm[1].g;
  for (ValueInfo& v : g.values)  // as a graph of unknown input shapes is
    if (!v.initializer.defined()) v.shape.reset();
  std::vector<std::vector<Tensor>> feeds;
  for (const Built& w : warm) feeds.push_back(w.feeds);
  Dynamic d(g, feeds);
  if (d.sd.symbols.empty()) return "no dim depends on n";
  // (As the Session's planner: a symbol the inputs do not give cannot be bound.)
  std::vector<bool> given(d.sd.symbols.size(), false);
  for (ValueId v : d.r.inputs)
    if (d.sd.values[v])
      for (const SymDim& dim : *d.sd.values[v])
        if (dim.symbolic()) given[static_cast<size_t>(dim.sym)] = true;
  for (ValueId v : d.r.outputs)
    if (d.sd.values[v])
      for (const SymDim& dim : *d.sd.values[v])
        if (dim.symbolic() && !given[static_cast<size_t>(dim.sym)])
          return "a symbol of its outputs is none of its inputs'";
  if (!compiled(d.c)) return d.c.why_not;
  int served = 0;
  for (int64_t n : kServeSizes) {
    CAPTURE(n);
    const Built b = build_at(f, fused, n);
    REQUIRE(structure(b.g) == shape);
    // A size below what the kernels need (Lowering::dynamic_needs, e.g. a slice of static
    // length k from a dim of n) is refused, as the runtime's guard refuses it; any other is run.
    const bool ran = d.run_and_check(b.feeds, 1, b.rtol, b.atol);
    if (!ran) {
      const std::optional<std::vector<int64_t>> syms = d.bind(b.feeds);
      CHECK_MESSAGE((syms && !d.needs_hold(*syms)), "the guard refused n = " << n);
    }
    served += ran;
    if (n == 64) CHECK(d.run_and_check(b.feeds, /*threads=*/2, b.rtol, b.atol));
  }
  CHECK_MESSAGE(served >= 3, "the kernel served only " << served << " sizes");
  return "";
}

// An elementwise op's dynamic samples, one per arity: its operands of shapes made from n
// (broadcasting static 1s and scalars against the symbolic dim), in the first dtype whose region
// compiles.
std::vector<Build> elementwise_dynamic(OpKind op) {
  const auto sets = [](int64_t n) {
    return std::vector<std::vector<Shape>>{
        {{n}, {n}, {n}}, {{n, 1}, {1, 5}, {5}}, {{2, n, 4}, {4}, {n, 1}}, {{n}, {}, {}}};
  };
  const ops::OpDef& def = ops::op_def(op);
  std::vector<Build> out;
  for (int arity = std::max(def.min_inputs, 1); arity <= std::min(def.max_inputs, 3); ++arity) {
    const auto shapes_of = [=](size_t set, int64_t n) {  // (kept by the builds)
      const std::vector<Shape> all = sets(n)[set];
      return std::vector<Shape>(all.begin(), all.begin() + arity);
    };
    bool found = false;
    for (DType t : kDTypes)
      for (bool bool_first : {false, true}) {
        std::vector<DType> types(arity, t);
        if (bool_first) types[0] = DType::boolean;
        std::vector<size_t> building;
        for (size_t set = 0; set < sets(7).size(); ++set)
          if (!found && builds(op, types, shapes_of(set, 7))) building.push_back(set);
        if (building.empty()) continue;
        Build f = [=](LoweringSample& s, int64_t n) {
          for (size_t set : building) build_elementwise(s, op, types, shapes_of(set, n));
        };
        const Built probe = build_at(f, false, 7);
        if (!why_not_compilable(probe.g, whole_graph(probe.g)).empty()) continue;
        out.push_back(std::move(f));
        found = true;
      }
  }
  return out;
}
}  // namespace

TEST_CASE("JIT lowerings: every compilable op matches the interpreter, from the op table") {
  int automatic = 0, registered = 0, runs = 0;
  std::vector<std::string> declined;  // dtypes the type rule takes and the JIT does not
  for (int i = 0; i < kNumOps; ++i) {
    const OpKind op = static_cast<OpKind>(i);
    if (!ops::is_compilable(op)) continue;
    const bool elementwise = ops::op_def(op).element != nullptr;
    const int from_samples = check_registered(op);
    const int generated = elementwise ? check_elementwise(op, declined) : 0;
    CHECK_MESSAGE(from_samples + generated > 0,
                  op_name(op) << " has a JIT lowering but no sample: "
                              << std::string(elementwise ? "no dtype or arity of it builds; " : "")
                              << "register one with SG_LOWERING_SAMPLE(" << op_name(op)
                              << ", ...) in its test file (tests/jit/lowering_samples.h)");
    automatic += generated > 0;
    registered += generated == 0 && from_samples > 0;
    runs += from_samples + generated;
  }
  MESSAGE(automatic << " ops from generated samples, " << registered << " from registered ones; "
                    << runs << " regions compiled");
  std::string list;
  for (const std::string& d : declined) list += "\n  " + d;
  MESSAGE("not compiled (the type rule takes them, the element emitter or the lowering does not):"
          << list);
  CHECK(automatic > 0);
  CHECK(registered > 0);
}

TEST_CASE("JIT lowerings: samples are registered only for ops with a lowering") {
  CHECK(!test::lowering_samples().empty());
  for (const test::LoweringSampleEntry& e : test::lowering_samples())
    CHECK_MESSAGE(ops::is_compilable(e.op),
                  "sample '" << e.variant << "' of " << op_name(e.op) << ", which has no lowering");
}

TEST_CASE("JIT lowerings (dynamic tier): one kernel per sample serves every n, from the op table") {
  std::map<std::string, std::vector<std::string>> not_run;  // op -> why each sample did not run
  int ops_run = 0, regions = 0;
  for (int i = 0; i < kNumOps; ++i) {
    const OpKind op = static_cast<OpKind>(i);
    if (!ops::is_compilable(op)) continue;
    std::vector<std::pair<std::string, Build>> samples;
    for (const test::LoweringSampleEntry& e : test::lowering_samples())
      if (e.op == op) samples.emplace_back(e.variant, e.build);
    if (ops::op_def(op).element)
      for (Build& f : elementwise_dynamic(op)) samples.emplace_back("generated", std::move(f));
    int ran = 0;
    for (const auto& [variant, f] : samples)
      for (bool fused : {false, true}) {
        INFO(op_name(op) << " sample '" << std::string(variant) << "'"
                         << std::string(fused ? " fused" : ""));
        const std::string why = check_dynamic(f, fused);
        if (why.empty()) {
          ++ran;
        } else if (!fused) {
          not_run[std::string(op_name(op))].push_back(variant + ": " + why);
        }
      }
    CHECK_MESSAGE((ran > 0 || !takes_symbolic_dims(op)),
                  op_name(op) << " takes symbolic dims but none of its samples ran dynamic");
    ops_run += ran > 0;
    regions += ran;
  }
  std::string list;
  for (const auto& [op, whys] : not_run)
    for (const std::string& w : whys) list += "\n  " + op + " " + w;
  MESSAGE(ops_run << " ops compiled dynamic, " << regions << " kernels checked at n = 1..1023; "
                  << "samples not compiled dynamic:" << list);
  CHECK(ops_run > 0);
}

}  // namespace test_op_lowerings
