// Elementwise unary ops: one table entry per op — its type rule and its scalar function.
#include <cmath>

#include "ops/op.h"

namespace sgraph::ops {
namespace {

// y[i] = f(x[i]) for float inputs.
template <class F>
void map_float(KernelCtx& c, F f) {
  visit_float(c.in[0].dtype(), [&]<class T>() {
    const T* x = c.in[0].data<T>();
    T* y = c.out[0].data<T>();
    const int64_t n = c.in[0].numel();
    for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
  });
}

// y[i] = f(x[i]) for any non-bool input.
template <class F>
void map_numeric(KernelCtx& c, F f) {
  visit_dtype(c.in[0].dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = c.in[0].data<T>();
      T* y = c.out[0].data<T>();
      const int64_t n = c.in[0].numel();
      for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
    } else {
      SG_ASSERT(false) << "numeric op on bool";
    }
  });
}

void types_numeric(TypeCtx& c) {
  c.expect_numeric(0);
  types_same_as_input0(c);
}
void types_signed(TypeCtx& c) {
  c.expect_one_of(0, {DType::f32, DType::f64, DType::i32, DType::i64, DType::i8});
  types_same_as_input0(c);
}

template <class T>
T sigmoid(T x) {
  if (x >= 0) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

#define SG_FLOAT_UNARY(Name, expr)                                       \
  extern const OpDef k##Name;                                            \
  const OpDef k##Name {                                                  \
#Name, 1, 1, 1, 1, types_float_same, shapes_same_as_input0,          \
        [](KernelCtx & c) { map_float(c, [](auto x) { return expr; }); } \
  }

}  // namespace

SG_FLOAT_UNARY(Sqrt, std::sqrt(x));
SG_FLOAT_UNARY(Exp, std::exp(x));
SG_FLOAT_UNARY(Log, std::log(x));
SG_FLOAT_UNARY(Erf, std::erf(x));
SG_FLOAT_UNARY(Tanh, std::tanh(x));
SG_FLOAT_UNARY(Sigmoid, sigmoid(x));

extern const OpDef kNeg;
const OpDef kNeg{"Neg", 1, 1, 1, 1, types_signed, shapes_same_as_input0, [](KernelCtx& c) {
                   map_numeric(c, [](auto x) -> decltype(x) { return -x; });
                 }};

extern const OpDef kAbs;
const OpDef kAbs{"Abs", 1, 1, 1, 1, types_numeric, shapes_same_as_input0, [](KernelCtx& c) {
                   map_numeric(c, [](auto x) -> decltype(x) { return x < 0 ? -x : x; });
                 }};

extern const OpDef kRelu;
const OpDef kRelu{"Relu", 1, 1, 1, 1, types_signed, shapes_same_as_input0, [](KernelCtx& c) {
                    map_numeric(c, [](auto x) -> decltype(x) { return x > 0 ? x : 0; });
                  }};

extern const OpDef kLeakyRelu;
const OpDef kLeakyRelu{
    "LeakyRelu", 1, 1, 1, 1, types_float_same, shapes_same_as_input0, [](KernelCtx& c) {
      const double alpha = c.attrs().get_float("alpha", 0.01);
      map_float(c, [alpha](auto x) -> decltype(x) {
        return x >= 0 ? x : static_cast<decltype(x)>(alpha) * x;
      });
    }};

extern const OpDef kHardSigmoid;
const OpDef kHardSigmoid{
    "HardSigmoid", 1, 1, 1, 1, types_float_same, shapes_same_as_input0, [](KernelCtx& c) {
      const double alpha = c.attrs().get_float("alpha", 0.2);
      const double beta = c.attrs().get_float("beta", 0.5);
      map_float(c, [=](auto x) -> decltype(x) {
        using T = decltype(x);
        const T v = static_cast<T>(alpha) * x + static_cast<T>(beta);
        return std::max(T(0), std::min(T(1), v));
      });
    }};

extern const OpDef kNot;
const OpDef kNot{"Not",
                 1,
                 1,
                 1,
                 1,
                 [](TypeCtx& c) {
                   c.expect_one_of(0, {DType::boolean});
                   types_same_as_input0(c);
                 },
                 shapes_same_as_input0,
                 [](KernelCtx& c) {
                   const bool* x = c.in[0].data<bool>();
                   bool* y = c.out[0].data<bool>();
                   for (int64_t i = 0, n = c.in[0].numel(); i < n; ++i) y[i] = !x[i];
                 }};

// Clip(x, min?, max?): bounds are optional scalar inputs (ONNX 11+).
extern const OpDef kClip;
const OpDef kClip{"Clip",
                  1,
                  3,
                  1,
                  1,
                  [](TypeCtx& c) {
                    c.expect_numeric(0);
                    for (size_t i = 1; i < c.in.size(); ++i)
                      if (c.has(i)) c.expect_same(0, i);
                    types_same_as_input0(c);
                  },
                  [](ShapeCtx& c) {
                    for (size_t i = 1; i < c.in.size(); ++i)
                      SG_CHECK(!c.has(i) || numel(c.shape(i)) == 1)
                          << "Clip bound " << i << " must be a scalar, got shape "
                          << shape_str(c.shape(i));
                    shapes_same_as_input0(c);
                  },
                  [](KernelCtx& c) {
                    visit_dtype(c.in[0].dtype(), [&]<class T>() {
                      if constexpr (!std::is_same_v<T, bool>) {
                        T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
                        if (c.has(1)) lo = c.in[1].data<T>()[0];
                        if (c.has(2)) hi = c.in[2].data<T>()[0];
                        const T* x = c.in[0].data<T>();
                        T* y = c.out[0].data<T>();
                        for (int64_t i = 0, n = c.in[0].numel(); i < n; ++i)
                          y[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);
                      }
                    });
                  }};

// Cast(x) {to = ONNX data type code}. Float to integer truncates toward zero; to bool is x != 0.
extern const OpDef kCast;
const OpDef kCast{"Cast",
                  1,
                  1,
                  1,
                  1,
                  [](TypeCtx& c) { c.out[0] = dtype_from_onnx_code(c.attrs().get_int("to")); },
                  shapes_same_as_input0,
                  [](KernelCtx& c) {
                    const int64_t n = c.in[0].numel();
                    visit_dtype(c.in[0].dtype(), [&]<class S>() {
                      visit_dtype(c.out[0].dtype(), [&]<class D>() {
                        const S* x = c.in[0].data<S>();
                        D* y = c.out[0].data<D>();
                        for (int64_t i = 0; i < n; ++i) {
                          if constexpr (std::is_same_v<D, bool>)
                            y[i] = x[i] != S(0);
                          else
                            y[i] = static_cast<D>(x[i]);
                        }
                      });
                    });
                  }};

}  // namespace sgraph::ops
