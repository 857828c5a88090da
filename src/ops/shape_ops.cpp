// Shape-producing ops: Shape (a tensor's dims as i64), Size (its element count as an i64
// scalar), Range (arithmetic sequence) and ConstantOfShape (a filled tensor whose dims are an
// input's values).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/op.h"
#include "ops/params.h"

namespace sgraph::ops {

// ---- Shape(data) {start = 0, end = rank}: dims[start:end], negative bounds count from the end.
std::pair<int64_t, int64_t> shape_range(const Attributes& a, int64_t rank) {
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(a.get_int("start", 0)), end = clamp(a.get_int("end", rank));
  return {start, std::max(start, end)};
}

namespace {

void shapes_shape(ShapeCtx& c) {
  const auto [start, end] = shape_range(c.attrs(), c.rank(0));
  c.out[0] = {end - start};
}

void run_shape(KernelCtx& c) {
  const Shape& s = c.in[0].shape();
  const auto [start, end] = shape_range(c.attrs(), c.in[0].rank());
  std::copy(s.begin() + start, s.begin() + end, c.out[0].data<int64_t>());
}

void types_i64(TypeCtx& c) { c.out[0] = DType::i64; }

// Shape's elements are its input's dims, whatever the symbols.
std::optional<SymShape> symbolic_value_shape(const Graph&, const Node& n,
                                             std::span<const SymShape* const> in,
                                             std::span<const SymShape* const>) {
  if (!in[0]) return std::nullopt;
  const auto [start, end] = shape_range(n.attrs, static_cast<int64_t>(in[0]->size()));
  return SymShape(in[0]->begin() + start, in[0]->begin() + end);
}

// ---- Size(data): the element count as an i64 scalar.

// Size's element when it is one dim: at most one symbolic dim, of the affine form, the others
// constants.
std::optional<SymShape> symbolic_value_size(const Graph&, const Node&,
                                            std::span<const SymShape* const> in,
                                            std::span<const SymShape* const>) {
  if (!in[0]) return std::nullopt;
  int64_t c = 1;
  std::optional<SymDim> sym;
  for (const SymDim& d : *in[0]) {
    if (!d.symbolic()) {
      c *= d.offset;
    } else if (sym || !d.affine()) {
      return std::nullopt;
    } else {
      sym = d;
    }
  }
  const std::optional<SymDim> size = sym ? sym->times(c) : SymDim::constant(c);
  return size ? std::optional<SymShape>(SymShape{*size}) : std::nullopt;
}

void shapes_scalar(ShapeCtx& c) { c.out[0] = {}; }
void run_size(KernelCtx& c) { c.out[0].data<int64_t>()[0] = c.in[0].numel(); }

// ---- Range(start, limit, delta): n = max(ceil((limit - start) / delta), 0), out[i] = start +
// i*delta.
constexpr int64_t kMaxRange = int64_t{1} << 60;  // keeps n * element size far from overflow

void types_range(TypeCtx& c) {
  c.expect_one_of(0, {DType::f32, DType::f64, DType::i32, DType::i64});
  c.expect_same(0, 1);
  c.expect_same(0, 2);
  c.out[0] = c.in[0];
}

// Element count for integer bounds, exact over the whole int64 range (unsigned distances).
int64_t range_count_int(int64_t start, int64_t limit, int64_t delta) {
  if (delta > 0 ? limit <= start : limit >= start) return 0;
  const uint64_t dist =
      delta > 0 ? uint64_t(limit) - uint64_t(start) : uint64_t(start) - uint64_t(limit);
  const uint64_t step = delta > 0 ? uint64_t(delta) : uint64_t(0) - uint64_t(delta);
  const uint64_t n = dist / step + (dist % step != 0);
  SG_CHECK(n <= uint64_t(kMaxRange)) << "Range would produce " << n << " elements";
  return static_cast<int64_t>(n);
}

int64_t range_count_float(double start, double limit, double delta) {
  const double n = std::ceil((limit - start) / delta);
  SG_CHECK(std::isfinite(n)) << "Range(" << start << ", " << limit << ", " << delta
                             << ") has no finite element count";
  SG_CHECK(n <= double(kMaxRange)) << "Range would produce " << n << " elements";
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

void shapes_range(ShapeCtx& c) {
  const Tensor* v[3];
  for (size_t i = 0; i < 3; ++i) {
    v[i] = &c.require_value(i);
    SG_CHECK(v[i]->numel() == 1 && v[i]->rank() <= 1)
        << "Range input " << i << " must be a scalar, got shape " << shape_str(v[i]->shape());
  }
  int64_t n = 0;
  if (is_float(v[0]->dtype())) {
    const double delta = v[2]->at_double(0);
    SG_CHECK(delta != 0) << "Range delta must not be 0";
    n = range_count_float(v[0]->at_double(0), v[1]->at_double(0), delta);
  } else {
    const int64_t delta = v[2]->to_int64()[0];
    SG_CHECK(delta != 0) << "Range delta must not be 0";
    n = range_count_int(v[0]->to_int64()[0], v[1]->to_int64()[0], delta);
  }
  c.out[0] = {n};
}

void run_range(KernelCtx& c) {
  visit_dtype(c.in[0].dtype(), [&]<class T>() {
    const T start = c.in[0].data<T>()[0], delta = c.in[2].data<T>()[0];
    T* y = c.out[0].data<T>();
    const int64_t n = c.out[0].numel();
    if constexpr (std::is_floating_point_v<T>) {
      for (int64_t i = 0; i < n; ++i) y[i] = start + static_cast<T>(i) * delta;
    } else {
      // Unsigned arithmetic wraps where signed would overflow; every result is in range.
      for (int64_t i = 0; i < n; ++i)
        y[i] = static_cast<T>(uint64_t(int64_t(start)) + uint64_t(i) * uint64_t(int64_t(delta)));
    }
  });
}

// ---- ConstantOfShape(shape) {value = f32 0}: output dims are the input's values.
}  // namespace

Tensor constant_of_shape_fill(const Attributes& a) {
  if (!a.has("value")) return Tensor::scalar<float>(0.0f);
  const Tensor& v = a.get_tensor("value");
  SG_CHECK(v.defined() && v.numel() == 1)
      << "attribute 'value' must hold exactly one element, got "
      << (v.defined() ? shape_str(v.shape()) : std::string("an undefined tensor"));
  return v;
}

namespace {

void shapes_constant_of_shape(ShapeCtx& c) {
  const Tensor& t = c.require_value(0);
  SG_CHECK(t.rank() == 1) << "shape must be a 1-D tensor, got shape " << shape_str(t.shape());
  Shape dims = t.to_int64();
  int64_t n = 1;
  for (int64_t d : dims) {
    SG_CHECK(d >= 0) << "shape " << shape_str(dims) << " has a negative dimension";
    SG_CHECK(!__builtin_mul_overflow(n, d, &n)) << "shape " << shape_str(dims) << " is too large";
  }
  c.out[0] = std::move(dims);
}

void run_constant_of_shape(KernelCtx& c) {
  const Tensor v = constant_of_shape_fill(c.attrs());
  visit_dtype(v.dtype(), [&]<class T>() {
    std::fill_n(c.out[0].data<T>(), c.out[0].numel(), v.data<T>()[0]);
  });
}

}  // namespace

extern const OpDef kShape, kSize, kRange, kConstantOfShape;

extern const Lowering kShapeLowering, kSizeLowering, kRangeLowering,
    kConstantOfShapeLowering;  // shape_jit.cpp

constexpr OpDef of_shapes(OpDef def) {
  def.value_of_shapes = true;
  return def;
}

const OpDef kShape = with_lowering(
    &kShapeLowering,
    with_symbolic_value(symbolic_value_shape,
                        of_shapes({"Shape", 1, 1, 1, 1, types_i64, shapes_shape, run_shape})));
const OpDef kSize = with_lowering(
    &kSizeLowering,
    with_symbolic_value(symbolic_value_size,
                        of_shapes({"Size", 1, 1, 1, 1, types_i64, shapes_scalar, run_size})));
const OpDef kRange =
    with_lowering(&kRangeLowering, {"Range", 3, 3, 1, 1, types_range, shapes_range, run_range});
const OpDef kConstantOfShape = with_lowering(
    &kConstantOfShapeLowering, OpDef{"ConstantOfShape", 1, 1, 1, 1,
                                     [](TypeCtx& c) {
                                       c.expect_int_index(0);
                                       c.out[0] = constant_of_shape_fill(c.attrs()).dtype();
                                     },
                                     shapes_constant_of_shape, run_constant_of_shape});

std::optional<SymShape> symbolic_value(const Graph& g, const Node& n,
                                       std::span<const SymShape* const> in,
                                       std::span<const SymShape* const> elems) {
  const OpDef& def = op_def(n.op);
  if (def.symbolic_value) return def.symbolic_value(g, n, in, elems);
  if (def.view && !elems.empty() && elems[0]) return *elems[0];  // (same elements, new dims)
  return std::nullopt;
}

}  // namespace sgraph::ops
