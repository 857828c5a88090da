// Movement ops inside regions: Slice, Concat, Gather and Pad as index maps, Cast as an element
// emitter. Each op alone, fed by an elementwise op and feeding one, compiled as one region and
// compared with the interpreter exactly (these ops move or convert values: nothing may round).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "jit/region_test_util.h"

using namespace sgraph;
using namespace sgraph::test;
using namespace sgraph::test::region;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// An elementwise op reading `v` twice: v + v, or for bools Where(v Or v, 1.5, -2).
ValueId use_twice(GraphBuilder& b, ValueId v, DType t) {
  if (t != DType::boolean) return b.add(v, v);
  return b.where(b.logical_or(v, v), b.scalar(1.5f), b.scalar(-2.0f));
}

// The three regions of an index op `op(x)`: alone, of a computed input (Neg(x)), and feeding an
// elementwise op (op(x) + op(x), which also reads each element twice in one nest).
template <class MakeOp>
void check_three_ways(DType t, const Shape& s, const Tensor& x, MakeOp make) {
  const bool numeric = t != DType::boolean && t != DType::u8;  // Neg needs a signed dtype
  for (int form = 0; form < 3; ++form) {
    if (form == 1 && !numeric) continue;
    INFO("form " << form);
    GraphBuilder b;
    ValueId v = b.input("x", t, to_dims(s));
    if (form == 1) v = b.neg(v);
    v = make(b, v);
    if (form == 2) v = use_twice(b, v, t);
    b.output(v, "y");
    check_region_same(b.build(), {x});
  }
}

// ---- Cast ----

// Values every cast from `from` to `to` is defined on: within `from`'s range and, from a float,
// within `to`'s (the interpreter's static_cast of an out-of-range float is undefined).
std::pair<float, float> cast_range(DType from, DType to) {
  const auto range = [](DType t) -> std::pair<float, float> {
    if (t == DType::i8) return {-120, 120};
    if (t == DType::u8) return {0, 250};
    if (t == DType::boolean) return {0, 1};
    return {-1000, 1000};
  };
  auto r = range(from);
  if (is_float(from) && to != DType::boolean) {
    const auto [lo, hi] = range(to);
    r = {std::max(r.first, lo), std::min(r.second, hi)};
  }
  return r;
}

Tensor cast_input(DType from, DType to, const Shape& s, uint32_t seed) {
  const auto [lo, hi] = cast_range(from, to);
  Tensor x = random_of(from, s, seed, lo, hi);
  if (from == DType::f32 && x.numel() > 2) {  // exact integers and halves round as well
    x.data<float>()[0] = std::round(x.data<float>()[0]);
    x.data<float>()[1] = std::round(x.data<float>()[1]) + 0.5f;
  }
  return x;
}

void check_cast(DType from, DType to, const Shape& s, uint32_t seed) {
  INFO(dtype_name(from) << " -> " << dtype_name(to) << " " << shape_str(s));
  const Tensor x = cast_input(from, to, s, seed);
  const Attributes to_attr = {{"to", onnx_dtype_code(to)}};
  for (int form = 0; form < 3; ++form) {
    GraphBuilder b;
    ValueId v = b.input("x", from, to_dims(s));
    if (form == 1) v = from == DType::boolean ? b.logical_xor(v, b.scalar(true)) : b.abs(v);
    v = b.cast(v, to_attr);
    if (form == 2) v = use_twice(b, v, to);
    b.output(v, "y");
    check_region_same(b.build(), {x});
  }
}

const DType kDTypes[] = {DType::f32, DType::f64, DType::i32,    DType::i64,
                         DType::i8,  DType::u8,  DType::boolean};

}  // namespace

TEST_CASE("JIT movement: Cast between every pair of dtypes") {
  uint32_t seed = 1;
  for (DType from : kDTypes)
    for (DType to : kDTypes) check_cast(from, to, {7, 3}, seed++);
}

TEST_CASE("JIT movement: Cast on size-1, odd and large shapes") {
  uint32_t seed = 100;
  for (const Shape& s : {Shape{}, Shape{1}, Shape{7}, Shape{1023}, Shape{2, 1, 5}, Shape{300001}})
    for (auto [from, to] : {std::pair{DType::f32, DType::i32},
                            {DType::i64, DType::f32},
                            {DType::f64, DType::boolean},
                            {DType::u8, DType::f32}})
      check_cast(from, to, s, seed++);
}

TEST_CASE("JIT movement: Cast of NaN, infinities and signed zeros to bool and between floats") {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from<float>({6}, {std::nanf(""), inf, -inf, 0.0f, -0.0f, 1e-30f});
  for (DType to : {DType::boolean, DType::f64}) {
    GraphBuilder b;
    b.output(b.cast(b.input("x", DType::f32, {6}), Attributes{{"to", onnx_dtype_code(to)}}));
    check_region_same(b.build(), {x});
  }
  // f64 -> f32: rounding (0.1), underflow to -0 (-1e-300), a large finite value (3e38).
  const Tensor big = Tensor::from<double>({3}, {0.1, -1e-300, 3.0e38});
  GraphBuilder b;
  b.output(b.cast(b.input("x", DType::f64, {3}), Attributes{{"to", onnx_dtype_code(DType::f32)}}));
  check_region_same(b.build(), {big});
}

// ---- Slice ----

namespace {

struct SliceCase {
  Shape in;
  Ints starts, ends, axes, steps;  // empty axes or steps: the input is absent
};

const std::vector<SliceCase> kSlices = {
    {{7}, {2}, {5}, {}, {}},
    {{1023}, {1}, {1022}, {0}, {2}},
    {{1023}, {-1}, {kMin}, {0}, {-1}},  // reversed whole
    {{1023}, {-3}, {-1000}, {-1}, {-7}},
    {{2, 1, 5}, {0, 0}, {1, kMax}, {0, 2}, {}},
    {{3, 7, 5}, {-100, 10}, {100, -100}, {0, 1}, {1, -2}},  // clamped start and end
    {{3, 7, 5}, {kMax}, {0}, {1}, {-3}},                    // backward from past the end
    {{4, 6}, {1}, {kMax}, {-1}, {100}},                     // a step larger than the axis
    {{4, 6}, {kMin}, {kMax}, {1}, {kMax}},
    {{4, 6}, {5}, {2}, {1}, {1}},  // empty
    {{1, 1}, {0}, {1}, {1}, {}},
    {{5, 1, 7}, {6, 0}, {0, 1}, {-1, 1}, {-2, 1}},
    {{4, 1023}, {0, 1}, {4, 1023}, {0, 1}, {3, 2}},
    {{64, 1000}, {3}, {-3}, {1}, {}},
};

ValueId slice_of(GraphBuilder& b, ValueId x, const SliceCase& c, bool as_i32) {
  const auto ints = [&](const Ints& v) {
    if (!as_i32) return b.ints(v);
    std::vector<int32_t> w;
    for (int64_t e : v)
      w.push_back(static_cast<int32_t>(std::clamp<int64_t>(e, INT32_MIN, INT32_MAX)));
    return b.constant("", Tensor::from<int32_t>({static_cast<int64_t>(w.size())}, w));
  };
  std::vector<ValueId> in = {x, ints(c.starts), ints(c.ends)};
  if (!c.axes.empty() || !c.steps.empty()) in.push_back(c.axes.empty() ? kNoValue : ints(c.axes));
  if (!c.steps.empty()) in.push_back(ints(c.steps));
  return b.node(OpKind::Slice, in).front();
}

}  // namespace

TEST_CASE("JIT movement: Slice with negative, clamped and overflowing bounds and steps") {
  uint32_t seed = 200;
  for (const SliceCase& c : kSlices) {
    INFO(shape_str(c.in) << " starts " << shape_str(c.starts) << " ends " << shape_str(c.ends)
                         << " axes " << shape_str(c.axes) << " steps " << shape_str(c.steps));
    const Tensor x = random_of(DType::f32, c.in, seed++, -5, 5);
    check_three_ways(DType::f32, c.in, x,
                     [&](GraphBuilder& b, ValueId v) { return slice_of(b, v, c, seed % 2 == 0); });
  }
}

TEST_CASE("JIT movement: Slice of other dtypes, and the opset-1 attribute form") {
  const SliceCase c = {{5, 6}, {-2, 1}, {0, 6}, {0, 1}, {-1, 2}};
  for (DType t : {DType::i64, DType::u8, DType::boolean, DType::f64}) {
    INFO(dtype_name(t));
    check_three_ways(t, c.in, random_of(t, c.in, 3, 0, 100),
                     [&](GraphBuilder& b, ValueId v) { return slice_of(b, v, c, false); });
  }
  const Tensor x = random_of(DType::f32, {4, 9}, 4, -1, 1);
  for (bool with_axes : {false, true}) {
    Attributes a = {{"starts", Ints{-3, 2}}, {"ends", Ints{kMax, -1}}};
    if (with_axes) a.set("axes", Ints{1, 0});
    check_three_ways(DType::f32, {4, 9}, x, [&](GraphBuilder& b, ValueId v) {
      return b.node(OpKind::Slice, {v}, a).front();
    });
  }
}

// ---- Concat ----

TEST_CASE("JIT movement: Concat of 2 and 5 operands, empty ones, negative axes") {
  struct Case {
    std::vector<Shape> in;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{{3, 4}, {3, 5}}, 1},
      {{{1, 7}, {1023, 7}}, 0},
      {{{2, 1, 3}, {2, 0, 3}, {2, 4, 3}, {2, 7, 3}, {2, 1, 3}}, -2},
      {{{7}, {0}, {1}}, 0},
      {{{8, 1023}, {8, 1}}, -1},
      {{{1, 1}, {1, 1}}, 1},
      {{{2, 3, 5}, {2, 3, 5}, {2, 3, 5}, {2, 3, 5}, {2, 3, 5}}, 0},
      {{{64, 500}, {64, 524}}, 1},
  };
  uint32_t seed = 300;
  for (const Case& c : cases)
    for (DType t : {DType::f32, DType::i64, DType::boolean}) {
      INFO(dtype_name(t) << " axis " << c.axis << " operand 0 " << shape_str(c.in[0]));
      std::vector<Tensor> feeds;
      for (const Shape& s : c.in) feeds.push_back(random_of(t, s, seed++, -9, 9));
      for (int form = 0; form < 3; ++form) {
        if (form == 1 && t == DType::boolean) continue;
        GraphBuilder b;
        std::vector<ValueId> ops;
        for (size_t i = 0; i < c.in.size(); ++i) {
          ops.push_back(b.input("x" + std::to_string(i), t, to_dims(c.in[i])));
          if (form == 1 && i % 2 == 0) ops.back() = b.neg(ops.back());  // some computed
        }
        ValueId y = b.node(OpKind::Concat, ops, {{"axis", c.axis}}).front();
        if (form == 2) y = use_twice(b, y, t);
        b.output(y, "y");
        check_region_same(b.build(), feeds);
      }
    }
}

TEST_CASE("JIT movement: Concat of one value with itself and of constants") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {3, 4});
  const ValueId c = b.constant("c", random_of(DType::f32, {3, 2}, 1, -1, 1));
  b.output(b.concat(x, c, b.relu(x), Attributes{{"axis", int64_t{-1}}}));
  check_region_same(b.build(), {random_of(DType::f32, {3, 4}, 2, -1, 1)});
}

// ---- Gather ----

namespace {

Tensor i64s(Shape s, std::vector<int64_t> v) { return Tensor::from<int64_t>(std::move(s), v); }

}  // namespace

TEST_CASE("JIT movement: Gather by constant indices, 0-d, 1-d and 2-d, negative, any axis") {
  struct Case {
    Shape data;
    Tensor indices;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{5, 4}, Tensor::scalar<int64_t>(2), 0},
      {{5, 4}, Tensor::scalar<int64_t>(-1), 1},
      {{5, 4}, i64s({5}, {4, -1, 0, 0, -5}), 0},
      {{2, 6, 3}, i64s({3, 2}, {-1, 0, 5, 2, 3, 3}), 1},
      {{2, 6, 3}, Tensor::from<int32_t>({2, 2}, {2, -3, 0, 1}), -1},
      {{7}, i64s({1, 1}, {6}), 0},
      {{1023, 3}, i64s({4}, {1022, 0, -1023, 511}), 0},
      {{3, 1023}, i64s({2}, {1, -2}), -1},
  };
  uint32_t seed = 400;
  for (const Case& c : cases) {
    INFO(shape_str(c.data) << " indices " << shape_str(c.indices.shape()) << " axis " << c.axis);
    const Tensor x = random_of(DType::f32, c.data, seed++, -5, 5);
    check_three_ways(DType::f32, c.data, x, [&](GraphBuilder& b, ValueId v) {
      return b.gather(v, b.constant("idx", c.indices), Attributes{{"axis", c.axis}});
    });
  }
}

TEST_CASE("JIT movement: Gather from a constant table by input or computed indices") {
  const Tensor table = random_of(DType::f32, {1023, 8}, 1, -1, 1);
  const Tensor ids = i64s({2, 7}, {0, 5, 1022, -1, -1023, 17, 3, 3, 3, 900, 1, 2, 0, -500});
  {  // an embedding lookup, then an elementwise op
    GraphBuilder b;
    const ValueId e = b.gather(b.constant("table", table), b.input("ids", DType::i64, {2, 7}));
    b.output(b.mul(e, b.input("scale", DType::f32, {8})));
    check_region_same(b.build(), {ids, random_of(DType::f32, {8}, 2, -2, 2)});
  }
  {  // i32 indices computed in the region (ids + 1, from floats by Cast), a middle axis
    const Tensor lut = random_of(DType::i32, {3, 50, 2}, 3, -100, 100);
    GraphBuilder b;
    const ValueId f = b.input("f", DType::f32, {9});
    const ValueId k =
        b.add(b.cast(f, Attributes{{"to", onnx_dtype_code(DType::i32)}}), b.scalar<int32_t>(1));
    b.output(b.gather(b.constant("lut", lut), k, Attributes{{"axis", int64_t{1}}}));
    check_region_same(b.build(), {random_of(DType::f32, {9}, 4, -50.4f, 48.4f)});
  }
}

TEST_CASE("JIT movement: a Gather kernel clamps out-of-range input indices (no error, no fault)") {
  // The interpreter throws on these indices; a kernel cannot, so it reads the clamped element.
  GraphBuilder b;
  const ValueId ids = b.input("ids", DType::i64, {4});
  b.output(b.gather(b.constant("table", Tensor::from<float>({5}, {10, 11, 12, 13, 14})), ids));
  const Graph g = b.build();
  std::vector<Shape> shapes(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v)
    shapes[v] = g.values[v].initializer.defined() ? g.values[v].initializer.shape() : Shape{4};
  jit::Jit& jit = shared_jit();
  const jit::CompiledRegion c = jit::compile_region(jit, g, whole_graph(g), shapes, fresh_name());
  REQUIRE_MESSAGE(static_cast<bool>(c.kernel.fn), c.why_not);
  Tensor in = i64s({4}, {7, -9, 2, kMax}), out(DType::f32, {4});
  const Region r = whole_graph(g);
  std::vector<void*> buffers;
  for (ValueId v : r.inputs)
    buffers.push_back(v == ids ? in.raw_data()
                               : const_cast<void*>(g.values[v].initializer.raw_data()));
  buffers.push_back(out.raw_data());
  c.kernel.fn(buffers.data(), nullptr, nullptr);
  jit.remove(c.kernel.handle);
  check_close(out, {4}, {14, 10, 12, 14});  // 7 -> 4, -9 -> -4 -> 0, kMax -> 4
}

TEST_CASE("JIT movement: constant Gather indices out of range are an error at compile time") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {3, 4});
  b.output(b.gather(x, b.constant("idx", i64s({2}, {1, 4})), Attributes{{"axis", int64_t{1}}}));
  const Graph g = b.build();
  std::vector<Shape> shapes(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueInfo& info = g.values[v];
    shapes[v] = info.initializer.defined() ? info.initializer.shape() : Shape{3, 4};
  }
  shapes[g.outputs[0]] = {3, 2};
  CHECK(contains(
      error_of([&] { jit::compile_region(shared_jit(), g, whole_graph(g), shapes, fresh_name()); }),
      "index 4 is out of range for axis 1 of size 4"));
}

// ---- Pad ----

namespace {

struct PadCase {
  Shape in;
  Ints pads, axes;  // empty axes: the input is absent
};

// Valid for every mode (reflect needs each pad smaller than the cropped axis).
const std::vector<PadCase> kPads = {
    {{7}, {2, 3}, {}},
    {{1023}, {1, 0}, {}},
    {{3, 5}, {1, 2, 2, 1}, {}},
    {{2, 1, 5}, {0, 0, 1, 1, 0, 4}, {}},
    {{6, 7}, {-1, 2, 1, -3}, {}},  // crop and pad
    {{3, 4, 5}, {1, 2, 2, 0}, {-1, 0}},
    {{1, 1}, {0, 0, 0, 0}, {}},
    {{64, 1023}, {0, 1, 0, 1}, {}},
};

ValueId pad_of(GraphBuilder& b, ValueId x, const PadCase& c, const std::string& mode,
               ValueId value) {
  std::vector<ValueId> in = {x, b.ints(c.pads), value};
  if (!c.axes.empty()) in.push_back(b.ints(c.axes));
  while (in.back() == kNoValue) in.pop_back();
  return b.node(OpKind::Pad, in, {{"mode", mode}}).front();
}

}  // namespace

TEST_CASE("JIT movement: Pad in constant, edge and reflect modes, cropping, axes") {
  uint32_t seed = 500;
  for (const std::string mode : {"constant", "edge", "reflect"})
    for (const PadCase& c : kPads) {
      INFO(mode << " " << shape_str(c.in) << " pads " << shape_str(c.pads) << " axes "
                << shape_str(c.axes));
      const Tensor x = random_of(DType::f32, c.in, seed++, -5, 5);
      check_three_ways(DType::f32, c.in, x, [&](GraphBuilder& b, ValueId v) {
        const ValueId value = mode == "constant" && seed % 2 ? b.scalar(2.5f) : kNoValue;
        return pad_of(b, v, c, mode, value);
      });
    }
}

TEST_CASE("JIT movement: Pad's value from an input, other dtypes, the attribute form") {
  const PadCase c = {{3, 4}, {1, 0, 2, 3}, {}};
  {  // the pad value is a region input
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {3, 4});
    b.output(pad_of(b, b.neg(x), c, "constant", b.input("v", DType::f32, {})));
    check_region_same(b.build(), {random_of(DType::f32, {3, 4}, 1, -1, 1), Tensor::scalar(7.0f)});
  }
  for (DType t : {DType::i64, DType::u8, DType::boolean})
    for (const std::string mode : {"constant", "edge", "reflect"}) {
      INFO(dtype_name(t) << " " << mode);
      check_three_ways(t, c.in, random_of(t, c.in, 2, 0, 100),
                       [&](GraphBuilder& b, ValueId v) { return pad_of(b, v, c, mode, kNoValue); });
    }
  for (const std::string mode : {"constant", "reflect"}) {  // opset 2: pads and value attributes
    const Attributes a = {{"mode", mode}, {"pads", Ints{0, 2, 1, 1}}, {"value", -1.5}};
    check_three_ways(
        DType::f32, c.in, random_of(DType::f32, c.in, 3, -1, 1),
        [&](GraphBuilder& b, ValueId v) { return b.node(OpKind::Pad, {v}, a).front(); });
  }
  const PadCase empty = {{2, 3}, {0, -3, 0, 2}, {}};  // axis 1 cropped away, then padded
  check_three_ways(
      DType::f32, empty.in, random_of(DType::f32, empty.in, 4, -1, 1),
      [&](GraphBuilder& b, ValueId v) { return pad_of(b, v, empty, "constant", b.scalar(3.0f)); });
}

// ---- Together, and what cannot be compiled ----

TEST_CASE("JIT movement: rotate-half (Slice, Neg, Concat) with Cast and Pad in one region") {
  const Shape s = {2, 8, 16};
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, to_dims(s));
  const ValueId lo = b.slice(x, b.ints({0}), b.ints({8}), b.ints({-1}));
  const ValueId hi = b.slice(x, b.ints({8}), b.ints({kMax}), b.ints({-1}));
  const ValueId rot = b.concat(b.neg(hi), lo, Attributes{{"axis", int64_t{-1}}});
  const ValueId y = b.add(b.mul(x, b.input("c", DType::f32, {16})), rot);
  const ValueId p = b.pad(y, b.ints({0, 1, 0, 0, 2, 0}), Attributes{{"mode", std::string("edge")}});
  b.output(b.cast(p, Attributes{{"to", onnx_dtype_code(DType::f64)}}), "y");
  check_region_same(b.build(),
                    {random_of(DType::f32, s, 1, -2, 2), random_of(DType::f32, {16}, 2, -1, 1)});
}

TEST_CASE("JIT movement: index ops whose parameters are not constants say why") {
  const auto why = [](const Graph& g) { return jit::why_not_compilable(g, whole_graph(g)); };
  {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {4, 5});
    const ValueId starts = b.input("starts", DType::i64, {1});
    b.output(b.node(OpKind::Slice, {b.relu(x), starts, b.ints({3})}, {}, 1, "sl").front());
    CHECK(contains(why(b.build()), "node 'sl' (Slice): its starts input is not a constant"));
  }
  {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {4, 5});
    const ValueId steps = b.input("steps", DType::i64, {1});
    const ValueId one = b.ints({1});
    b.output(b.node(OpKind::Slice, {x, one, one, one, steps}, {}, 1, "sl").front());
    CHECK(contains(why(b.build()), "node 'sl' (Slice): its steps input is not a constant"));
  }
  {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {4, 5});
    const ValueId pads = b.input("pads", DType::i64, {4});
    b.output(b.node(OpKind::Pad, {x, pads}, {}, 1, "pd").front());
    CHECK(contains(why(b.build()), "node 'pd' (Pad): its pads input is not a constant"));
  }
  {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {4, 5});
    b.output(b.node(OpKind::Gather, {x, b.input("i", DType::i64, {2})}, {}, 1, "ga").front());
    CHECK(contains(why(b.build()),
                   "node 'ga' (Gather): neither its data nor its indices are constants"));
  }
}
