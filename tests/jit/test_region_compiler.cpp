// The region compiler: special float values, integer exponents, variadic and logical ops, Clip's
// bounds; index ops in the middle of regions; reductions; several outputs. Each region is compiled
// into one kernel and compared with the interpreter on random data. Every op with a lowering is
// also checked on generated shapes and dtypes by test_op_lowerings.cpp.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>
#include <tuple>

#include "jit/parallel.h"
#include "jit/region_test_util.h"
#include "ops/op.h"

using namespace sgraph;
using namespace sgraph::jit;

using namespace sgraph::test::region;

TEST_CASE("JIT: NaN, infinities, signed zeros and halves match the interpreter") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<float> special = {nan, inf, -inf, 0.0f, -0.0f, 0.5f, 1.5f, 2.5f, -2.5f, 1e-30f};
  Tensor x(DType::f32, {37}), y(DType::f32, {37});
  for (int64_t i = 0; i < 37; ++i) {
    x.data<float>()[i] = special[i % special.size()];
    y.data<float>()[i] = special[(i / special.size()) % special.size()];
  }
  for (OpKind op : {OpKind::Relu, OpKind::Abs, OpKind::Neg, OpKind::Exp, OpKind::Log, OpKind::Sqrt,
                    OpKind::Tanh, OpKind::Sigmoid, OpKind::Erf, OpKind::Softplus, OpKind::Mish,
                    OpKind::HardSwish, OpKind::Round, OpKind::Floor, OpKind::Ceil,
                    OpKind::Reciprocal, OpKind::Softsign, OpKind::LeakyRelu}) {
    INFO(op_name(op));
    GraphBuilder b;
    b.output(b.node(op, {b.input("x", DType::f32, {37})}).front());
    check_region(b.build(), {x});
  }
  for (OpKind op : {OpKind::Max, OpKind::Min, OpKind::Greater, OpKind::Equal, OpKind::Pow}) {
    INFO(op_name(op));
    GraphBuilder b;
    const ValueId vx = b.input("x", DType::f32, {37}), vy = b.input("y", DType::f32, {37});
    b.output(b.node(op, {vx, vy}).front());
    check_region(b.build(), {x, y});
  }
}

TEST_CASE("JIT: f32 exp is within 2 ulp over its whole range, with its special values") {
  // Emitted inline (ElementCtx::exp_f32). Against exp in double rounded to float: 2 ulp for
  // normal results, one subnormal step below FLT_MIN; NaN, infinities, overflow and underflow.
  std::vector<float> xs = {std::nanf(""),
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           0.0f,
                           -0.0f,
                           1e-30f,
                           -1e-30f,
                           88.7228f,
                           88.7229f,
                           88.8f,
                           89.0f,
                           1e30f,
                           -87.33f,
                           -103.9f,
                           -103.98f,
                           -104.0f,
                           -104.5f,
                           -1e30f,
                           0.34657359f,
                           -0.34657359f};
  for (double x = -110; x < 90; x += 0.0137) xs.push_back(static_cast<float>(x));
  const Tensor rnd = test::random_f32({4096}, 77, -100, 88);
  for (int64_t i = 0; i < 4096; ++i) xs.push_back(rnd.data<float>()[i]);
  const auto n = static_cast<int64_t>(xs.size());
  GraphBuilder b;
  b.output(b.exp(b.input("x", DType::f32, {n})));
  const RegionRun run = run_region(b.build(), {Tensor::from<float>({n}, xs)});
  const float* got = run.got[0].data<float>();
  const auto ulp_of = [](float v) {
    return std::nextafter(v, std::numeric_limits<float>::infinity()) - v;
  };
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float want = static_cast<float>(std::exp(static_cast<double>(xs[i])));
    const float g = got[i];
    bool ok;
    if (std::isnan(want))
      ok = std::isnan(g);
    else if (std::isinf(want) || want == 0)
      ok = g == want || (want == 0 && std::abs(g) <= std::numeric_limits<float>::denorm_min());
    else if (want < std::numeric_limits<float>::min())
      ok = std::abs(g - want) <= std::numeric_limits<float>::denorm_min();
    else
      ok = std::abs(g - want) <= 2 * ulp_of(want);
    if (!ok && bad++ < 10) FAIL_CHECK("exp(" << xs[i] << ") = " << g << ", want " << want);
  }
  CHECK(bad == 0);
}

TEST_CASE("JIT: Pow with an integer exponent") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {7, 3}), y = b.input("y", DType::i32, {3});
  b.output(b.pow(x, y));
  check_region(b.build(),
               {test::random_f32({7, 3}, 1, 0.5f, 2), random_of(DType::i32, {3}, 2, -3, 3)});
}

TEST_CASE("JIT: variadic Max, Min, Sum, Mean of three inputs") {
  for (OpKind op : {OpKind::Max, OpKind::Min, OpKind::Sum, OpKind::Mean}) {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {4, 1}), y = b.input("y", DType::f32, {5}),
                  z = b.input("z", DType::f32, {});
    b.output(b.node(op, {x, y, z}).front());
    check_region(b.build(),
                 {test::random_f32({4, 1}, 1), test::random_f32({5}, 2), test::random_f32({}, 3)});
  }
}

TEST_CASE("JIT: Where, logical ops and PRelu") {
  const Tensor c = random_of(DType::boolean, {7, 1}, 1, 0, 1);
  const Tensor d = random_of(DType::boolean, {1, 13}, 2, 0, 1);
  const Tensor x = test::random_f32({1, 13}, 3), y = test::random_f32({}, 4);
  for (OpKind op : {OpKind::And, OpKind::Or, OpKind::Xor}) {
    GraphBuilder b;
    const ValueId vc = b.input("c", DType::boolean, {7, 1});
    const ValueId vd = b.input("d", DType::boolean, {1, 13});
    const ValueId vx = b.input("x", DType::f32, {1, 13}), vy = b.input("y", DType::f32, {});
    const ValueId l = b.node(op, {vc, vd}).front();
    b.output(l, "l");
    b.output(b.where(l, vx, vy), "w");
    check_region(b.build(), {c, d, x, y});
  }
  GraphBuilder b;
  const ValueId vx = b.input("x", DType::f32, {7, 13});
  b.output(b.prelu(vx, b.input("s", DType::f32, {13})));
  check_region(b.build(), {test::random_f32({7, 13}, 5), test::random_f32({13}, 6)});
}

TEST_CASE("JIT: Clip with input, constant, absent and computed bounds") {
  const Tensor x = test::random_f32({7, 9}, 1, -2, 2);
  {
    GraphBuilder b;
    const ValueId vx = b.input("x", DType::f32, {7, 9});
    const ValueId lo = b.input("lo", DType::f32, {1}), hi = b.input("hi", DType::f32, {});
    b.output(b.clip(vx, lo, hi));
    check_region(b.build(), {x, test::f32({1}, {-0.5f}), Tensor::scalar(0.7f)});
  }
  {
    GraphBuilder b;
    const ValueId vx = b.input("x", DType::f32, {7, 9});
    b.output(b.add(b.clip(vx, kNoValue, b.scalar(0.25f)), vx));
    check_region(b.build(), {x});
  }
  {
    GraphBuilder b;
    const ValueId vx = b.input("x", DType::f32, {7, 9});
    b.output(b.clip(vx, b.neg(b.input("m", DType::f32, {1}))));
    check_region(b.build(), {x, test::f32({1}, {0.5f})});
  }
  GraphBuilder b;
  const ValueId vi = b.input("i", DType::i32, {20});
  b.output(b.clip(vi, b.scalar<int32_t>(-5), b.scalar<int32_t>(7)));
  check_region(b.build(), {random_of(DType::i32, {20}, 3, -20, 20)});
}

TEST_CASE("JIT: view and index ops inside regions") {
  const Tensor x = test::random_f32({2, 3, 4}, 1);
  SUBCASE("Reshape of a region input, then an op") {
    GraphBuilder b;
    const ValueId v = b.reshape(b.input("x", DType::f32, {2, 3, 4}), b.ints({4, 6}));
    b.output(b.mul(v, b.input("y", DType::f32, {6})));
    check_region(b.build(), {x, test::random_f32({6}, 2)});
  }
  SUBCASE("Reshape of a computed value (delinearised)") {
    GraphBuilder b;
    const ValueId e = b.exp(b.input("x", DType::f32, {2, 3, 4}));
    b.output(b.add(b.reshape(e, b.ints({4, 1, 6})), b.input("y", DType::f32, {1, 6})));
    check_region(b.build(), {x, test::random_f32({1, 6}, 2)});
  }
  SUBCASE("Squeeze, Unsqueeze, Flatten and Identity of computed values") {
    GraphBuilder b;
    const ValueId vx = b.input("x", DType::f32, {3, 1, 5});
    const ValueId s = b.squeeze(b.tanh(vx), b.ints({1}));
    const ValueId u = b.unsqueeze(b.relu(s), b.ints({0, 3}));
    const ValueId f = b.flatten(b.sigmoid(u), Attributes{{"axis", int64_t{2}}});
    b.output(b.identity(b.add(f, b.input("y", DType::f32, {5}))));
    check_region(b.build(), {test::random_f32({3, 1, 5}, 3), test::random_f32({5}, 4)});
  }
  SUBCASE("Transpose in the middle") {
    GraphBuilder b;
    const ValueId t = b.transpose(b.sigmoid(b.input("x", DType::f32, {2, 3, 4})),
                                  Attributes{{"perm", Ints{2, 0, 1}}});
    b.output(b.mul(t, b.input("y", DType::f32, {4, 1, 3})));
    check_region(b.build(), {x, test::random_f32({4, 1, 3}, 5)});
  }
  SUBCASE("Transpose of a region input, default perm") {
    GraphBuilder b;
    b.output(b.neg(b.transpose(b.input("x", DType::f32, {2, 3, 4}))));
    check_region(b.build(), {x});
  }
  SUBCASE("Expand") {
    GraphBuilder b;
    const ValueId e = b.expand(b.exp(b.input("x", DType::f32, {3, 1})), b.ints({2, 3, 4}));
    b.output(b.sub(e, b.input("y", DType::f32, {4})));
    check_region(b.build(), {test::random_f32({3, 1}, 6), test::random_f32({4}, 7)});
  }
}

TEST_CASE("JIT: a view splitting or merging dims maps indices by groups of dims, affine") {
  // Attention's heads: q [2, 5, 12] computed, split as [2, 5, 3, 4] and transposed to [2, 3, 5, 4]
  // (and back, merged to [2, 5, 12]). Grouped, (3, 4) against 12, an element of the split is q at
  // (b, s, h * 4 + d), no division; the merge splits only its group's index, (i / 4, i % 4): one
  // udiv and one urem in the emitted IR. Splitting the whole offset took a udiv and a urem per dim
  // (6 of each). [6, 4] read as [3, 8] does not group: its offset is split (divisions). Both are
  // checked against the interpreter.
  const Tensor x = test::random_f32({2, 5, 12}, 11, -2, 2);
  {
    GraphBuilder b;
    const ValueId q = b.exp(b.input("x", DType::f32, {2, 5, 12}));
    const ValueId heads =
        b.transpose(b.reshape(q, b.ints({2, 5, 3, 4})), Attributes{{"perm", Ints{0, 2, 1, 3}}});
    const ValueId back = b.reshape(
        b.transpose(b.tanh(heads), Attributes{{"perm", Ints{0, 2, 1, 3}}}), b.ints({2, 5, 12}));
    b.output(b.add(back, q));
    const Graph g = b.build();
    IrDumpingJit dumping;
    const RegionRun run = run_region(g, {x}, dumping.jit());
    test::check_tensors_close(run.got[0], run.want[0], 1e-5);
    int64_t udivs = 0, urems = 0;
    for (const std::string& ir : dumping.emitted()) {
      udivs += occurrences(ir, " udiv ");
      urems += occurrences(ir, " urem ");
    }
    CHECK(udivs == 1);
    CHECK(urems == 1);
    check_region(g, {x}, 1e-5, 1e-6, /*threads=*/2);
  }
  {
    GraphBuilder b;
    const ValueId e = b.exp(b.input("x", DType::f32, {6, 4}));
    b.output(b.add(b.reshape(e, b.ints({3, 8})), b.input("y", DType::f32, {8})));
    const Graph g = b.build();
    IrDumpingJit dumping;
    const std::vector<Tensor> feeds{test::random_f32({6, 4}, 12), test::random_f32({8}, 13)};
    const RegionRun run = run_region(g, feeds, dumping.jit());
    test::check_tensors_close(run.got[0], run.want[0], 1e-5);
    int64_t divisions = 0;
    for (const std::string& ir : dumping.emitted()) divisions += occurrences(ir, " udiv ");
    CHECK(divisions > 0);
  }
}

TEST_CASE("JIT: dims that every operand spans or broadcasts alike merge into one loop") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {2, 3, 4, 5}), c = b.input("c", DType::f32, {3, 1, 1});
  const ValueId y = b.input("y", DType::f32, {2, 3, 4, 5});
  const ValueId e = b.expand(b.input("e", DType::f32, {1, 5}), b.ints({4, 1}));
  b.output(b.mul(b.add(b.relu(b.add(x, c)), y), e));
  check_region(b.build(), {test::random_f32({2, 3, 4, 5}, 1), test::random_f32({3, 1, 1}, 2),
                           test::random_f32({2, 3, 4, 5}, 3), test::random_f32({1, 5}, 4)});
}

TEST_CASE("JIT: a region with two outputs, one also used inside") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {33, 17});
  const ValueId e = b.exp(x);
  b.output(e, "e");
  b.output(b.mul(e, b.input("y", DType::f32, {17})), "m");
  check_region(b.build(), {test::random_f32({33, 17}, 1), test::random_f32({17}, 2)});
}

TEST_CASE("JIT: a large region (1M elements) with shared subexpressions") {
  const Shape s = {1 << 20};
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, to_dims(s));
  const ValueId t = b.tanh(b.mul(x, b.scalar(0.5f)));
  b.output(b.mul(b.add(t, b.scalar(1.0f)), b.erf(x)));
  check_region(b.build(), {test::random_f32(s, 1, -4, 4)});
}

TEST_CASE("JIT: elementwise f32 regions vectorise, libm calls through libmvec, exp inline") {
  std::unique_ptr<Jit> jit = Jit::create();
  jit->keep_ir(true);
  const Tensor tx = test::random_f32({4096}, 1), ty = test::random_f32({4096}, 2);
  for (OpKind op : {OpKind::Tanh, OpKind::Exp}) {
    INFO(op_name(op));
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {4096});
    b.output(b.mul(b.node(op, {x}).front(), b.input("y", DType::f32, {4096})));
    const RegionRun run = run_region(b.build(), {tx, ty}, *jit);
    test::check_tensors_close(run.got[0], run.want[0]);
    const std::string ir = jit->last_ir(), assembly = jit->last_asm();
    CHECK((test::contains(ir, "<16 x float>") || test::contains(ir, "<8 x float>")));
    CHECK((test::contains(assembly, "%zmm") || test::contains(assembly, "%ymm")));
    if (op == OpKind::Tanh) {
      CHECK(test::contains(ir, "_ZGV"));                // a libmvec vector variant of tanhf
      CHECK(!test::contains(ir, "call float @tanhf"));  // 4096: a multiple of every width
      CHECK(test::contains(assembly, "_ZGV"));
    } else {  // inline (ElementCtx::exp_f32): no call at all
      CHECK(!test::contains(ir, "expf"));
      CHECK(!test::contains(ir, "_ZGV"));
    }
    MESSAGE(op_name(op) << ": compiled in " << run.compiled.compile_ms << " ms");
  }
}

TEST_CASE("JIT: SGRAPH_PERF_MAP=1 names the kernel and its nests in /tmp/perf-<pid>.map") {
  const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  std::remove(path.c_str());
  setenv("SGRAPH_PERF_MAP", "1", 1);
  std::unique_ptr<Jit> jit = Jit::create();
  unsetenv("SGRAPH_PERF_MAP");
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {64, 64});
  // (over axis 0: the row max, the row sum and the output, each a nest)
  b.output(b.softmax(b.mul(x, b.scalar(2.0f)), Attributes{{"axis", int64_t{0}}}));
  const Tensor tx = test::random_f32({64, 64}, 1);
  const RegionRun run = run_region(b.build(), {tx}, *jit);
  test::check_tensors_close(run.got[0], run.want[0]);
  std::ifstream in(path);
  REQUIRE(in.good());
  std::string line;
  int kernels = 0, nests = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string addr, size, name;
    fields >> addr >> size >> name;
    CHECK(std::stoull(addr, nullptr, 16) != 0);
    CHECK(std::stoull(size, nullptr, 16) > 0);
    kernels += name.rfind("test_region_", 0) == 0 && name.find(".n") == std::string::npos;
    nests += name.find(".n") != std::string::npos;
  }
  CHECK(kernels == 1);
  CHECK(nests >= 2);
  std::remove(path.c_str());
}

TEST_CASE("JIT: outputs beyond the caches are stored non-temporally, not in loops calling out") {
  std::unique_ptr<Jit> jit = Jit::create();
  jit->keep_ir(true);
  const bool x86 = test::contains(jit->target_triple(), "x86_64");
  // (Tanh: a libmvec call; Exp: inline code, no call)
  const auto build = [](int64_t n, std::optional<OpKind> op) {
    GraphBuilder b;
    ValueId x = b.input("x", DType::f32, {n});
    x = b.add(b.mul(x, b.scalar(0.5f)), b.scalar(0.25f));
    b.output(op ? b.node(*op, {x}).front() : x);
    return b.build();
  };
  const int64_t big = kStreamBytes / 4, small = 1 << 16;
  const std::optional<OpKind> none;
  for (auto [n, op, streamed] : {std::tuple{big, none, x86}, std::tuple{small, none, false},
                                 std::tuple{big, std::optional{OpKind::Tanh}, false},
                                 std::tuple{big, std::optional{OpKind::Exp}, x86}}) {
    CAPTURE(n);
    INFO((op ? op_name(*op) : "no op"));
    const Tensor x = test::random_f32({n}, 3);
    const RegionRun run = run_region(build(n, op), {x}, *jit);
    test::check_tensors_close(run.got[0], run.want[0]);
    const std::string ir = jit->last_ir();
    CHECK(test::contains(ir, "!nontemporal") == streamed);
    CHECK(test::contains(ir, "llvm.x86.sse.sfence") == streamed);
  }
}

TEST_CASE("JIT: a serial kernel calls its nests directly, inlined into one function") {
  // Softmax over rows, then an Add: the Softmax's nest over the rows and the output's, each
  // splittable.
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {64, 200});
  const ValueId sm = b.node(OpKind::Softmax, {x}, {{"axis", int64_t{-1}}}).front();
  b.output(b.add(sm, b.input("y", DType::f32, {64, 200})));
  const Graph g = b.build();
  const std::vector<Tensor> feeds = {test::random_f32({64, 200}, 1),
                                     test::random_f32({64, 200}, 2)};
  const auto defines = [](const std::string& ir) {
    size_t n = 0;
    for (size_t at = ir.find("\ndefine "); at != std::string::npos;
         at = ir.find("\ndefine ", at + 1))
      ++n;
    return n;
  };
  for (bool serial : {false, true})
    for (int threads : {1, 2}) {
      INFO("serial " << serial << ", threads " << threads);
      std::unique_ptr<Jit> jit = Jit::create();
      jit->keep_ir(true);
      const RegionRun run = run_region(g, feeds, *jit, threads, fresh_name(), serial);
      test::check_tensors_close(run.got[0], run.want[0], 1e-5);
      const std::string ir = jit->last_ir();
      CHECK(test::contains(ir, "sgraph_parallel_for") == !serial);
      if (serial)
        CHECK(defines(ir) == 1);  // the kernel alone
      else
        CHECK(defines(ir) > 2);  // the kernel and its nests
    }
}

TEST_CASE("JIT: a small nest runs on the calling thread, a large one is split over the threads") {
  // By default (SGRAPH_PARALLEL_WORK unset; the tests' main sets 0) a nest is split only when its
  // elements times its body's instructions reach 2^19: x * 2 + 1 over 4,096 elements is not, over
  // 1,048,576 it is. Both match the interpreter.
  const char* before = std::getenv("SGRAPH_PARALLEL_WORK");
  const std::string saved = before ? before : "";
  unsetenv("SGRAPH_PARALLEL_WORK");
  CHECK(parallel_work() == (int64_t{1} << 19));
  for (int64_t n : {int64_t{4096}, int64_t{1} << 20}) {
    INFO(n << " elements");
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, {n});
    b.output(b.add(b.mul(x, b.scalar(2.0f)), b.scalar(1.0f)));
    std::unique_ptr<Jit> jit = Jit::create();
    jit->keep_ir(true);
    const RegionRun run = run_region(b.build(), {test::random_f32({n}, 1)}, *jit, 2);
    test::check_tensors_close(run.got[0], run.want[0], 1e-6);
    CHECK(test::contains(jit->last_ir(), "sgraph_parallel_for") == (n > 4096));
  }
  setenv("SGRAPH_PARALLEL_WORK", "1000", 1);
  CHECK(parallel_work() == 1000);
  setenv("SGRAPH_PARALLEL_WORK", "many", 1);  // not a number: the default
  CHECK(parallel_work() == (int64_t{1} << 19));
  if (before)
    setenv("SGRAPH_PARALLEL_WORK", saved.c_str(), 1);
  else
    unsetenv("SGRAPH_PARALLEL_WORK");
}

TEST_CASE("JIT: the same code compiles once, under any name, and lives until its last handle") {
  std::unique_ptr<Jit> jit = Jit::create();
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {5});
  b.output(b.add(b.relu(x), x));
  const Graph g = b.build();
  const Region r = whole_graph(g);
  const std::vector<Shape> shapes(g.values.size(), Shape{5});
  CompiledRegion first = compile_region(*jit, g, r, shapes, "same_name");
  CompiledRegion again = compile_region(*jit, g, r, shapes, "same_name");
  REQUIRE(compiled(first));
  REQUIRE(compiled(again));
  CHECK_FALSE(first.kernel.reused);
  CHECK(again.kernel.reused);
  CHECK(reinterpret_cast<void*>(again.kernel.fn) == reinterpret_cast<void*>(first.kernel.fn));
  CHECK(again.kernel.handle != first.kernel.handle);
  CHECK(jit->live_kernels() == 1);
  // Another name is other code (the name is in the IR); Reuse::never always compiles afresh.
  CompiledRegion other = compile_region(*jit, g, r, shapes, "other_name");
  CompiledRegion fresh = compile_region(*jit, g, r, shapes, "same_name", Jit::Reuse::never);
  CHECK_FALSE(other.kernel.reused);
  CHECK_FALSE(fresh.kernel.reused);
  CHECK(reinterpret_cast<void*>(fresh.kernel.fn) != reinterpret_cast<void*>(first.kernel.fn));
  CHECK(jit->live_kernels() == 3);
  jit->remove(other.kernel.handle);
  jit->remove(fresh.kernel.handle);
  jit->remove(first.kernel.handle);  // `again` still holds the code
  CHECK(jit->live_kernels() == 1);
  Tensor in = test::f32({5}, {-1, 2, -3, 4, 0.5f}), out(DType::f32, {5});
  void* buffers[] = {in.raw_data(), out.raw_data()};
  again.kernel.fn(buffers, nullptr, nullptr);
  test::check_close(out, {5}, {-1, 4, -3, 8, 1});
  jit->remove(again.kernel.handle);
  CHECK(jit->live_kernels() == 0);
  CompiledRegion after = compile_region(*jit, g, r, shapes, "same_name");  // compiled anew
  CHECK_FALSE(after.kernel.reused);
  jit->remove(after.kernel.handle);
}

TEST_CASE("JIT: two threads compile into one JIT at once") {
  auto work = [](uint32_t seed) {
    for (int i = 0; i < 4; ++i) {
      GraphBuilder b;
      const ValueId x = b.input("x", DType::f32, {100});
      b.output(b.sigmoid(b.mul(x, b.scalar(static_cast<float>(i)))));
      const RegionRun run = run_region(b.build(), {test::random_f32({100}, seed + i)});
      for (int64_t k = 0; k < 100; ++k)
        if (std::abs(run.got[0].at_double(k) - run.want[0].at_double(k)) > 1e-5) throw k;
    }
  };
  std::thread t1(work, 1), t2(work, 50);
  t1.join();
  t2.join();
}

TEST_CASE("JIT: regions that cannot be compiled say why") {
  {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::i32, {2, 2});
    b.output(b.relu(b.matmul(x, x)));
    const Graph g = b.build();
    CHECK(!why_not_compilable(g, whole_graph(g)).empty());
    CHECK(test::contains(why_not_compilable(g, whole_graph(g)), "(MatMul): contraction of i32"));
  }
  GraphBuilder b;
  const ValueId x = b.input("x", DType::i32, {3});
  b.output(b.div(x, x));
  const Graph g = b.build();
  const CompiledRegion c =
      compile_region(shared_jit(), g, whole_graph(g), std::vector<Shape>(3, {3}), "div_i32");
  CHECK(!compiled(c));
  CHECK(test::contains(c.why_not, "(Div): its integer divisor is not a constant"));
}

TEST_CASE("JIT: shapes inconsistent with the graph are an error") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {3});
  b.output(b.add(x, b.input("y", DType::f32, {3})));
  const Graph g = b.build();
  std::vector<Shape> shapes = {{3}, {4}, {3}};
  CHECK(test::contains(test::error_of([&] {
                         compile_region(shared_jit(), g, whole_graph(g), shapes, fresh_name());
                       }),
                       "operand shape [4] does not broadcast to [3]"));
}

// ---- Reductions and Softmax inside regions (materialised into kernel-local buffers) ----

namespace {

void check_reduce(OpKind op, DType t, const Shape& s, const Ints& axes, int64_t keep,
                  bool axes_as_input, uint32_t seed) {
  INFO(op_name(op) << " " << dtype_name(t) << shape_str(s) << " axes " << shape_str(axes)
                   << " keepdims " << keep
                   << std::string(axes_as_input ? " (input)" : " (attribute)"));
  const Tensor x = random_of(t, s, seed, -3, 3);
  const auto reduce = [&](GraphBuilder& b, ValueId v) {
    if (axes_as_input) return b.node(op, {v, b.ints(axes)}, Attributes{{"keepdims", keep}}).front();
    return b.node(op, {v}, test::axes_attr(axes, keep)).front();
  };
  {  // alone
    GraphBuilder b;
    b.output(reduce(b, b.input("x", t, to_dims(s))));
    check_region(b.build(), {x}, 1e-4, 1e-5);
  }
  if (t != DType::f32) return;
  {  // with an elementwise producer and consumer: exp(reduce(tanh(x))) * 2
    GraphBuilder b;
    const ValueId r = reduce(b, b.tanh(b.input("x", t, to_dims(s))));
    b.output(b.mul(b.exp(b.neg(b.abs(r))), b.scalar(2.0f)));
    check_region(b.build(), {x}, 1e-4, 1e-5);
  }
}

}  // namespace

TEST_CASE("JIT: ReduceSum, ReduceMean, ReduceMax alone and between elementwise ops") {
  const std::vector<std::pair<Shape, Ints>> cases = {
      {{7}, {0}},       {{1023}, {-1}},      {{3, 7}, {1}},     {{3, 7}, {0}},
      {{1, 1023}, {1}}, {{2, 3, 5}, {0, 2}}, {{2, 3, 5}, {1}},  {{4, 1, 7}, {1}},
      {{2, 3, 5}, {}},  {{5, 1}, {0, 1}},    {{3, 20000}, {0}},  // a heap (malloc'ed) accumulator
  };
  uint32_t seed = 1;
  for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax})
    for (const auto& [s, axes] : cases)
      for (int64_t keep : {0, 1}) {
        check_reduce(op, DType::f32, s, axes, keep, seed % 2 == 0, seed);
        ++seed;
      }
  for (DType t : {DType::f64, DType::i32, DType::i64}) {
    check_reduce(OpKind::ReduceSum, t, {3, 7}, {1}, 1, false, 3);
    check_reduce(OpKind::ReduceMean, t, {3, 7}, {0}, 0, true, 4);
    check_reduce(OpKind::ReduceMax, t, {2, 3, 5}, {0, 2}, 1, false, 5);
  }
  check_reduce(OpKind::ReduceMax, DType::u8, {4, 9}, {1}, 0, false, 6);
  check_reduce(OpKind::ReduceMax, DType::i8, {4, 9}, {0}, 1, true, 7);
}

TEST_CASE("JIT: ArgMax and ArgMin over NaN, infinities and ties pick the interpreter's index") {
  // Rows of 6 drawn from special values: NaN first, last or twice, -inf/+inf as the only values
  // (the start of the running best), ties of equal numbers; every axis, both keepdims and both
  // select_last_index settings, also between elementwise ops.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<float> special = {nan, inf, -inf, 0.5f, -0.5f, 0.5f, -inf, inf, 2.0f};
  Tensor x(DType::f32, {9, 6});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = special[(i * 7 + i / 6) % special.size()];
  for (OpKind op : {OpKind::ArgMax, OpKind::ArgMin})
    for (int64_t axis : {0, 1, -1})
      for (int64_t keep : {0, 1})
        for (int64_t last : {0, 1}) {
          INFO(op_name(op) << " axis " << axis << " keepdims " << keep << " last " << last);
          const Attributes a{{"axis", axis}, {"keepdims", keep}, {"select_last_index", last}};
          {
            GraphBuilder b;
            b.output(b.node(op, {b.input("x", DType::f32, {9, 6})}, a).front());
            check_region_same(b.build(), {x});
          }
          GraphBuilder b;  // relu(x) -> index -> cast -> + 1: the index inside a region
          const ValueId i = b.node(op, {b.relu(b.input("x", DType::f32, {9, 6}))}, a).front();
          b.output(b.add(b.node(OpKind::Cast, {i}, {{"to", int64_t{1}}}).front(), b.scalar(1.0f)));
          check_region_same(b.build(), {x});
        }
}

TEST_CASE("JIT: CumSum adds in the interpreter's order, bit for bit, and integer sums wrap") {
  // Floats of mixed magnitude, where another order of the additions rounds differently; i32 values
  // near the ends of the range, whose sums wrap.
  Tensor f(DType::f32, {5, 33}), i(DType::i32, {5, 33});
  const float mags[] = {1e8f, 1.0f, -1e8f, 3.25f, 1e-3f, -7.0f, 0.1f};
  const int32_t ints[] = {std::numeric_limits<int32_t>::max(), 5, -3,
                          std::numeric_limits<int32_t>::min(), 1 << 30};
  for (int64_t k = 0; k < f.numel(); ++k) {
    f.data<float>()[k] = mags[(k * 5 + k / 33) % 7];
    i.data<int32_t>()[k] = ints[(k * 3 + k / 33) % 5];
  }
  for (const Tensor* x : {&f, &i})
    for (int64_t axis : {0, 1, -2})
      for (int64_t exclusive : {0, 1})
        for (int64_t reverse : {0, 1}) {
          INFO(dtype_name(x->dtype())
               << " axis " << axis << " exclusive " << exclusive << " reverse " << reverse);
          const Attributes a{{"exclusive", exclusive}, {"reverse", reverse}};
          GraphBuilder b;
          const ValueId in = b.input("x", x->dtype(), {5, 33});
          b.output(b.node(OpKind::CumSum, {in, b.ints({axis})}, a).front());
          check_region_same(b.build(), {*x});
        }
  GraphBuilder b;  // between elementwise ops: cumsum(relu(x)) * 2
  const ValueId c = b.node(OpKind::CumSum, {b.relu(b.input("x", DType::f32, {5, 33})), b.ints({1})},
                           Attributes{{"reverse", int64_t{1}}})
                        .front();
  b.output(b.mul(c, b.scalar(2.0f)));
  check_region_same(b.build(), {f});
}

TEST_CASE("JIT: x - ReduceMean(x) over the last axis, and a LayerNorm built from ops") {
  for (const Shape& s : {Shape{1, 1}, Shape{3, 7}, Shape{2, 5, 1023}, Shape{4, 1}}) {
    INFO(shape_str(s));
    const Tensor xt = test::random_f32(s, 11, -2, 2);
    {
      GraphBuilder b;
      const ValueId x = b.input("x", DType::f32, to_dims(s));
      b.output(b.sub(x, b.reduce_mean(x, test::axes_attr({-1}, 1))));
      check_region(b.build(), {xt}, 1e-4, 1e-5);
    }
    const int64_t n = s.back();
    const Tensor gamma = test::random_f32({n}, 12), beta = test::random_f32({n}, 13);
    GraphBuilder b;
    const ValueId x = b.input("x", DType::f32, to_dims(s));
    const ValueId d = b.sub(x, b.reduce_mean(x, test::axes_attr({-1}, 1)));
    const ValueId var = b.reduce_mean(b.pow(d, b.scalar(2.0f)), test::axes_attr({-1}, 1));
    const ValueId y = b.div(d, b.sqrt(b.add(var, b.scalar(1e-5f))));
    b.output(b.add(b.mul(y, b.input("gamma", DType::f32, {n})), b.input("beta", DType::f32, {n})));
    const Graph g = b.build();
    check_region(g, {xt, gamma, beta}, 1e-4, 1e-5);
  }
}

TEST_CASE("JIT: Softmax and LogSoftmax on the last and a middle axis") {
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{7}, 0},        {{1}, -1},      {{3, 1023}, -1}, {{2, 7, 5}, 1},
      {{2, 7, 5}, -2}, {{4, 1, 3}, 1}, {{2, 3, 4}, 0},  {{64, 1024}, 1},
  };
  uint32_t seed = 20;
  for (OpKind op : {OpKind::Softmax, OpKind::LogSoftmax})
    for (const auto& [s, axis] : cases) {
      INFO(op_name(op) << shape_str(s) << " axis " << axis);
      const Tensor x = test::random_f32(s, seed++, -5, 5);
      {
        GraphBuilder b;
        b.output(b.node(op, {b.input("x", DType::f32, to_dims(s))}, {{"axis", axis}}).front());
        check_region(b.build(), {x}, 1e-4, 1e-5);
      }
      GraphBuilder b;  // scaled input, then a consumer (attention-like)
      const ValueId v = b.mul(b.input("x", DType::f32, to_dims(s)), b.scalar(0.5f));
      const ValueId sm = b.node(op, {v}, {{"axis", axis}}).front();
      b.output(b.add(sm, b.scalar(1.0f)));
      check_region(b.build(), {x}, 1e-4, 1e-5);
    }
  GraphBuilder b;  // f64, and two softmaxes in one region
  const ValueId x = b.input("x", DType::f64, {3, 9});
  b.output(b.add(b.softmax(x, Attributes{{"axis", int64_t{0}}}),
                 b.log_softmax(x, Attributes{{"axis", int64_t{1}}})));
  check_region(b.build(), {random_of(DType::f64, {3, 9}, 40, -4, 4)}, 1e-4, 1e-5);
}

TEST_CASE("JIT: Softmax row by row: output buffers, consumers, empty rows, special values") {
  // Over the innermost axis the row's max, exp and sum are made in one nest, into the region's
  // output buffer when the Softmax is a region output (read back there), else a local one.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  Tensor special = test::random_f32({6, 9}, 5, -3, 3);
  float* p = special.data<float>();
  p[0 * 9 + 2] = nan;                                                     // a NaN row
  p[1 * 9 + 4] = inf;                                                     // +inf in a row
  for (int j = 0; j < 9; ++j) p[2 * 9 + j] = -inf;                        // a fully masked row
  for (int j = 0; j < 9; j += 2) p[3 * 9 + j] = -1e9f;                    // masked scores
  for (int j = 0; j < 9; ++j) p[4 * 9 + j] = static_cast<float>(j) * 30;  // exp underflows
  p[5 * 9 + 6] = -nan;  // a NaN of negative sign: the least of the max's integer keys
  for (OpKind op : {OpKind::Softmax, OpKind::LogSoftmax})
    for (int threads : {1, 3}) {
      INFO(op_name(op) << ", threads " << threads);
      {  // the region's output and, read back from it, a consumer's operand
        GraphBuilder b;
        const ValueId sm = b.node(op, {b.input("x", DType::f32, {6, 9})}).front();
        b.output(sm);
        b.output(b.mul(sm, b.add(sm, b.scalar(1.0f))));
        check_region(b.build(), {special}, 1e-5, 1e-6, threads);
      }
      for (const Shape& s : {Shape{5, 0}, Shape{0, 4}, Shape{3, 8, 1}, Shape{2, 1, 300}}) {
        INFO(shape_str(s));
        GraphBuilder b;  // empty rows or no rows; trailing unit dims; a unit middle dim
        const int64_t axis = s.size() == 3 && s[2] == 1 ? 1 : -1;
        const ValueId x = b.input("x", DType::f32, to_dims(s));
        b.output(b.node(op, {b.exp(x)}, {{"axis", axis}}).front());
        check_region(b.build(), {test::random_f32(s, 9, -2, 2)}, 1e-5, 1e-6, threads);
      }
    }
}

TEST_CASE("JIT: Softmax never outputs a denormal (masked scores), within 2x the least normal") {
  // Rows of masked attention scores: a causal mask of -1e9, padding of -1e4, and scores 80-90
  // below the row's max, whose exp divided by the row's sum is a denormal. Intel's cores take a
  // microcode assist for every operation with a denormal operand, so such outputs made the
  // products reading them several times slower. The kernel gives 0 there instead, at most twice
  // the least normal number from the interpreter's (exact) value. Both forms (rows innermost,
  // another axis), f32 and f64, 1 and 2 threads.
  for (DType t : {DType::f32, DType::f64}) {
    const bool f32 = t == DType::f32;
    const double least =
        f32 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
    const double far = f32 ? 85.0 : 705.0;  // exp(-far) / sum is a denormal for sums of 2 and more
    std::vector<double> scores;
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t j = 0; j < 40; ++j) {
        double v = std::sin(static_cast<double>(i * 40 + j));  // scores in [-1, 1]
        if (j > i * 5) v = i % 2 ? -1e9 : -1e4;                // a causal or padding mask
        if (i == 7 && j % 3 == 0) v = -far - static_cast<double>(j) * 0.1;
        scores.push_back(v);
      }
    const Tensor x =
        f32 ? Tensor::from<float>({8, 40}, std::vector<float>(scores.begin(), scores.end()))
            : Tensor::from<double>({8, 40}, scores);
    for (int64_t axis : {int64_t{1}, int64_t{0}})
      for (int threads : {1, 2}) {
        INFO(dtype_name(t) << ", axis " << axis << ", threads " << threads);
        GraphBuilder b;
        const ValueId xv = b.input("x", t, {8, 40});
        const ValueId sm = b.softmax(xv, Attributes{{"axis", axis}});
        b.output(sm);
        const Shape vs = axis == 1 ? Shape{40, 4} : Shape{8, 4};  // (P V, or P^T V along axis 0)
        b.output(b.matmul(axis == 1 ? sm : b.transpose(sm),
                          b.constant("v", random_of(t, vs, 3, -1, 1))));
        const RegionRun run = run_region(b.build(), {x}, shared_jit(), threads);
        int64_t denormals = 0, zeroed = 0;
        for (int64_t i = 0; i < run.got[0].numel(); ++i) {
          const double g = run.got[0].at_double(i), w = run.want[0].at_double(i);
          if (g != 0 && std::fabs(g) < least) ++denormals;
          if (g == 0 && w != 0) ++zeroed;
          CHECK(std::fabs(g - w) <= std::max(2 * least, 1e-5 * std::fabs(w)));
        }
        CHECK(denormals == 0);
        CHECK(zeroed > 0);  // (the interpreter's exact values include denormals: the case is real)
        test::check_tensors_close(run.got[1], run.want[1], 1e-5, 1e-6);
      }
  }
}

TEST_CASE("JIT: rows of every length around the vector widths (the last vector iteration masked)") {
  // A row's loops run whole vectors and then one masked partial vector, no scalar remainder:
  // lengths below, at and past 8 and 16 lanes, an attention row of 40 / 80, a row past one sum
  // chunk; f64 has half the lanes. A lane past the row read or written shows as a wrong value
  // (the neighbouring row's) or an ASan report.
  for (DType t : {DType::f32, DType::f64})
    for (int64_t len : {1, 7, 8, 9, 15, 16, 17, 31, 33, 40, 80, 257})
      for (OpKind op : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::LayerNormalization}) {
        if (op == OpKind::LayerNormalization && t == DType::f64) continue;  // (tested elsewhere)
        INFO(op_name(op) << " " << dtype_name(t) << ", rows of " << len);
        GraphBuilder b;
        const ValueId x = b.input("x", t, {5, len});
        const ValueId y =
            op == OpKind::LayerNormalization
                ? b.node(op, {x, b.constant("scale", test::random_f32({len}, 2, 0.5, 2))},
                         {{"axis", int64_t{-1}}})
                      .front()
                : b.node(op, {b.mul(x, t == DType::f32 ? b.scalar(1.5f) : b.scalar(1.5))}).front();
        b.output(y);
        check_region(b.build(), {random_of(t, {5, len}, 7, -3, 3)}, 1e-4, 1e-5);
      }
}

TEST_CASE("JIT: a reduction made from a reduction, and a reduction as a region output") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {6, 7, 9});
  const ValueId m = b.reduce_max(b.exp(b.mul(x, b.scalar(0.3f))), test::axes_attr({2}, 0));
  const ValueId s =
      b.reduce_sum(b.sub(m, b.reduce_mean(m, test::axes_attr({0}, 1))), test::axes_attr({1}, 1));
  b.output(s, "s");
  b.output(b.mul(m, s), "ms");
  check_region(b.build(), {test::random_f32({6, 7, 9}, 41, -2, 2)}, 1e-4, 1e-5);
}

TEST_CASE("JIT: reductions whose axes input is not a constant cannot be compiled") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::f32, {2, 3});
  b.output(b.reduce_sum(x, b.input("axes", DType::i64, {1})));
  const Graph g = b.build();
  CHECK(test::contains(why_not_compilable(g, whole_graph(g)), "axes input is not a constant"));
}

TEST_CASE("Region compiler: local buffers whose lifetimes do not overlap share the scratch block") {
  // Six Softmaxes in a chain, each held whole in a 128 KiB buffer (past the stack's 64 KiB, so in
  // the scratch block) that only the next one reads: laid end to end they took 768 KiB; placed by
  // lifetime, at most three are live at once (the first, read at the end, and two neighbours). A
  // buffer reused while still live changes the sum; run_region fills the block with NaN first, so a
  // buffer overwritten while still read shows in the outputs.
  const Tensor x = test::random_f32({64, 512}, 9, -4, 4);
  GraphBuilder b;
  ValueId v = b.input("x", DType::f32, {64, 512}), first = kNoValue;
  for (int i = 0; i < 6; ++i) {
    v = b.softmax(b.mul(v, b.scalar(300.0f)));
    if (i == 0) first = v;
  }
  b.output(b.add(v, first));  // (the first buffer stays live to the end)
  const Graph g = b.build();
  constexpr int64_t kBuffer = 64 * 512 * 4;
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    const RegionRun run = run_region(g, {x}, shared_jit(), threads);
    test::check_tensors_close(run.got[0], run.want[0], 1e-4, 1e-6);
    CHECK(run.compiled.scratch_bytes >= kBuffer);
    CHECK(run.compiled.scratch_bytes <= 3 * kBuffer);
  }
}

TEST_CASE("Region compiler: nests doing the same work on other buffers are one function") {
  // Two branches y_i = Softmax(x_i * c_i), each row's nest writing its output: with c_1 == c_2
  // and equal shapes, the second branch's nest is the first's code on other pointers, compiled
  // once and called twice (a function left in the serial kernel, where a nest called once is
  // inlined). Branches whose scalar or row length differs are code of their own. Every variant is
  // checked against the interpreter, so a nest wrongly shared (another scalar, other bounds) shows
  // in the outputs. (A nest whose only bound is its trip count, given by the caller, is the same
  // code at other trip counts.)
  struct Variant {
    float c2;
    int64_t cols2;
    bool shared;
  };
  for (const Variant v :
       {Variant{3.0f, 48, true}, Variant{5.0f, 48, false}, Variant{3.0f, 40, false}}) {
    CAPTURE(v.c2);
    CAPTURE(v.cols2);
    GraphBuilder b;
    const ValueId x1 = b.input("x1", DType::f32, {6, 48});
    const ValueId x2 = b.input("x2", DType::f32, {6, v.cols2});
    b.output(b.softmax(b.mul(x1, b.scalar(3.0f))), "y1");
    b.output(b.softmax(b.mul(x2, b.scalar(v.c2))), "y2");
    const Graph g = b.build();
    const std::vector<Tensor> feeds{test::random_f32({6, 48}, 1, -2, 2),
                                    test::random_f32({6, v.cols2}, 2, -2, 2)};
    std::unique_ptr<Jit> jit = Jit::create();
    jit->keep_ir(true);
    const RegionRun serial = run_region(g, feeds, *jit, 1, fresh_name(), /*serial=*/true);
    for (size_t i = 0; i < 2; ++i) test::check_tensors_close(serial.got[i], serial.want[i], 1e-5);
    CHECK(test::contains(jit->last_ir(), "define internal") == v.shared);
    for (int threads : {1, 2}) {
      const RegionRun run = run_region(g, feeds, *jit, threads);
      for (size_t i = 0; i < 2; ++i) test::check_tensors_close(run.got[i], run.want[i], 1e-5);
    }
  }
}
