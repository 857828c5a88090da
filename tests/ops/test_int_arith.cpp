// Integer arithmetic at the edges of each type (src/ops/int_math.h): defined results, no signal
// and no undefined behaviour (the ASan+UBSan preset runs these with -fno-sanitize-recover), the
// same in the interpreter and in compiled kernels; and shape arithmetic from attributes that
// would overflow is an error naming it.
#include <cstdint>
#include <limits>

#include "jit/region_test_util.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

namespace {

template <class T>
using lim = std::numeric_limits<T>;

template <class T>
Tensor vec(std::vector<T> v) {
  return Tensor::from<T>({static_cast<int64_t>(v.size())}, v);
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  REQUIRE(t.dtype() == dtype_v<T>);
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// A graph of one node over inputs of the given dtypes and length n, its output the graph's.
Graph one_node(OpKind op, std::vector<DType> ins, int64_t n, Attributes attrs = {}) {
  GraphBuilder b("int_arith");
  std::vector<ValueId> vs;
  for (size_t i = 0; i < ins.size(); ++i)
    vs.push_back(b.input("x" + std::to_string(i), ins[i], {n}));
  b.output(b.node(op, vs, std::move(attrs))[0]);
  return b.build();
}

}  // namespace

TEST_CASE("Integer Div: lowest divided by -1 wraps to lowest, no trap, and 0 divisors are errors") {
  CHECK(values_of<int64_t>(run_op(OpKind::Div, {vec<int64_t>({lim<int64_t>::min(), 7, -7}),
                                                vec<int64_t>({-1, -2, 2})})[0]) ==
        std::vector<int64_t>{lim<int64_t>::min(), -3, -3});
  CHECK(values_of<int32_t>(run_op(
            OpKind::Div, {vec<int32_t>({lim<int32_t>::min(), 9}), vec<int32_t>({-1, -1})})[0]) ==
        std::vector<int32_t>{lim<int32_t>::min(), -9});
  CHECK(values_of<int8_t>(
            run_op(OpKind::Div, {vec<int8_t>({-128, 127}), vec<int8_t>({-1, -1})})[0]) ==
        std::vector<int8_t>{-128, -127});
  CHECK(op_error(OpKind::Div, {vec<int64_t>({1, 2}), vec<int64_t>({1, 0})})
            .find("integer division by zero") != std::string::npos);
  CHECK(op_error(OpKind::Mod, {vec<int32_t>({1}), vec<int32_t>({0})})
            .find("integer modulo by zero") != std::string::npos);
  // Mod of lowest by -1 is 0 both ways.
  for (int64_t fmod : {0, 1})
    CHECK(values_of<int64_t>(
              run_op(OpKind::Mod, {vec<int64_t>({lim<int64_t>::min(), -7}), vec<int64_t>({-1, 3})},
                     {{"fmod", fmod}})[0]) == std::vector<int64_t>{0, fmod ? -1 : 2});
}

TEST_CASE("Integer Add, Sub, Mul, Neg, Abs and Pow wrap around like two's complement hardware") {
  const int64_t lo = lim<int64_t>::min(), hi = lim<int64_t>::max();
  CHECK(
      values_of<int64_t>(run_op(OpKind::Add, {vec<int64_t>({hi, lo}), vec<int64_t>({1, -1})})[0]) ==
      std::vector<int64_t>{lo, hi});
  CHECK(
      values_of<int64_t>(run_op(OpKind::Sub, {vec<int64_t>({lo, hi}), vec<int64_t>({1, -1})})[0]) ==
      std::vector<int64_t>{hi, lo});
  // hi * hi = (2^63 - 1)^2 = 2^126 - 2^64 + 1 = 1 (mod 2^64); lo * -1 = lo.
  CHECK(values_of<int64_t>(
            run_op(OpKind::Mul, {vec<int64_t>({hi, lo}), vec<int64_t>({hi, -1})})[0]) ==
        std::vector<int64_t>{1, lo});
  const int32_t lo32 = lim<int32_t>::min();
  CHECK(values_of<int32_t>(
            run_op(OpKind::Mul, {vec<int32_t>({65536, lo32}), vec<int32_t>({65536, 2})})[0]) ==
        std::vector<int32_t>{0, 0});
  CHECK(values_of<int64_t>(run_op(OpKind::Neg, {vec<int64_t>({lo, 5})})[0]) ==
        std::vector<int64_t>{lo, -5});
  CHECK(values_of<int32_t>(run_op(OpKind::Abs, {vec<int32_t>({lo32, -5})})[0]) ==
        std::vector<int32_t>{lo32, 5});
  // 3^41 mod 2^64, read as signed: computed here by repeated multiplication in uint64_t.
  uint64_t p = 1;
  for (int i = 0; i < 41; ++i) p *= 3;
  CHECK(
      values_of<int64_t>(run_op(OpKind::Pow, {vec<int64_t>({3, 2}), vec<int64_t>({41, 64})})[0]) ==
      std::vector<int64_t>{static_cast<int64_t>(p), 0});
  // An integer base with a float exponent saturates (2^100 does not fit).
  CHECK(values_of<int32_t>(
            run_op(OpKind::Pow, {vec<int32_t>({2, -2, 2}), vec<float>({100, 101, 3})})[0]) ==
        std::vector<int32_t>{lim<int32_t>::max(), lo32, 8});
}

TEST_CASE("Cast from float to integers truncates and saturates, NaN gives 0") {
  const float nan = lim<float>::quiet_NaN(), inf = lim<float>::infinity();
  const Tensor x = vec<float>({nan, inf, -inf, 1e30f, -1e30f, 2.9f, -2.9f, 300.7f, -1.5f});
  const auto cast = [&](DType to) {
    return run_op(OpKind::Cast, {x}, {{"to", onnx_dtype_code(to)}})[0];
  };
  const int64_t l64 = lim<int64_t>::min(), h64 = lim<int64_t>::max();
  CHECK(values_of<int64_t>(cast(DType::i64)) ==
        std::vector<int64_t>{0, h64, l64, h64, l64, 2, -2, 300, -1});
  const int32_t l32 = lim<int32_t>::min(), h32 = lim<int32_t>::max();
  CHECK(values_of<int32_t>(cast(DType::i32)) ==
        std::vector<int32_t>{0, h32, l32, h32, l32, 2, -2, 300, -1});
  CHECK(values_of<int8_t>(cast(DType::i8)) ==
        std::vector<int8_t>{0, 127, -128, 127, -128, 2, -2, 127, -1});
  CHECK(values_of<uint8_t>(cast(DType::u8)) ==
        std::vector<uint8_t>{0, 255, 0, 255, 0, 2, 0, 255, 0});
  // From double: the int64 bounds themselves (2^63 is the first value past the top).
  const Tensor d = vec<double>({0x1p63, -0x1p63, 0x1p62});
  CHECK(values_of<int64_t>(run_op(OpKind::Cast, {d}, {{"to", int64_t{7}}})[0]) ==
        std::vector<int64_t>{h64, l64, int64_t{1} << 62});
}

TEST_CASE("Compiled integer arithmetic and casts give the interpreter's results at the edges") {
  using namespace sgraph::test::region;
  const int64_t lo = lim<int64_t>::min(), hi = lim<int64_t>::max();
  const Tensor a = vec<int64_t>({hi, lo, lo, hi, -1, 0, 3, 1 << 20});
  const Tensor b = vec<int64_t>({1, -1, lo, hi, lo, lo, 41, 1 << 20});
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul}) {
    CAPTURE(op_name(op));
    check_region_same(one_node(op, {DType::i64, DType::i64}, 8), {a, b});
  }
  for (OpKind op : {OpKind::Neg, OpKind::Abs}) {
    CAPTURE(op_name(op));
    check_region_same(one_node(op, {DType::i64}, 8), {a});
  }
  const Tensor x = vec<float>({lim<float>::quiet_NaN(), lim<float>::infinity(),
                               -lim<float>::infinity(), 1e30f, -1e30f, 2.9f, -2.9f, 300.7f, -1.5f,
                               127.5f, -128.5f, 255.5f, 0.f, -0.f, 1e-30f, 65536.f});
  for (DType to : {DType::i64, DType::i32, DType::i8, DType::u8}) {
    CAPTURE(dtype_name(to));
    check_region_same(one_node(OpKind::Cast, {DType::f32}, 16, {{"to", onnx_dtype_code(to)}}), {x});
  }
}

TEST_CASE("Compiled Mod and Div: integers by constant divisors (signs, -1, lowest), fmod") {
  using namespace sgraph::test::region;
  // Every dividend against every divisor (broadcast [8,1] by [7]): Mod with and without fmod,
  // and Div (fmod 2 below).
  const auto check = [&]<class T>(std::vector<T> dividends, std::vector<T> divisors) {
    for (int64_t fmod : {0, 1, 2}) {
      CAPTURE(fmod);
      GraphBuilder b("mod");
      const int64_t n = static_cast<int64_t>(dividends.size());
      const ValueId x = b.input("x", dtype_v<T>, {n, 1});
      const ValueId d =
          b.constant("d", Tensor::from<T>({static_cast<int64_t>(divisors.size())}, divisors));
      b.output(fmod == 2 ? b.node(OpKind::Div, {x, d})[0]
                         : b.node(OpKind::Mod, {x, d}, {{"fmod", fmod}})[0]);
      check_region_same(b.build(), {Tensor::from<T>({n, 1}, dividends)});
    }
  };
  const int64_t lo = lim<int64_t>::min(), hi = lim<int64_t>::max();
  check.operator()<int64_t>({lo, hi, -7, 7, -1, 0, 1, 6}, {-1, 1, 3, -3, 7, lo, hi});
  check.operator()<int32_t>({lim<int32_t>::min(), -7, 7, 0, 5, -5, 13, 2},
                            {-1, 3, -3, 2, 5, -6, 1});
  check.operator()<int8_t>({-128, 127, -7, 7, 0, -1, 1, 100}, {-1, 3, -3, 2, 127, -128, 1});
  check.operator()<uint8_t>({255, 0, 7, 200, 1, 2, 3, 128}, {1, 3, 2, 255, 7, 10, 100});
  // Floats: C's fmod, with zero divisors (NaN), infinities and signed zeros.
  const float inf = lim<float>::infinity(), nan = lim<float>::quiet_NaN();
  GraphBuilder b("fmod");
  const ValueId x = b.input("x", DType::f32, {8, 1}), y = b.input("y", DType::f32, {7});
  b.output(b.node(OpKind::Mod, {x, y}, {{"fmod", int64_t{1}}})[0]);
  check_region_same(b.build(),
                    {Tensor::from<float>({8, 1}, {5.5f, -5.5f, 0.f, -0.f, inf, nan, 1e30f, 3.f}),
                     Tensor::from<float>({7}, {2.f, -2.f, 0.f, inf, nan, 0.25f, -1e-3f})});
  // A divisor that is not a constant, or a constant holding a zero: the op stays interpreted.
  GraphBuilder c("mod_input");
  c.output(c.node(OpKind::Mod, {c.input("x", DType::i32, {4}), c.input("y", DType::i32, {4})})[0]);
  const Graph g = c.build();
  CHECK(test::contains(jit::why_not_compilable(g, whole_graph(g)), "not a constant"));
  GraphBuilder z("mod_zero");
  z.output(z.node(OpKind::Mod, {z.input("x", DType::i32, {2}),
                                z.constant("d", Tensor::from<int32_t>({2}, {3, 0}))})[0]);
  const Graph gz = z.build();
  CHECK(test::contains(jit::why_not_compilable(gz, whole_graph(gz)), "holds a zero"));
  GraphBuilder v("div_input");
  v.output(v.node(OpKind::Div, {v.input("x", DType::i64, {4}), v.input("y", DType::i64, {4})})[0]);
  const Graph gv = v.build();
  CHECK(test::contains(jit::why_not_compilable(gv, whole_graph(gv)), "not a constant"));
}

TEST_CASE("Window sizes from attributes that overflow int64 are errors naming them") {
  const Tensor x = Tensor::zeros(DType::f32, {1, 1, 8, 8});
  const int64_t big = int64_t{1} << 62;
  // kernel (2^62) with dilation 4: the extent overflows.
  CHECK(op_error(OpKind::MaxPool, {x}, {{"kernel_shape", Ints{big, 1}}, {"dilations", Ints{4, 1}}})
            .find("the kernel extent overflows") != std::string::npos);
  // pads that overflow the padded size.
  CHECK(op_error(OpKind::AveragePool, {x},
                 {{"kernel_shape", Ints{2, 2}}, {"pads", Ints{lim<int64_t>::max(), 0, 1, 0}}})
            .find("overflows") != std::string::npos);
  CHECK(op_error(OpKind::MaxPool, {x},
                 {{"kernel_shape", Ints{2, 2}},
                  {"auto_pad", std::string("SAME_UPPER")},
                  {"strides", Ints{lim<int64_t>::max(), 1}}})
            .find("overflows") != std::string::npos);
  const Tensor w = Tensor::zeros(DType::f32, {1, 1, 3, 3});
  CHECK(op_error(OpKind::ConvTranspose, {x, w}, {{"strides", Ints{big, 1}}})
            .find("the output size overflows") != std::string::npos);
  CHECK(op_error(OpKind::ConvTranspose, {x, w},
                 {{"pads", Ints{lim<int64_t>::max(), 0, lim<int64_t>::max(), 0}}})
            .find("the pads overflows") != std::string::npos);
  CHECK(op_error(OpKind::ConvTranspose, {x, w}, {{"output_shape", Ints{lim<int64_t>::max(), 8}}})
            .find("too many elements") != std::string::npos);
  CHECK(op_error(OpKind::Conv, {x, w}, {{"dilations", Ints{big, 1}}})
            .find("the kernel extent overflows") != std::string::npos);
  // Pad: a pad past the bound is refused before any size is computed from it.
  CHECK(op_error(OpKind::Pad, {x, vec<int64_t>({0, 0, lim<int64_t>::min(), 0, 0, 0, 0, 0})}, {}, 1,
                 {false, true})
            .find("out of range") != std::string::npos);
  // Split sizes whose sum overflows.
  CHECK(op_error(OpKind::Split, {vec<float>({1, 2})}, {{"split", Ints{lim<int64_t>::max(), 1}}}, 2)
            .find("the sum of the split sizes overflows") != std::string::npos);
}
