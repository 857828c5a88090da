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
  CHECK(contains(error_of([] { dtype_from_onnx_code(10); }), "ONNX data type code 10"));
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
