// Conv, MaxPool, AveragePool, GlobalAveragePool and BatchNormalization inside regions, alone and
// in the chains CNNs are made of, compared with the interpreter: direct and im2col + GEMM convs,
// groups and depthwise, pads / strides / dilations / auto_pad / ceil_mode, 1-D to 3-D, inputs
// read in place or computed in the region, f64, and split over threads.

#include <limits>
#include <random>

#include "jit/host.h"
#include "jit/kernel_runtime.h"
#include "jit/region_test_util.h"
#include "ops/winograd.h"

using namespace sgraph;
using namespace sgraph::test::region;

namespace {

struct ConvCase {
  const char* what;
  Shape x, w;
  Attributes attrs;
};

Attributes window(Ints pads, Ints strides = {}, Ints dilations = {}) {
  Attributes a;
  if (!pads.empty()) a.set("pads", std::move(pads));
  if (!strides.empty()) a.set("strides", std::move(strides));
  if (!dilations.empty()) a.set("dilations", std::move(dilations));
  return a;
}

Attributes with(Attributes a, const std::string& name, AttrValue v) {
  a.set(name, std::move(v));
  return a;
}

// The way is decided by K = C/group * prod(kernel): direct when K <= 32 for a depthwise conv (one
// output channel per group) and K <= 16 for a dense one, unless strided along the last dim with
// several output channels per group; else im2col + GEMM.
const std::vector<ConvCase> kConvCases = {
    {"direct 3x3 pads 1 (K 9)", {1, 1, 9, 11}, {8, 1, 3, 3}, window({1, 1, 1, 1})},
    {"GEMM 3x3 pads 1 (K 27, dense)", {1, 3, 9, 11}, {8, 3, 3, 3}, window({1, 1, 1, 1})},
    {"GEMM 3x3 pads 1 (K 45), batch 2", {2, 5, 9, 11}, {7, 5, 3, 3}, window({1, 1, 1, 1})},
    {"depthwise stride 2",
     {1, 6, 10, 7},
     {6, 1, 3, 3},
     with(window({1, 1, 1, 1}, {2, 2}), "group", int64_t{6})},
    {"depthwise 5x5 multiplier 2",
     {2, 3, 8, 9},
     {6, 1, 5, 5},
     with(window({2, 2, 2, 2}), "group", int64_t{3})},
    {"direct groups 4, dilation 2",
     {1, 4, 7, 7},
     {16, 1, 3, 3},
     with(window({2, 2, 2, 2}, {}, {2, 2}), "group", int64_t{4})},
    {"GEMM groups 4, stride 2",
     {1, 16, 8, 9},
     {12, 4, 3, 3},
     with(window({1, 1, 1, 1}, {2, 2}), "group", int64_t{4})},
    {"GEMM 1x1 (the input is the matrix)", {1, 33, 5, 6}, {17, 33, 1, 1}, {}},
    {"GEMM 1x1, K 32 (dense)", {1, 32, 3, 25}, {24, 32, 1, 1}, {}},
    {"GEMM 1x1 stride 2", {2, 40, 5, 6}, {8, 40, 1, 1}, window({}, {2, 2})},
    {"GEMM no pads, rectangular kernel", {1, 9, 8, 7}, {5, 9, 2, 3}, {}},
    {"asymmetric pads", {1, 2, 6, 7}, {3, 2, 3, 3}, window({0, 1, 2, 0})},
    {"direct, strided along rows only", {1, 2, 9, 8}, {6, 2, 2, 3}, window({1, 1, 1, 1}, {2, 1})},
    {"GEMM: strided, SAME_UPPER, even kernel",
     {1, 4, 9, 8},
     {5, 4, 4, 2},
     with(window({}, {2, 2}), "auto_pad", std::string("SAME_UPPER"))},
    {"SAME_LOWER GEMM",
     {1, 6, 7, 5},
     {4, 6, 4, 3},
     with(window({}, {2, 1}), "auto_pad", std::string("SAME_LOWER"))},
    {"GEMM: VALID, dilated, strided",
     {1, 3, 11, 9},
     {2, 3, 3, 2},
     with(window({}, {1, 2}, {3, 2}), "auto_pad", std::string("VALID"))},
    {"1-D direct", {2, 4, 13}, {5, 4, 3}, window({1, 1}, {}, {2})},
    {"1-D GEMM", {1, 12, 17}, {6, 12, 5}, window({2, 1}, {3})},
    {"3-D", {1, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, window({1, 0, 1, 0, 1, 1})},
};

Tensor rnd(DType t, const Shape& s, uint32_t seed) { return random_of(t, s, seed, -1, 1); }

// x -> [x * 1.5 when computed] -> Conv(., W, B?) -> [Relu], f32 or f64.
void check_conv(const ConvCase& c, DType t, bool computed, bool bias, bool relu, int threads = 1) {
  INFO(c.what << (computed ? ", computed input" : "") << (bias ? ", bias" : "")
              << (relu ? ", relu" : "") << ", " << dtype_name(t) << ", threads " << threads);
  GraphBuilder b;
  ValueId x = b.input("x", t, to_dims(c.x));
  if (computed) x = b.mul(x, b.constant("k", rnd(t, {1}, 9)));
  std::vector<ValueId> in = {x, b.constant("w", rnd(t, c.w, 2))};
  if (bias) in.push_back(b.constant("b", rnd(t, {c.w[0]}, 3)));
  ValueId y = b.node(OpKind::Conv, in, c.attrs).front();
  if (relu) y = b.relu(y);
  b.output(y);
  const bool f64 = t == DType::f64;
  check_region(b.build(), {rnd(t, c.x, 1)}, f64 ? 1e-12 : 1e-4, f64 ? 1e-12 : 1e-5, threads);
}

// A BatchNormalization's parameters (scale > 0, var > 0), as constants of dtype t.
std::vector<ValueId> bn_params(GraphBuilder& b, DType t, int64_t c, uint32_t seed) {
  return {b.constant("", random_of(t, {c}, seed, 0.5, 1.5)),
          b.constant("", random_of(t, {c}, seed + 1, -1, 1)),
          b.constant("", random_of(t, {c}, seed + 2, -1, 1)),
          b.constant("", random_of(t, {c}, seed + 3, 0.1, 2))};
}

ValueId batch_norm(GraphBuilder& b, ValueId x, const std::vector<ValueId>& p) {
  return b.node(OpKind::BatchNormalization, {x, p[0], p[1], p[2], p[3]}, {{"epsilon", 1e-3}})
      .front();
}

ValueId conv(GraphBuilder& b, ValueId x, DType t, const Shape& w, Attributes a, uint32_t seed,
             bool bias = true) {
  std::vector<ValueId> in = {x, b.constant("", rnd(t, w, seed))};
  if (bias) in.push_back(b.constant("", rnd(t, {w[0]}, seed + 1)));
  return b.node(OpKind::Conv, in, std::move(a)).front();
}

}  // namespace

TEST_CASE("JIT Conv: direct and GEMM, every window option, vs the interpreter") {
  for (const ConvCase& c : kConvCases) {
    check_conv(c, DType::f32, false, true, false);
    check_conv(c, DType::f32, true, false, true);
  }
}

TEST_CASE("JIT Conv: f64, and split over threads") {
  for (const ConvCase& c : kConvCases) check_conv(c, DType::f64, true, true, false);
  for (size_t i : {0, 1, 2, 3, 6, 7}) check_conv(kConvCases[i], DType::f32, false, true, true, 3);
  check_conv({"GEMM, large", {2, 16, 30, 31}, {32, 16, 3, 3}, window({1, 1, 1, 1})}, DType::f32,
             true, true, true, 3);
  // One image: its GEMM split by C's columns (positions; N > M), or by rows of the weights.
  for (DType t : {DType::f32, DType::f64})
    for (int threads : {2, 3}) {
      check_conv({"GEMM by columns", {1, 8, 30, 33}, {24, 8, 3, 3}, window({1, 1, 1, 1}, {2, 2})},
                 t, true, true, true, threads);
      check_conv({"GEMM by rows", {1, 8, 9, 9}, {160, 8, 3, 3}, window({1, 1, 1, 1})}, t, false,
                 true, false, threads);
    }
}

TEST_CASE("JIT Conv: which way by K: depthwise direct to 32, dense direct to 16, then GEMM") {
  // The emitted IR calls the runtime GEMM or holds the products inline. A dense 1x1 conv of 32
  // input channels over short rows (ppocr_mobile_v2_cls's late blocks) ran 2-3x slower directly.
  struct Way {
    const char* what;
    Shape x, w;
    int64_t group;
    bool gemm;
  };
  const Way ways[] = {
      {"dense K 16", {1, 16, 3, 25}, {24, 16, 1, 1}, 1, false},
      {"dense K 17", {1, 17, 3, 25}, {24, 17, 1, 1}, 1, true},
      {"dense K 32", {1, 32, 3, 25}, {24, 32, 1, 1}, 1, true},
      {"depthwise K 25", {1, 8, 9, 9}, {8, 1, 5, 5}, 8, false},
      {"depthwise K 36", {1, 8, 9, 9}, {8, 1, 6, 6}, 8, true},
  };
  for (const Way& way : ways) {
    INFO(way.what);
    IrDumpingJit dumping;
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, to_dims(way.x));
    b.output(b.relu(b.node(OpKind::Conv, {x, b.constant("w", rnd(DType::f32, way.w, 2))},
                           Attributes{{"group", way.group}})
                        .front()));
    const RegionRun run = run_region(b.build(), {rnd(DType::f32, way.x, 1)}, dumping.jit());
    REQUIRE(compiled(run.compiled));
    test::check_tensors_close(run.got[0], run.want[0], 1e-4, 1e-5);
    const std::vector<std::string> modules = dumping.emitted();
    REQUIRE(modules.size() == 1);
    CHECK(test::contains(modules[0], "call void @sgraph_gemm_") == way.gemm);
  }
}

TEST_CASE("JIT Conv: constant f32 weights go to the GEMM that packs them once per plan") {
  // Conv1d over 3 positions (silero_vad_v5's encoder): the runtime multiplies by weights packed
  // at the first call (sgraph_gemm_const_a_f32); weights computed in the region, region inputs
  // and f64 take the plain GEMM.
  struct Way {
    const char* what;
    DType t;
    bool weights_input, computed, packed;
  };
  const Way ways[] = {{"constant", DType::f32, false, false, true},
                      {"region input", DType::f32, true, false, false},
                      {"computed", DType::f32, false, true, false},
                      {"f64", DType::f64, false, false, false}};
  const Shape xs = {2, 64, 5}, ws = {128, 64, 3};
  for (const Way& way : ways) {
    for (int threads : {1, 2}) {
      INFO(way.what << ", threads " << threads);
      IrDumpingJit dumping;
      GraphBuilder b;
      const ValueId x = b.input("x", way.t, to_dims(xs));
      ValueId w =
          way.weights_input ? b.input("w", way.t, to_dims(ws)) : b.constant("w", rnd(way.t, ws, 2));
      if (way.computed) w = b.mul(w, b.constant("k", rnd(way.t, {1}, 3)));
      b.output(b.relu(b.node(OpKind::Conv, {x, w, b.constant("b", rnd(way.t, {128}, 4))}).front()));
      std::vector<Tensor> feeds = {rnd(way.t, xs, 1)};
      if (way.weights_input) feeds.push_back(rnd(way.t, ws, 2));
      const RegionRun run = run_region(b.build(), feeds, dumping.jit(), threads);
      test::check_tensors_close(run.got[0], run.want[0], 1e-4, 1e-5);
      const std::vector<std::string> modules = dumping.emitted();
      REQUIRE(modules.size() == 1);
      CHECK(test::contains(modules[0], "@sgraph_gemm_const_a_f32") == way.packed);
    }
  }
}

TEST_CASE("JIT Conv: random convs with constant weights, packed or not, vs the interpreter") {
  // The differential fuzzers seldom build a conv through the GEMM over few positions; these do:
  // 1-D and 2-D, groups, strides, pads and dilations drawn at random, on 1-3 threads, half of
  // them with the packed weights forced at every N (force_const_a_packing_for_testing).
  std::mt19937 rng(20261206);
  const auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int packed_convs = 0;
  for (int i = 0; i < 120; ++i) {
    const int64_t rank = uniform(1, 2), group = uniform(0, 2) == 0 ? uniform(2, 3) : 1;
    const int64_t c = group * uniform(3, 12), m = group * uniform(1, 24);
    Shape x = {uniform(1, 3), c}, w = {m, c / group};
    Ints pads(static_cast<size_t>(2 * rank)), strides, dilations;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t k = uniform(1, 3), dil = uniform(1, 2);
      w.push_back(k);
      x.push_back((k - 1) * dil + uniform(1, 6));
      pads[static_cast<size_t>(d)] = uniform(0, k - 1);
      pads[static_cast<size_t>(d + rank)] = uniform(0, k - 1);
      strides.push_back(uniform(1, 2));
      dilations.push_back(dil);
    }
    const bool forced = uniform(0, 1) == 1;
    const int threads = static_cast<int>(uniform(1, 3));
    INFO("case " << i << ": x " << shape_str(x) << " w " << shape_str(w) << " group " << group
                 << (forced ? ", packing forced" : "") << ", threads " << threads);
    force_const_a_packing_for_testing(forced);
    GraphBuilder b;
    const ValueId xv = b.input("x", DType::f32, to_dims(x));
    Attributes a = window(pads, strides, dilations);
    a.set("group", group);
    b.output(b.relu(b.node(OpKind::Conv, {xv, b.constant("w", rnd(DType::f32, w, 2))}, a).front()));
    check_region(b.build(), {rnd(DType::f32, x, static_cast<uint32_t>(i))}, 1e-4, 1e-5, threads);
    force_const_a_packing_for_testing(false);
    packed_convs += forced && numel(w) / m > 16;  // (through the GEMM: K > 16, dense or grouped)
  }
  CHECK(packed_convs > 20);
}

TEST_CASE("JIT Conv: weights and bias computed in the region, or region inputs") {
  for (const ConvCase& c : {kConvCases[0], kConvCases[2], kConvCases[7]}) {
    INFO(c.what);
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, to_dims(c.x));
    const ValueId w = b.mul(b.input("w", DType::f32, to_dims(c.w)), b.scalar(0.5f));
    const ValueId bias = b.input("b", DType::f32, {c.w[0]});
    b.output(b.node(OpKind::Conv, {x, w, bias}, c.attrs).front());
    check_region(b.build(),
                 {rnd(DType::f32, c.x, 1), rnd(DType::f32, c.w, 2), rnd(DType::f32, {c.w[0]}, 3)},
                 1e-4, 1e-5);
  }
}

TEST_CASE("JIT BatchNormalization: per-channel parameters, constants or inputs, any rank") {
  for (const Shape& s : {Shape{2, 5, 7, 9}, Shape{3, 4}, Shape{2, 3, 11}, Shape{1, 1, 4, 4}}) {
    INFO(shape_str(s));
    for (DType t : {DType::f32, DType::f64}) {
      GraphBuilder b;
      const ValueId x = b.input("x", t, to_dims(s));
      b.output(b.relu(batch_norm(b, x, bn_params(b, t, s[1], 10))));
      check_region(b.build(), {rnd(t, s, 1)}, 1e-6, 1e-6);
    }
    GraphBuilder b;  // parameters as region inputs, in f64 for an f32 X
    const ValueId x = b.input("x", DType::f32, to_dims(s));
    std::vector<ValueId> p;
    std::vector<Tensor> feeds = {rnd(DType::f32, s, 1)};
    for (int i = 0; i < 4; ++i) {
      p.push_back(b.input("p" + std::to_string(i), DType::f64, {s[1]}));
      feeds.push_back(random_of(DType::f64, {s[1]}, 20 + i, 0.5, 1.5));
    }
    b.output(batch_norm(b, x, p));
    check_region(b.build(), feeds, 1e-6, 1e-6);
  }
  {  // a parameter also read elementwise (broadcast along the last dim, C == W)
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {2, 3, 4, 3});
    const std::vector<ValueId> p = bn_params(b, DType::f32, 3, 30);
    b.output(b.add(batch_norm(b, x, p), p[0]));
    check_region(b.build(), {rnd(DType::f32, {2, 3, 4, 3}, 1)}, 1e-6, 1e-6);
  }
}

TEST_CASE("JIT pools: MaxPool and AveragePool windows, every option, vs the interpreter") {
  struct PoolCase {
    Shape x;
    Attributes attrs;
  };
  const auto k = [](Ints kernel, Attributes a) {
    return with(std::move(a), "kernel_shape", kernel);
  };
  const std::vector<PoolCase> cases = {
      {{1, 4, 9, 11}, k({3, 3}, window({1, 1, 1, 1}, {2, 2}))},
      {{2, 3, 8, 8}, k({2, 2}, window({}, {2, 2}))},
      {{1, 2, 10, 10}, with(k({3, 3}, window({}, {2, 2})), "ceil_mode", int64_t{1})},
      {{1, 2, 9, 10}, with(k({3, 2}, window({1, 0, 1, 1}, {2, 3})), "ceil_mode", int64_t{1})},
      {{1, 3, 9, 9}, k({2, 2}, window({1, 1, 1, 1}, {1, 1}, {2, 3}))},
      {{1, 2, 2, 5}, k({3, 3}, window({}, {2, 2}))},            // overhang: one clipped window
      {{1, 2, 5, 6}, k({2, 2}, window({2, 2, 0, 0}, {1, 1}))},  // windows of padding only
      {{1, 2, 7, 8}, with(k({3, 3}, window({}, {2, 2})), "auto_pad", std::string("SAME_UPPER"))},
      {{1, 2, 7, 8}, with(k({4, 3}, window({}, {3, 2})), "auto_pad", std::string("SAME_LOWER"))},
      {{2, 3, 17}, k({3}, window({1, 1}, {2}))},
      {{1, 2, 4, 5, 6}, k({2, 2, 3}, window({1, 0, 0, 0, 1, 1}, {2, 2, 2}))},
  };
  for (const PoolCase& c : cases) {
    for (OpKind op : {OpKind::MaxPool, OpKind::AveragePool})
      for (int include_pad = 0; include_pad < (op == OpKind::AveragePool ? 2 : 1); ++include_pad)
        for (bool computed : {false, true})
          for (DType t : {DType::f32, DType::f64}) {
            INFO(op_name(op) << " " << shape_str(c.x) << " count_include_pad " << include_pad
                             << (computed ? " computed input " : " ") << dtype_name(t));
            GraphBuilder b;
            ValueId x = b.input("x", t, to_dims(c.x));
            if (computed) x = b.sub(x, b.constant("k", rnd(t, {1}, 5)));
            Attributes a = c.attrs;
            if (op == OpKind::AveragePool) a.set("count_include_pad", int64_t{include_pad});
            b.output(b.node(op, {x}, a).front());
            check_region(b.build(), {rnd(t, c.x, 1)}, 1e-6, 1e-6, computed ? 3 : 1);
          }
  }
}

// jit::set_masked_tails_for_testing for a scope.
struct ForcedMaskedTails {
  explicit ForcedMaskedTails(bool on) { jit::set_masked_tails_for_testing(on ? 1 : 0); }
  ~ForcedMaskedTails() { jit::set_masked_tails_for_testing(-1); }
  ForcedMaskedTails(const ForcedMaskedTails&) = delete;
  ForcedMaskedTails& operator=(const ForcedMaskedTails&) = delete;
};

TEST_CASE("JIT Conv over rows of 28 and 14: masked last vectors only where masking is cheap") {
  // small_cnn's first conv (1 -> 8 channels, 3x3, pad 1, 28 x 28): a direct nest whose rows of 28
  // outputs LLVM ran 4 lanes at a time (7 iterations, no remainder) until the row loop asked for
  // its tail masked (KernelBuilder::emit_loops), which is right where masking is cheap (AVX-512).
  // On AVX2 a masked store costs tens of cycles: there no row is masked (rows of 28 run 4 lanes at
  // a time, as fast there as 8 and a scalar remainder), and a row shorter than 16 (the second
  // conv's im2col copies rows of 14) is unrolled, not run as a masked loop.
  const auto masked = [](const std::string& ir) {
    return test::contains(ir, "@llvm.masked.store.") || test::contains(ir, "@llvm.masked.load.");
  };
  // A 3x3 conv (pad 1) of x [2, C, H, W] to M channels, then Relu: its kernel's IR, checked
  // against the interpreter.
  const auto conv_ir = [](jit::Jit& jit, int64_t C, int64_t H, int64_t W, int64_t M) {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {2, C, H, W});
    b.output(b.relu(b.node(OpKind::Conv, {x, b.constant("w", rnd(DType::f32, {M, C, 3, 3}, 2))},
                           with(window({1, 1, 1, 1}, {1, 1}), "kernel_shape", Ints{3, 3}))
                        .front()));
    const RegionRun run = run_region(b.build(), {rnd(DType::f32, {2, C, H, W}, 1)}, jit);
    REQUIRE(compiled(run.compiled));
    test::check_tensors_close(run.got[0], run.want[0], 1e-5, 1e-6);
    return jit.last_ir();
  };
  for (const int mode : {1, 0}) {
    INFO("masked tails " << mode);
    const ForcedMaskedTails forced(mode == 1);
    std::unique_ptr<jit::Jit> jit = jit::Jit::create();
    jit->keep_ir(true);
    const std::string direct = conv_ir(*jit, 1, 28, 28, 8);  // rows of 28, a direct nest
    CHECK(!test::contains(direct, "call void @sgraph_gemm_"));
    CHECK(test::contains(direct, "@llvm.masked.store.") == (mode == 1));
    if (mode == 1) CHECK(!test::contains(direct, "fmuladd.v4f32"));
    const std::string im2col = conv_ir(*jit, 8, 14, 14, 16);  // an im2col of rows of 14, a GEMM
    CHECK(test::contains(im2col, "call void @sgraph_gemm_"));
    CHECK(masked(im2col) == (mode == 1));
  }
}

TEST_CASE("JIT MaxPool 2x2 stride 2 over short rows: masked wide loads, not gathers") {
  // Rows of 14 outputs: one masked vector each, whose taps are every other input. As masked
  // gathers (LLVM's default without masked interleaved groups, see Jit::create) small_cnn's two
  // pools took ~30% of its time.
  std::unique_ptr<jit::Jit> jit = jit::Jit::create();
  jit->keep_ir(true);
  for (DType t : {DType::f32, DType::f64}) {
    INFO(dtype_name(t));
    GraphBuilder b;
    const ValueId x = b.input("x", t, {2, 8, 28, 28});
    b.output(b.node(OpKind::MaxPool, {b.relu(b.sub(x, b.constant("k", rnd(t, {1}, 5))))},
                    with(window({}, {2, 2}), "kernel_shape", Ints{2, 2}))
                 .front());
    const RegionRun run = run_region(b.build(), {rnd(t, {2, 8, 28, 28}, 1)}, *jit);
    REQUIRE(compiled(run.compiled));
    test::check_tensors_close(run.got[0], run.want[0], 0, 0);
    CHECK(!test::contains(jit->last_ir(), "llvm.masked.gather"));
  }
}

TEST_CASE("JIT MaxPool: integers, and the Indices output is not compiled") {
  for (DType t : {DType::u8, DType::i8}) {
    GraphBuilder b;
    const ValueId x = b.input("x", t, {1, 3, 7, 6});
    b.output(b.max_pool(
        x, Attributes{
               {"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}));
    check_region_same(b.build(), {random_of(t, {1, 3, 7, 6}, 1, t == DType::u8 ? 0 : -100, 100)});
  }
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {1, 1, 4, 4});
  const auto outs = b.node(OpKind::MaxPool, {x}, {{"kernel_shape", Ints{2, 2}}}, 2);
  b.output(outs[0]);
  b.output(outs[1]);
  const Graph g = b.build();
  CHECK(test::contains(why_not_compilable(g, whole_graph(g)), "(MaxPool): several outputs"));
}

TEST_CASE("JIT GlobalAveragePool: a mean over the spatial dims") {
  for (const Shape& s :
       {Shape{2, 5, 7, 9}, Shape{2, 3, 11}, Shape{1, 4, 1, 1}, Shape{1, 2, 3, 4, 5}})
    for (DType t : {DType::f32, DType::f64}) {
      INFO(shape_str(s) << " " << dtype_name(t));
      GraphBuilder b;
      const ValueId x = b.input("x", t, to_dims(s));
      b.output(b.global_average_pool(b.relu(x)));
      check_region(b.build(), {rnd(t, s, 1)}, 1e-6, 1e-7);
    }
}

TEST_CASE("JIT GlobalMaxPool: the largest value over the spatial dims, NaN never wins") {
  for (const Shape& s : {Shape{2, 5, 7, 9}, Shape{2, 3, 11}, Shape{1, 4, 1, 1}})
    for (DType t : {DType::f32, DType::f64}) {
      INFO(shape_str(s) << " " << dtype_name(t));
      GraphBuilder b;
      const ValueId x = b.input("x", t, to_dims(s));
      b.output(b.global_max_pool(b.neg(x)));
      check_region_same(b.build(), {rnd(t, s, 1)});
    }
  // Planes of x / y: with y = 0 at some points (x / 0: +-inf, 0 / 0: NaN). Plane 0 is all NaN
  // (the lowest finite value, as MaxPool's), plane 1 has a NaN among numbers (skipped), plane 2
  // a -inf among numbers, plane 3 a +inf.
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {1, 4, 3});
  const ValueId y = b.input("y", DType::f32, {1, 4, 3});
  b.output(b.global_max_pool(b.div(x, y)));
  const Graph g = b.build();
  const Tensor xs = Tensor::from<float>({1, 4, 3}, {0, 0, 0, 0, -2, -4, -1, -2, -3, 5, 1, 2});
  const Tensor ys = Tensor::from<float>({1, 4, 3}, {0, 0, 0, 0, 1, 1, 0, 1, 1, 0, 1, 1});
  check_region_same(g, {xs, ys});
  const RegionRun run = run_region(g, {xs, ys});
  const float* got = run.got.at(0).data<float>();
  CHECK(got[0] == std::numeric_limits<float>::lowest());
  CHECK(got[1] == -2.0f);
  CHECK(got[2] == -2.0f);
  CHECK(got[3] == std::numeric_limits<float>::infinity());
}

TEST_CASE("JIT CNN chains: conv -> BN -> relu -> pool, depthwise blocks, residuals, heads") {
  for (DType t : {DType::f32, DType::f64}) {
    const double tol = t == DType::f64 ? 1e-12 : 1e-4;
    for (int threads : {1, 3}) {
      INFO(dtype_name(t) << ", threads " << threads);
      {  // Conv (GEMM) -> BN -> Relu -> MaxPool 3x3 s2 p1
        GraphBuilder b;
        const ValueId x = b.input("x", t, {2, 6, 13, 11});
        ValueId y = conv(b, x, t, {10, 6, 3, 3}, window({1, 1, 1, 1}), 1);
        y = b.relu(batch_norm(b, y, bn_params(b, t, 10, 10)));
        b.output(b.max_pool(y, with(window({1, 1, 1, 1}, {2, 2}), "kernel_shape", Ints{3, 3})));
        check_region(b.build(), {rnd(t, {2, 6, 13, 11}, 2)}, tol, tol, threads);
      }
      {  // stem (direct) -> BN -> Relu -> depthwise -> BN -> Relu -> pointwise (GEMM) -> BN
        GraphBuilder b;
        const ValueId x = b.input("x", t, {1, 3, 17, 19});
        ValueId y = conv(b, x, t, {8, 3, 3, 3}, window({1, 1, 1, 1}, {2, 2}), 1, false);
        y = b.relu(batch_norm(b, y, bn_params(b, t, 8, 10)));
        y = conv(b, y, t, {8, 1, 3, 3}, with(window({1, 1, 1, 1}), "group", int64_t{8}), 3, false);
        y = b.relu(batch_norm(b, y, bn_params(b, t, 8, 20)));
        y = conv(b, y, t, {40, 8, 1, 1}, {}, 5, false);
        b.output(batch_norm(b, y, bn_params(b, t, 40, 30)));
        check_region(b.build(), {rnd(t, {1, 3, 17, 19}, 2)}, tol, tol, threads);
      }
      {  // residual: x + BN(Conv(Relu(BN(Conv(x))))), both convs GEMM, then MaxPool 2x2 (no copy)
        GraphBuilder b;
        const ValueId x = b.input("x", t, {1, 12, 9, 10});
        ValueId y = conv(b, x, t, {12, 12, 3, 3}, window({1, 1, 1, 1}), 1);
        y = b.relu(batch_norm(b, y, bn_params(b, t, 12, 10)));
        y = batch_norm(b, conv(b, y, t, {12, 12, 3, 3}, window({1, 1, 1, 1}), 3),
                       bn_params(b, t, 12, 20));
        y = b.relu(b.add(x, y));
        b.output(y);
        b.output(b.max_pool(y, with(window({}, {2, 2}), "kernel_shape", Ints{2, 2})));
        check_region(b.build(), {rnd(t, {1, 12, 9, 10}, 2)}, tol, tol, threads);
      }
      {  // head: GlobalAveragePool -> Flatten -> Gemm, after a direct conv
        GraphBuilder b;
        const ValueId x = b.input("x", t, {3, 4, 6, 7});
        const ValueId y = b.relu(conv(b, x, t, {9, 4, 2, 2}, {}, 1));
        const ValueId f = b.flatten(b.global_average_pool(y));
        b.output(b.gemm(f, b.constant("", rnd(t, {5, 9}, 3)), b.constant("", rnd(t, {5}, 4)),
                        Attributes{{"transB", int64_t{1}}}));
        check_region(b.build(), {rnd(t, {3, 4, 6, 7}, 2)}, tol, tol, threads);
      }
    }
  }
}

TEST_CASE("JIT windows: a padded copy's border is filled, whatever the scratch held") {
  // Copies of 8x70x70 inputs padded to 72x72 (166 KB: in the scratch block, which the test
  // fills with NaN): the copy's border is filled row by row (whole rows at the top and bottom,
  // the two ends of the others), the interior copied. Negative inputs, so a MaxPool reading a
  // border that is not -inf, or an AveragePool counting pads that are not 0, shows.
  const Tensor xin = test::random_f32({1, 8, 70, 70}, 5, -3, -1);
  const Attributes pads = {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 2, 1, 0}}};
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {1, 8, 70, 70});
    const ValueId h = b.mul(x, b.scalar(1.5f));  // (computed: its copy is what is padded)
    b.output(b.node(OpKind::MaxPool, {h}, pads).front());
    Attributes avg = pads;
    avg.set("count_include_pad", int64_t{1});
    b.output(b.node(OpKind::AveragePool, {h}, avg).front());
    const Attributes a = with(window(Ints{2, 1, 0, 2}), "group", int64_t{8});
    b.output(conv(b, h, DType::f32, {8, 1, 3, 3}, a, 1));
    check_region(b.build(), {xin}, 1e-5, 1e-5, threads);
  }
}

TEST_CASE("JIT squeeze-excitation: a direct window read by two nests is computed once") {
  // depthwise 3x3 -> Relu = h; h * Sigmoid(GlobalAveragePool(h)): the pool's nest and the output
  // nest both read h, so the conv's output is held in a buffer of its own, filled by one nest.
  // Padded (the conv reads a copy: MadeInline::from_source) and not (it reads the region input).
  // The emitted IR (SGRAPH_DUMP_IR, before LLVM's passes) holds one conv's taps: 8 fmuladd and a
  // fmul per element, made in one nest.
  for (bool padded : {true, false})
    for (DType t : {DType::f32, DType::f64}) {
      IrDumpingJit dumping;
      GraphBuilder b;
      const ValueId x = b.input("x", t, {2, 8, 11, 13});
      const Attributes a = with(window(padded ? Ints{1, 1, 1, 1} : Ints{}), "group", int64_t{8});
      const ValueId h = b.relu(conv(b, x, t, {8, 1, 3, 3}, a, 1));
      b.output(b.mul(h, b.sigmoid(b.global_average_pool(h))));
      const Graph g = b.build();
      const double tol = t == DType::f64 ? 1e-12 : 1e-5;
      for (int threads : {1, 3}) {
        INFO((padded ? "padded" : "unpadded") << ", " << dtype_name(t) << ", threads " << threads);
        const RegionRun run = run_region(g, {rnd(t, {2, 8, 11, 13}, 2)}, dumping.jit(), threads);
        REQUIRE(compiled(run.compiled));
        test::check_tensors_close(run.got[0], run.want[0], tol, tol);
      }
      const std::string tap =
          std::string("call ") + (t == DType::f64 ? "double" : "float") + " @llvm.fmuladd";
      const std::vector<std::string> modules = dumping.emitted();
      CHECK(modules.size() >= 1);
      for (const std::string& ir : modules) CHECK(occurrences(ir, tap) == 8);
    }
}

namespace {

// force_winograd_for_testing for a scope: every conv that fits F(2,3) goes through it.
struct ForcedWinograd {
  ForcedWinograd() { ops::force_winograd_for_testing(true); }
  ~ForcedWinograd() { ops::force_winograd_for_testing(false); }
  ForcedWinograd(const ForcedWinograd&) = delete;
  ForcedWinograd& operator=(const ForcedWinograd&) = delete;
};

// A 1-D or 2-D conv whose last dim fits F(2,3) (3 wide, unit stride and dilation there), with a
// bias and (`relu`) Relu after it.
Graph winograd_conv(const Shape& x, const Shape& w, const Attributes& a, bool symbolic_width,
                    bool relu = true) {
  GraphBuilder b;
  DimList dims = to_dims(x);
  if (symbolic_width) dims.back() = Dim("width");
  const ValueId xv = b.input("x", DType::f32, dims);
  const ValueId bias = b.constant("b", rnd(DType::f32, {w[0]}, 5));
  const ValueId y =
      b.node(OpKind::Conv, {xv, b.constant("w", rnd(DType::f32, w, 2)), bias}, a).front();
  b.output(relu ? b.relu(y) : y);
  return b.build();
}

}  // namespace

TEST_CASE("JIT Conv: Winograd F(2,3) along the last dim, random convs vs the interpreter") {
  // Forced onto small convs (through the GEMM: 6 or more input channels), 3x3 ones at unit
  // strides by F(2x2,3x3): odd and even widths and heights,
  // pads, row strides and dilations, 1-3 row taps, 1-D and 2-D, on 1-3 threads; each kernel must
  // call the Winograd helper.
  const ForcedWinograd forced;
  std::mt19937 rng(20261207);
  const auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int i = 0; i < 40; ++i) {
    const int64_t rank = uniform(1, 2), c = uniform(6, 12), m = uniform(2, 24);
    Shape x = {uniform(1, 3), c}, w = {m, c};
    Ints pads(static_cast<size_t>(2 * rank)), strides, dilations;
    const bool rows = rank == 2 && uniform(0, 1) == 1;  // 3x3 at unit strides: F(2x2,3x3)
    for (int64_t d = 0; d < rank; ++d) {
      const bool last = d == rank - 1 || rows;
      const int64_t k = last ? 3 : uniform(1, 3), dil = last ? 1 : uniform(1, 2);
      w.push_back(k);
      x.push_back((k - 1) * dil + uniform(1, 9));
      pads[static_cast<size_t>(d)] = uniform(0, k - 1);
      pads[static_cast<size_t>(d + rank)] = uniform(0, k - 1);
      strides.push_back(last ? 1 : uniform(1, 2));
      dilations.push_back(dil);
    }
    const int threads = static_cast<int>(uniform(1, 3));
    INFO("case " << i << ": x " << shape_str(x) << " w " << shape_str(w) << ", threads "
                 << threads);
    IrDumpingJit dumping;
    const RegionRun run =
        run_region(winograd_conv(x, w, window(pads, strides, dilations), false),
                   {rnd(DType::f32, x, static_cast<uint32_t>(i))}, dumping.jit(), threads);
    test::check_tensors_close(run.got[0], run.want[0], 1e-4, 1e-5);
    const std::vector<std::string> modules = dumping.emitted();
    REQUIRE(modules.size() == 1);
    CHECK(test::contains(modules[0], "@sgraph_conv_winograd_f32"));
  }
}

TEST_CASE("JIT Conv: Winograd F(2,3) leaves infinities and NaN where the plain sum puts them") {
  // Winograd sums a tile's transformed columns: an infinite input would make NaN from inf - inf
  // where the plain sum gives inf. The helper recomputes such an image the plain way. (No Relu:
  // it would make NaN 0.)
  const ForcedWinograd forced;
  const Shape x = {2, 4, 5, 10}, w = {6, 4, 3, 3};
  const Graph g = winograd_conv(x, w, window({1, 1, 1, 1}), false, /*relu=*/false);
  for (const float bad : {std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), std::nanf("")}) {
    for (int threads : {1, 2}) {
      INFO("bad " << bad << ", threads " << threads);
      Tensor in = rnd(DType::f32, x, 3);
      in.data<float>()[1 * 200 + 2 * 50 + 3 * 10 + 4] = bad;  // image 1 only
      const RegionRun run = run_region(g, {in}, shared_jit(), threads);
      int64_t non_finite = 0;
      for (int64_t j = 0; j < run.want[0].numel(); ++j)
        non_finite += !std::isfinite(run.want[0].at_double(j));
      CHECK(non_finite > 0);
      test::check_tensors_close(run.got[0], run.want[0], 1e-4, 1e-5);
    }
  }
}

TEST_CASE("JIT Conv: Winograd F(2,3) in a dynamic region, the width a symbol") {
  // Odd and even widths through one kernel, each call's pairs and scratch from the symbol; strides
  // 2x1 (F(2,3)) and 1x1 (F(2x2,3x3), an odd height).
  const ForcedWinograd forced;
  const Shape w = {16, 8, 3, 3};
  for (const int64_t stride_h : {2, 1}) {
    CAPTURE(stride_h);
    const Graph g = winograd_conv({1, 8, 5, 7}, w, window({1, 1, 1, 1}, {stride_h, 1}), true);
    const auto feed = [&](int64_t width) {
      return std::vector<Tensor>{rnd(DType::f32, {1, 8, 5, width}, static_cast<uint32_t>(width))};
    };
    IrDumpingJit dumping;
    Dynamic d(g, {feed(7), feed(12)}, false, dumping.jit());
    REQUIRE(compiled(d.c));
    CHECK(test::contains(dumping.emitted().at(0), "@sgraph_conv_winograd_f32"));
    for (int64_t width : {1, 2, 3, 8, 13, 40}) {
      CAPTURE(width);
      CHECK(d.run_and_check(feed(width), 1, 1e-4, 1e-5));
      CHECK(d.run_and_check(feed(width), 2, 1e-4, 1e-5));
    }
  }
}

TEST_CASE("JIT Conv: Winograd F(2,3) only where it pays, unless forced") {
  // The recognizer's third stem conv (3x3, strides 2 x 1, 64 -> 192 channels) takes it; a stem
  // from 3 channels and a conv strided along its width do not.
  struct Way {
    Shape x, w;
    Ints strides;
    bool winograd;
  };
  const Way ways[] = {{{1, 64, 12, 40}, {192, 64, 3, 3}, {2, 1}, true},
                      {{1, 3, 48, 160}, {32, 3, 3, 3}, {2, 2}, false},
                      {{1, 64, 12, 40}, {192, 64, 3, 3}, {1, 2}, false},
                      {{1, 3, 16, 40}, {32, 3, 3, 3}, {1, 1}, false}};
  for (const Way& way : ways) {
    INFO("x " << shape_str(way.x) << " w " << shape_str(way.w));
    IrDumpingJit dumping;
    const RegionRun run =
        run_region(winograd_conv(way.x, way.w, window({1, 1, 1, 1}, way.strides), false),
                   {rnd(DType::f32, way.x, 9)}, dumping.jit());
    test::check_tensors_close(run.got[0], run.want[0], 1e-4, 1e-5);
    CHECK(test::contains(dumping.emitted().at(0), "@sgraph_conv_winograd_f32") == way.winograd);
  }
}
