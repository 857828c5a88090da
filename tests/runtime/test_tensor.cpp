#include <cmath>
#include <cstdint>
#include <memory>

#include "test_util.h"

using namespace sgraph;
using namespace sgraph::test;

TEST_CASE("Tensor: allocation is 64-byte aligned, also for empty tensors") {
  for (Shape s : {Shape{3}, Shape{7, 13}, Shape{0}, Shape{}}) {
    Tensor t(DType::f32, s);
    CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0);
    CHECK(t.numel() == numel(s));
    CHECK(t.nbytes() == static_cast<size_t>(numel(s)) * 4);
  }
}

TEST_CASE("Tensor: copies and reshapes share the buffer, clone does not") {
  Tensor a = Tensor::from<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor v = a.reshape({3, 2});
  CHECK(v.shares_buffer_with(a));
  CHECK(v.shape() == Shape{3, 2});
  v.data<int64_t>()[0] = 42;
  CHECK(a.data<int64_t>()[0] == 42);
  Tensor c = a.clone();
  CHECK_FALSE(c.shares_buffer_with(a));
  c.data<int64_t>()[1] = -1;
  CHECK(a.data<int64_t>()[1] == 2);
  CHECK(a.to_vector<int64_t>() == std::vector<int64_t>{42, 2, 3, 4, 5, 6});
}

TEST_CASE("Tensor: wrap uses external memory and keeps its owner alive") {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  std::weak_ptr<std::vector<float>> watch = owner;
  Tensor t = Tensor::wrap(DType::f32, {2, 2}, owner->data(), owner);
  owner.reset();
  CHECK_FALSE(watch.expired());
  CHECK(t.data<float>()[3] == 4.0f);
  t = Tensor();
  CHECK(watch.expired());
}

TEST_CASE("Tensor: dims, zeros, integer views, printing") {
  Tensor z = Tensor::zeros(DType::f64, {2, 5});
  CHECK(z.dim(-1) == 5);
  CHECK(z.dim(0) == 2);
  for (int64_t i = 0; i < z.numel(); ++i) CHECK(z.data<double>()[i] == 0.0);
  CHECK(Tensor::from<int32_t>({3}, {1, -2, 3}).to_int64() == std::vector<int64_t>{1, -2, 3});
  CHECK(to_string(Tensor::from<float>({2}, {1.5f, 2.0f})) == "f32[2] {1.5, 2}");
  CHECK(to_string(Tensor::zeros(DType::u8, {20}), 2) == "u8[20] {0, 0, ...}");
  CHECK_FALSE(Tensor().defined());
}

TEST_CASE("Tensor: user errors") {
  Tensor a = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(contains(error_of([&] { a.reshape({4}); }), "cannot reshape [2,3] to [4]"));
  CHECK(contains(error_of([&] { a.data<int32_t>(); }), "tensor has dtype f32, accessed as i32"));
  CHECK(contains(error_of([&] {
                   Tensor::from<float>({3}, {1.0f, 2.0f});
                 }),
                 "needs 3 values, got 2"));
  CHECK(contains(error_of([&] { Tensor(DType::f32, {2, -1}); }), "negative dimension"));
  CHECK(contains(error_of([&] {
                   Tensor(DType::f64, {int64_t{1} << 32, int64_t{1} << 30});
                 }),
                 "has too many elements"));
  CHECK(contains(error_of([&] { a.dim(2); }), "dimension 2 out of range for rank 2"));
  CHECK(contains(error_of([&] { a.to_int64(); }), "expected an integer tensor"));
  CHECK(contains(error_of([] { dtype_from_onnx_code(5); }), "ONNX data type code 5"));
}

#if !defined(__SANITIZE_ADDRESS__)  // (AddressSanitizer builds free every block)
TEST_CASE("Tensor: a large block freed is handed out again for the same size class") {
  const void* first = nullptr;
  {
    Tensor t(DType::f32, {512, 1024});  // 2 MiB
    first = t.raw_data();
    t.data<float>()[0] = 1.0f;
  }
  Tensor again(DType::f32, {500, 1040});  // 2,080,000 bytes: the same class (2 to 2.5 MiB)
  CHECK(again.raw_data() == first);
  Tensor other(DType::f32, {512, 1024});  // the block is taken: another one
  CHECK(other.raw_data() != first);
  CHECK(reinterpret_cast<uintptr_t>(other.raw_data()) % 64 == 0);
  Tensor small(DType::f32, {16});  // small blocks come from malloc as before
  CHECK(small.raw_data() != first);
}
#endif

namespace {
// Sets the process's tensor size limit for one scope.
struct TensorLimit {
  int64_t saved = max_tensor_bytes();
  explicit TensorLimit(int64_t bytes) { set_max_tensor_bytes(bytes); }
  ~TensorLimit() { set_max_tensor_bytes(saved); }
};
}  // namespace

TEST_CASE("Tensor: an allocation above the tensor size limit is an sgraph::Error") {
  const TensorLimit limit(int64_t{1} << 20);
  CHECK(contains(error_of([] {
                   Tensor(DType::f32, {512, 513});
                 }),
                 "a tensor f32[512,513] of 1050624 bytes is above the tensor size limit (1048576"));
  CHECK(Tensor(DType::f32, {512, 512}).nbytes() == (size_t{1} << 20));
  CHECK(contains(error_of([] { set_max_tensor_bytes(-1); }), "cannot be negative"));
  set_max_tensor_bytes(0);  // no limit
  CHECK(Tensor(DType::f32, {512, 513}).numel() == 512 * 513);
}

TEST_CASE("Session: an op output above the tensor size limit fails that call only") {
  GraphBuilder b("grow");
  const ValueId x = b.input("x", DType::f32, {Dim("n")});
  b.output(b.relu(b.add(b.neg(x), b.scalar(1.0f))), "y");
  const Graph g = b.build();
  const Tensor small = random_f32({1000}, 1), large = random_f32({300000}, 2);
  for (const bool jit : {false, true}) {
    CAPTURE(jit);
    Session s(g, SessionOptions{.warmup_runs = 2, .min_region_ops = 1, .jit = jit});
    const TensorLimit limit(1000000);
    const std::string interpreted = error_of([&] { s.run({large}); });
    CHECK(contains(interpreted, "above the tensor size limit (1000000 bytes"));
    CHECK(contains(interpreted, "(Neg)"));
    CHECK(s.report().warmup_runs == 0);  // a rejected call is not a warm-up run
    s.run({small});
    s.run({small});
    REQUIRE(s.planned());
    // Served (a kernel, or the planned interpreter): the large call fails again, cleanly, and
    // the next call is served as before.
    CHECK(contains(error_of([&] { s.run({large}); }), "above the tensor size limit"));
    check_tensors_close(s.run({small})[0], Session(g, {.interpret_only = true}).run({small})[0]);
  }
}

TEST_CASE("storage_cast: f32 to f16 and bf16 rounds to nearest even, saturating to infinity") {
  // f16: 1 = 0x3C00, 65504 (the largest) = 0x7BFF, 65520 rounds up to infinity (0x7C00), 1/3 is
  // 0x3555 (0.333251953125), 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even, so 1; 1 + 3 *
  // 2^-11 goes up to 1 + 2^-9 (0x3C02); -2 = 0xC000; 2^-24 (the smallest subnormal) = 0x0001.
  const Tensor x = Tensor::from<float>({9}, {1.0f, 65504.0f, 65520.0f, 1.0f / 3.0f, 1.0f + 0x1p-11f,
                                             1.0f + 3 * 0x1p-11f, -2.0f, 0x1p-24f, 0.0f});
  CHECK(bits_of(storage_cast(x, DType::f16)) ==
        std::vector<uint16_t>{0x3C00, 0x7BFF, 0x7C00, 0x3555, 0x3C00, 0x3C02, 0xC000, 0x0001, 0});
  // bf16: the top 16 bits of the f32, rounded: 1 = 0x3F80, 65504 = 0x477FE000 rounds to 0x4780
  // (65536), 65520 = 0x477FF000 to 0x4780, 1/3 = 0x3EAAAAAB to 0x3EAB, 1 + 2^-11 to 0x3F80 (only
  // 7 fraction bits), -2 = 0xC000.
  const std::vector<uint16_t> bf = bits_of(storage_cast(x, DType::bf16));
  CHECK(bf[0] == 0x3F80);
  CHECK(bf[1] == 0x4780);
  CHECK(bf[2] == 0x4780);
  CHECK(bf[3] == 0x3EAB);
  CHECK(bf[4] == 0x3F80);
  CHECK(bf[6] == 0xC000);
  const Tensor nan = storage_cast(Tensor::from<float>({1}, {std::nanf("")}), DType::f16);
  CHECK(std::isnan(nan.at_double(0)));
}

TEST_CASE("storage_cast: f16 and bf16 widen exactly to f32 and f64") {
  const Tensor h = half_bits(DType::f16, {0x3C00, 0x3555, 0x7C00, 0xFC00, 0x0001, 0xC000});
  const std::vector<float> f = storage_cast(h, DType::f32).to_vector<float>();
  CHECK(f == std::vector<float>{1.0f, 0.333251953125f, INFINITY, -INFINITY, 0x1p-24f, -2.0f});
  CHECK(storage_cast(h, DType::f64).data<double>()[1] == 0.333251953125);
  CHECK(h.at_double(1) == 0.333251953125);
  const Tensor b = half_bits(DType::bf16, {0x3F80, 0x4049, 0xC000});
  CHECK(storage_cast(b, DType::f32).to_vector<float>() ==
        std::vector<float>{1.0f, 3.140625f, -2.0f});
  // f16 to bf16: 1/3 in f16 (0.333251953125 = 0x3EAAA000) is 0x3EAB in bf16.
  CHECK(bits_of(storage_cast(h, DType::bf16))[1] == 0x3EAB);
  CHECK(contains(error_of([&] { storage_cast(Tensor::from<int64_t>({1}, {1}), DType::f16); }),
                 "storage_cast converts f16/bf16"));
  CHECK(contains(error_of([&] { visit_dtype(DType::f16, []<class T>() {}); }),
                 "f16 is a storage type"));
}
