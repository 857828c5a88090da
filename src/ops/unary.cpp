// Elementwise unary ops: one table entry per op — its type rule and its scalar function.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "ops/element.h"
#include "ops/grad.h"
#include "ops/int_math.h"
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

// y[i] = f(x[i]) -> bool for float inputs (IsNaN, IsInf).
template <class F>
void classify(KernelCtx& c, F f) {
  visit_float(c.in[0].dtype(), [&]<class T>() {
    const T* x = c.in[0].data<T>();
    bool* y = c.out[0].data<bool>();
    for (int64_t i = 0, n = c.in[0].numel(); i < n; ++i) y[i] = f(x[i]);
  });
}
void types_classify(TypeCtx& c) {
  c.expect_float(0);
  c.out[0] = DType::boolean;
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

// log(1 + e^x) without overflow for large x.
template <class T>
T softplus(T x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

// x * HardSigmoid(x) with alpha 1/6, beta 1/2.
template <class T>
T hard_swish(T x) {
  return x * std::max(T(0), std::min(T(1), x / 6 + T(0.5)));
}

// Rounds a finite value toward zero into an integer dtype, clamping to its range.
template <class T>
T saturate(double v) {
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// A float attribute that must be finite: a NaN or infinite one would poison every output.
double finite_attr(const KernelCtx& c, std::string_view name, double dflt) {
  const double v = c.attrs().get_float(name, dflt);
  SG_CHECK(std::isfinite(v)) << "attribute '" << name << "' must be finite, got " << v;
  return v;
}

// ---- JIT element emitters (src/ops/element.h) ---------------------------------------------

using llvm::Value;

// fn(x) through libm / libmvec.
#define SG_MATH(fn) [](ElementCtx& c, Operands x) { return c.math(#fn, x); }
// An LLVM intrinsic on x.
#define SG_INTRINSIC(id) \
  [](ElementCtx& c, Operands x) { return c.intrinsic(llvm::Intrinsic::id, x); }

// 1 / (1 + exp(-x)): exp(-x) overflows to inf for very negative x, giving 0 as it should.
Value* emit_sigmoid(ElementCtx& c, Operands x) {
  Value* e = c.math("exp", c.b.CreateFNeg(x[0]));
  return c.b.CreateFDiv(c.constant(1), c.b.CreateFAdd(c.constant(1), e));
}
// x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)), i.e. max(x, 0) + log1p(exp(-|x|)).
Value* emit_softplus_of(ElementCtx& c, Value* x) {
  Value* t = c.math("log1p", c.math("exp", c.b.CreateFNeg(c.intrinsic(llvm::Intrinsic::fabs, x))));
  return c.b.CreateSelect(c.b.CreateFCmpOGT(x, c.constant(0)), c.b.CreateFAdd(x, t), t);
}
Value* emit_softplus(ElementCtx& c, Operands x) { return emit_softplus_of(c, x[0]); }
Value* emit_mish(ElementCtx& c, Operands x) {
  return c.b.CreateFMul(c.math("tanh", emit_softplus_of(c, x[0])), x[0]);
}
Value* emit_softsign(ElementCtx& c, Operands x) {
  Value* d = c.b.CreateFAdd(c.constant(1), c.intrinsic(llvm::Intrinsic::fabs, x[0]));
  return c.b.CreateFDiv(x[0], d);
}
Value* emit_reciprocal(ElementCtx& c, Operands x) { return c.b.CreateFDiv(c.constant(1), x[0]); }
// std::max(lo, std::min(hi, v)) exactly as the reference (NaN v gives hi).
Value* clamp_like_std(ElementCtx& c, Value* v, Value* lo, Value* hi) {
  Value* m = c.b.CreateSelect(c.b.CreateFCmpOLT(v, hi), v, hi);
  return c.b.CreateSelect(c.b.CreateFCmpOLT(lo, m), m, lo);
}
Value* emit_hard_swish(ElementCtx& c, Operands x) {
  Value* v = c.b.CreateFAdd(c.b.CreateFDiv(x[0], c.constant(6)), c.constant(0.5));
  return c.b.CreateFMul(x[0], clamp_like_std(c, v, c.constant(0), c.constant(1)));
}
// HardSigmoid's and LeakyRelu's attributes with their ONNX defaults, for the emitter and the
// kernel.
struct AlphaBeta {
  double alpha, beta;
};
AlphaBeta hard_sigmoid_params(const Attributes& a) {
  return {a.get_float("alpha", 0.2), a.get_float("beta", 0.5)};
}
double leaky_relu_alpha(const Attributes& a) { return a.get_float("alpha", 0.01); }

Value* emit_hard_sigmoid(ElementCtx& c, Operands x) {
  const auto [alpha, beta] = hard_sigmoid_params(c.attrs());
  Value* v = c.b.CreateFMul(c.constant(alpha), x[0]);
  v = c.b.CreateFAdd(v, c.constant(beta));
  return clamp_like_std(c, v, c.constant(0), c.constant(1));
}

Value* emit_neg(ElementCtx& c, Operands x) {
  return c.is_float() ? c.b.CreateFNeg(x[0]) : c.b.CreateNeg(x[0]);
}
Value* emit_abs(ElementCtx& c, Operands x) {
  if (c.is_float()) return c.intrinsic(llvm::Intrinsic::fabs, x[0]);
  if (c.is_unsigned()) return x[0];
  Value* args[] = {x[0], c.b.getFalse()};  // abs(INT_MIN) wraps, as in the reference
  return c.intrinsic(llvm::Intrinsic::abs, args);
}
Value* emit_relu(ElementCtx& c, Operands x) {
  Value* zero = c.constant(0);
  Value* pos = c.is_float() ? c.b.CreateFCmpOGT(x[0], zero) : c.b.CreateICmpSGT(x[0], zero);
  return c.b.CreateSelect(pos, x[0], zero);
}
Value* emit_leaky_relu(ElementCtx& c, Operands x) {
  Value* neg = c.b.CreateFMul(c.constant(leaky_relu_alpha(c.attrs())), x[0]);
  return c.b.CreateSelect(c.b.CreateFCmpOGE(x[0], c.constant(0)), x[0], neg);
}
// x < lo ? lo : (x > hi ? hi : x), an absent bound never applying.
Value* emit_clip(ElementCtx& c, Operands x) {
  const bool f = c.is_float(), u = c.is_unsigned();
  Value* r = x[0];
  if (x.size() > 2 && x[2]) {
    Value* above = f ? c.b.CreateFCmpOGT(x[0], x[2])
                     : (u ? c.b.CreateICmpUGT(x[0], x[2]) : c.b.CreateICmpSGT(x[0], x[2]));
    r = c.b.CreateSelect(above, x[2], r);
  }
  if (x.size() > 1 && x[1]) {
    Value* below = f ? c.b.CreateFCmpOLT(x[0], x[1])
                     : (u ? c.b.CreateICmpULT(x[0], x[1]) : c.b.CreateICmpSLT(x[0], x[1]));
    r = c.b.CreateSelect(below, x[1], r);
  }
  return r;
}

// A finite float attribute with its default, nullopt when not finite (the reference throws: the
// emitter then declines, and the node is interpreted).
std::optional<double> finite_attr_of(const ElementCtx& c, std::string_view name, double dflt) {
  const double v = c.attrs().get_float(name, dflt);
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}
// x widened to f64 (as the reference computes), and the result narrowed back to x's type.
Value* wide(ElementCtx& c, Value* x) { return c.b.CreateFPExt(x, c.b.getDoubleTy()); }
Value* narrow(ElementCtx& c, Value* v) { return c.b.CreateFPTrunc(v, c.type(c.out)); }

// x > 0 ? 1 : (x < 0 ? -1 : x): NaN and 0 stay.
Value* emit_sign(ElementCtx& c, Operands x) {
  if (c.is_float()) {
    Value* r = c.b.CreateSelect(c.b.CreateFCmpOLT(x[0], c.constant(0)), c.constant(-1), x[0]);
    return c.b.CreateSelect(c.b.CreateFCmpOGT(x[0], c.constant(0)), c.constant(1), r);
  }
  if (c.is_unsigned()) return c.b.CreateZExt(c.b.CreateICmpNE(x[0], c.constant(0)), c.type(c.out));
  Value* r = c.b.CreateSelect(c.b.CreateICmpSLT(x[0], c.constant(0)), c.constant(-1), x[0]);
  return c.b.CreateSelect(c.b.CreateICmpSGT(x[0], c.constant(0)), c.constant(1), r);
}
// x < 0 ? alpha * expm1(x / scale) : x, in f64 as the reference (Elu: scale 1; Celu: alpha).
Value* exp_linear(ElementCtx& c, Value* x, double alpha, double scale) {
  Value* w = wide(c, x);
  Value* arg = scale == 1 ? w : c.b.CreateFDiv(w, llvm::ConstantFP::get(w->getType(), scale));
  Value* neg = c.b.CreateFMul(llvm::ConstantFP::get(w->getType(), alpha), c.math("expm1", arg));
  return c.b.CreateSelect(c.b.CreateFCmpOLT(x, c.constant(0)), narrow(c, neg), x);
}
Value* emit_elu(ElementCtx& c, Operands x) {
  const std::optional<double> alpha = finite_attr_of(c, "alpha", 1.0);
  return alpha ? exp_linear(c, x[0], *alpha, 1) : nullptr;
}
Value* emit_celu(ElementCtx& c, Operands x) {
  const std::optional<double> alpha = finite_attr_of(c, "alpha", 1.0);
  return alpha && *alpha != 0 ? exp_linear(c, x[0], *alpha, *alpha) : nullptr;
}
Value* emit_selu(ElementCtx& c, Operands x) {
  const std::optional<double> alpha = finite_attr_of(c, "alpha", 1.67326319217681884765625);
  const std::optional<double> gamma = finite_attr_of(c, "gamma", 1.05070102214813232421875);
  if (!alpha || !gamma) return nullptr;
  Value* w = wide(c, x[0]);
  Value* neg = c.b.CreateFMul(llvm::ConstantFP::get(w->getType(), *alpha), c.math("expm1", w));
  Value* v = c.b.CreateSelect(c.b.CreateFCmpOGT(x[0], c.constant(0)), w, neg);
  return narrow(c, c.b.CreateFMul(llvm::ConstantFP::get(w->getType(), *gamma), v));
}
// x > alpha ? x : 0, compared in f64 as the reference compares.
Value* emit_thresholded_relu(ElementCtx& c, Operands x) {
  const std::optional<double> alpha = finite_attr_of(c, "alpha", 1.0);
  if (!alpha) return nullptr;
  Value* above = c.b.CreateFCmpOGT(wide(c, x[0]), llvm::ConstantFP::get(c.b.getDoubleTy(), *alpha));
  return c.b.CreateSelect(above, x[0], c.constant(0));
}
// Floats only (integers round and saturate in the reference): in f64 as the reference.
Value* emit_shrink(ElementCtx& c, Operands x) {
  const std::optional<double> lambd = finite_attr_of(c, "lambd", 0.5),
                              bias = finite_attr_of(c, "bias", 0.0);
  if (!c.is_float() || !lambd || !bias) return nullptr;
  Value* w = wide(c, x[0]);
  const auto k = [&](double v) { return llvm::ConstantFP::get(w->getType(), v); };
  Value* r = c.b.CreateSelect(c.b.CreateFCmpOGT(w, k(*lambd)), c.b.CreateFSub(w, k(*bias)), k(0));
  r = c.b.CreateSelect(c.b.CreateFCmpOLT(w, k(-*lambd)), c.b.CreateFAdd(w, k(*bias)), r);
  return narrow(c, r);
}
Value* emit_is_nan(ElementCtx& c, Operands x) { return c.b.CreateFCmpUNO(x[0], x[0]); }
Value* emit_is_inf(ElementCtx& c, Operands x) {
  const bool neg = c.attrs().get_int("detect_negative", 1) != 0;
  const bool pos = c.attrs().get_int("detect_positive", 1) != 0;
  Value* inf = llvm::ConstantFP::getInfinity(x[0]->getType());
  Value* r = c.b.getFalse();
  if (pos) r = c.b.CreateOr(r, c.b.CreateFCmpOEQ(x[0], inf));
  if (neg) r = c.b.CreateOr(r, c.b.CreateFCmpOEQ(x[0], c.b.CreateFNeg(inf)));
  return r;
}
Value* emit_not(ElementCtx& c, Operands x) { return c.b.CreateNot(x[0]); }

// As the reference: to bool is x != 0 (NaN too), from bool is 0 or 1, float to integer truncates
// toward zero and saturates (NaN gives 0; fptosi would give poison out of range), integers widen
// by their own signedness and narrow by dropping high bits.
Value* emit_cast(ElementCtx& c, Operands x) {
  const DType from = c.in[0], to = c.out;
  llvm::Type* t = c.type(to);
  if (!t || !c.type(from)) return nullptr;
  if (from == to) return x[0];
  if (to == DType::boolean)
    return c.is_float() ? c.b.CreateFCmpUNE(x[0], c.constant(0, from))
                        : c.b.CreateICmpNE(x[0], c.constant(0, from));
  if (c.is_float()) {
    if (is_float(to)) return c.b.CreateFPCast(x[0], t);
    return c.b.CreateIntrinsic(
        to == DType::u8 ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat,
        {t, x[0]->getType()}, {x[0]});
  }
  if (is_float(to)) return c.is_unsigned() ? c.b.CreateUIToFP(x[0], t) : c.b.CreateSIToFP(x[0], t);
  return c.b.CreateIntCast(x[0], t, /*isSigned=*/!c.is_unsigned());
}

// ---- gradient rules (src/ops/grad.h) ---------------------------------------------------------

void grad_neg(GradCtx& c) { c.set(0, c.b.neg(c.dout(0))); }
void grad_relu(GradCtx& c) {  // dy where x > 0, else 0
  const ValueId zero = c.scalar(0, c.in(0));
  c.set(0, c.b.where(c.b.greater(c.in(0), zero), c.dout(0), zero));
}
void grad_exp(GradCtx& c) { c.set(0, c.b.mul(c.dout(0), c.out(0))); }  // dy * y
void grad_log(GradCtx& c) { c.set(0, c.b.div(c.dout(0), c.in(0))); }   // dy / x
void grad_sqrt(GradCtx& c) {                                           // dy * 0.5 / y
  c.set(0, c.b.div(c.b.mul(c.dout(0), c.scalar(0.5, c.out(0))), c.out(0)));
}
void grad_tanh(GradCtx& c) {  // dy * (1 - y * y)
  const ValueId y = c.out(0);
  c.set(0, c.b.mul(c.dout(0), c.b.sub(c.scalar(1, y), c.b.mul(y, y))));
}
void grad_sigmoid(GradCtx& c) {  // dy * y * (1 - y)
  const ValueId y = c.out(0);
  c.set(0, c.b.mul(c.b.mul(c.dout(0), y), c.b.sub(c.scalar(1, y), y)));
}
void grad_cast(GradCtx& c) {  // float to float: dy cast back; nothing flows through other dtypes
  if (is_float(c.dtype(c.out(0))))
    c.set(0, c.b.cast(c.dout(0), Attributes{{"to", onnx_dtype_code(c.dtype(c.in(0)))}}));
}

#define SG_FLOAT_UNARY_GRAD(Name, expr, emit, grad)                                         \
  extern const OpDef k##Name;                                                               \
  const OpDef k##Name = with_grad(                                                          \
      grad, with_element(emit, {#Name, 1, 1, 1, 1, types_float_same, shapes_same_as_input0, \
                                [](KernelCtx& c) { map_float(c, [](auto x) { return expr; }); }}))
#define SG_FLOAT_UNARY(Name, expr, emit) SG_FLOAT_UNARY_GRAD(Name, expr, emit, nullptr)

}  // namespace

SG_FLOAT_UNARY_GRAD(Sqrt, std::sqrt(x), SG_INTRINSIC(sqrt), grad_sqrt);
SG_FLOAT_UNARY_GRAD(Exp, std::exp(x), SG_MATH(exp), grad_exp);
SG_FLOAT_UNARY_GRAD(Log, std::log(x), SG_MATH(log), grad_log);
SG_FLOAT_UNARY(Erf, std::erf(x), SG_MATH(erf));
SG_FLOAT_UNARY_GRAD(Tanh, std::tanh(x), SG_MATH(tanh), grad_tanh);
SG_FLOAT_UNARY_GRAD(Sigmoid, sigmoid(x), emit_sigmoid, grad_sigmoid);
SG_FLOAT_UNARY(Acos, std::acos(x), SG_MATH(acos));
SG_FLOAT_UNARY(Acosh, std::acosh(x), SG_MATH(acosh));
SG_FLOAT_UNARY(Asin, std::asin(x), SG_MATH(asin));
SG_FLOAT_UNARY(Asinh, std::asinh(x), SG_MATH(asinh));
SG_FLOAT_UNARY(Atan, std::atan(x), SG_MATH(atan));
SG_FLOAT_UNARY(Atanh, std::atanh(x), SG_MATH(atanh));
SG_FLOAT_UNARY(Cos, std::cos(x), SG_MATH(cos));
SG_FLOAT_UNARY(Cosh, std::cosh(x), SG_MATH(cosh));
SG_FLOAT_UNARY(Sin, std::sin(x), SG_MATH(sin));
SG_FLOAT_UNARY(Sinh, std::sinh(x), SG_MATH(sinh));
SG_FLOAT_UNARY(Tan, std::tan(x), SG_MATH(tan));
SG_FLOAT_UNARY(Ceil, std::ceil(x), SG_INTRINSIC(ceil));
SG_FLOAT_UNARY(Floor, std::floor(x), SG_INTRINSIC(floor));
// Halves to even (the default rounding mode), which is what llvm.roundeven does in any mode.
SG_FLOAT_UNARY(Round, std::nearbyint(x), SG_INTRINSIC(roundeven));
SG_FLOAT_UNARY(Reciprocal, 1 / x, emit_reciprocal);
SG_FLOAT_UNARY(Softplus, softplus(x), emit_softplus);
SG_FLOAT_UNARY(Softsign, x / (1 + std::abs(x)), emit_softsign);
SG_FLOAT_UNARY(Mish, std::tanh(softplus(x)) * x, emit_mish);
SG_FLOAT_UNARY(HardSwish, hard_swish(x), emit_hard_swish);

extern const OpDef kNeg;
const OpDef kNeg = with_grad(
    grad_neg, with_element(emit_neg, {"Neg", 1, 1, 1, 1, types_signed, shapes_same_as_input0,
                                      [](KernelCtx& c) {
                                        map_numeric(c, [](auto x) { return wrap_neg(x); });
                                      }}));

extern const OpDef kAbs;
const OpDef kAbs = with_element(
    emit_abs, {"Abs", 1, 1, 1, 1, types_numeric, shapes_same_as_input0, [](KernelCtx& c) {
                 map_numeric(c, [](auto x) { return x < 0 ? wrap_neg(x) : x; });
               }});

extern const OpDef kRelu;
const OpDef kRelu = with_grad(
    grad_relu,
    with_element(emit_relu,
                 {"Relu", 1, 1, 1, 1, types_signed, shapes_same_as_input0, [](KernelCtx& c) {
                    map_numeric(c, [](auto x) -> decltype(x) { return x > 0 ? x : 0; });
                  }}));

extern const OpDef kLeakyRelu;
const OpDef kLeakyRelu = with_element(
    emit_leaky_relu,
    {"LeakyRelu", 1, 1, 1, 1, types_float_same, shapes_same_as_input0, [](KernelCtx& c) {
       const double alpha = leaky_relu_alpha(c.attrs());
       map_float(c, [alpha](auto x) -> decltype(x) {
         return x >= 0 ? x : static_cast<decltype(x)>(alpha) * x;
       });
     }});

extern const OpDef kHardSigmoid;
const OpDef kHardSigmoid = with_element(
    emit_hard_sigmoid,
    {"HardSigmoid", 1, 1, 1, 1, types_float_same, shapes_same_as_input0, [](KernelCtx& c) {
       const AlphaBeta p = hard_sigmoid_params(c.attrs());
       map_float(c, [alpha = p.alpha, beta = p.beta](auto x) -> decltype(x) {
         using T = decltype(x);
         const T v = static_cast<T>(alpha) * x + static_cast<T>(beta);
         return std::max(T(0), std::min(T(1), v));
       });
     }});

// Sign: -1, 0 or 1 in the input's dtype; NaN stays NaN.
extern const OpDef kSign;
const OpDef kSign = with_element(
    emit_sign, OpDef{"Sign", 1, 1, 1, 1, types_numeric, shapes_same_as_input0, [](KernelCtx& c) {
                       map_numeric(c, [](auto x) -> decltype(x) {
                         using T = decltype(x);
                         return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
                       });
                     }});

extern const OpDef kElu;
const OpDef kElu = with_element(
    emit_elu, OpDef{"Elu", 1, 1, 1, 1, types_float_same, shapes_same_as_input0, [](KernelCtx& c) {
                      const double alpha = finite_attr(c, "alpha", 1.0);
                      map_float(c, [alpha](auto x) -> decltype(x) {
                        return x < 0 ? static_cast<decltype(x)>(alpha * std::expm1(x)) : x;
                      });
                    }});

// Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
extern const OpDef kCelu;
const OpDef kCelu = with_element(
    emit_celu, OpDef{"Celu", 1, 1, 1, 1, types_float_same, shapes_same_as_input0, [](KernelCtx& c) {
                       const double alpha = finite_attr(c, "alpha", 1.0);
                       SG_CHECK(alpha != 0) << "Celu's alpha must not be 0";
                       map_float(c, [alpha](auto x) -> decltype(x) {
                         return x < 0 ? static_cast<decltype(x)>(alpha * std::expm1(x / alpha)) : x;
                       });
                     }});

// Selu: gamma * (x > 0 ? x : alpha * (exp(x) - 1)), defaults from the ONNX spec.
extern const OpDef kSelu;
const OpDef kSelu = with_element(
    emit_selu, OpDef{"Selu", 1, 1, 1, 1, types_float_same, shapes_same_as_input0, [](KernelCtx& c) {
                       const double alpha = finite_attr(c, "alpha", 1.67326319217681884765625);
                       const double gamma = finite_attr(c, "gamma", 1.05070102214813232421875);
                       map_float(c, [=](auto x) -> decltype(x) {
                         const double v = x > 0 ? double(x) : alpha * std::expm1(double(x));
                         return static_cast<decltype(x)>(gamma * v);
                       });
                     }});

extern const OpDef kThresholdedRelu;
const OpDef kThresholdedRelu = with_element(
    emit_thresholded_relu,
    OpDef{"ThresholdedRelu", 1, 1, 1, 1, types_float_same, shapes_same_as_input0, [](KernelCtx& c) {
            const double alpha = finite_attr(c, "alpha", 1.0);
            map_float(c, [alpha](auto x) -> decltype(x) { return x > alpha ? x : 0; });
          }});

// Shrink: x + bias below -lambd, x - bias above lambd, else 0. Integer results round toward zero
// and saturate.
extern const OpDef kShrink;
const OpDef kShrink = with_element(
    emit_shrink,
    OpDef{"Shrink", 1, 1, 1, 1, types_numeric, shapes_same_as_input0, [](KernelCtx& c) {
            const double lambd = finite_attr(c, "lambd", 0.5), bias = finite_attr(c, "bias", 0.0);
            map_numeric(c, [=](auto x) -> decltype(x) {
              using T = decltype(x);
              const double v = static_cast<double>(x);
              const double r = v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0);
              if constexpr (std::is_floating_point_v<T>)
                return static_cast<T>(r);
              else
                return saturate<T>(r);
            });
          }});

// IsNaN, IsInf: float in, bool out. IsInf's detect_negative / detect_positive (default 1) choose
// which infinities count.
extern const OpDef kIsNaN, kIsInf;
const OpDef kIsNaN = with_element(
    emit_is_nan, OpDef{"IsNaN", 1, 1, 1, 1, types_classify, shapes_same_as_input0,
                       [](KernelCtx& c) { classify(c, [](auto x) { return std::isnan(x); }); }});
const OpDef kIsInf = with_element(
    emit_is_inf,
    OpDef{"IsInf", 1, 1, 1, 1, types_classify, shapes_same_as_input0, [](KernelCtx& c) {
            const bool neg = c.attrs().get_int("detect_negative", 1) != 0;
            const bool pos = c.attrs().get_int("detect_positive", 1) != 0;
            classify(c, [=](auto x) { return std::isinf(x) && (x < 0 ? neg : pos); });
          }});

extern const OpDef kNot;
const OpDef kNot =
    with_element(emit_not, OpDef{"Not", 1, 1, 1, 1,
                                 [](TypeCtx& c) {
                                   c.expect_one_of(0, {DType::boolean});
                                   types_same_as_input0(c);
                                 },
                                 shapes_same_as_input0,
                                 [](KernelCtx& c) {
                                   const bool* x = c.in[0].data<bool>();
                                   bool* y = c.out[0].data<bool>();
                                   for (int64_t i = 0, n = c.in[0].numel(); i < n; ++i)
                                     y[i] = !x[i];
                                 }});

// Clip(x, min?, max?): bounds are optional scalar inputs (ONNX 11+).
extern const OpDef kClip;
const OpDef kClip = with_element(
    emit_clip, {"Clip", 1, 3, 1, 1,
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
                }});

// Cast(x) {to = ONNX data type code}. Float to integer truncates toward zero, saturating (NaN gives
// 0: src/ops/int_math.h); to bool is x != 0.
namespace {
// x cast to y's dtype (both compute types).
void cast_into(const Tensor& x_, Tensor& y_) {
  const int64_t n = x_.numel();
  visit_dtype(x_.dtype(), [&]<class S>() {
    visit_dtype(y_.dtype(), [&]<class D>() {
      const S* x = x_.data<S>();
      D* y = y_.data<D>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<D, bool>)
          y[i] = x[i] != S(0);
        else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>)
          y[i] = saturate_cast<D>(x[i]);
        else
          y[i] = static_cast<D>(x[i]);
      }
    });
  });
}

// A storage type (f16/bf16) on either side goes through f32 (f64 straight to or from it).
void run_cast(KernelCtx& c) {
  const DType from = c.in[0].dtype(), to = c.out[0].dtype();
  if (!is_storage(from) && !is_storage(to)) return cast_into(c.in[0], c.out[0]);
  Tensor x = c.in[0];
  if (is_storage(from)) {
    if (to == DType::f32 || to == DType::f64 || is_storage(to)) {
      const Tensor y = storage_cast(x, to);
      std::memcpy(c.out[0].raw_data(), y.raw_data(), y.nbytes());
      return;
    }
    x = storage_cast(x, DType::f32);
    return cast_into(x, c.out[0]);
  }
  if (from != DType::f32 && from != DType::f64) {
    Tensor wide(DType::f32, x.shape());
    cast_into(x, wide);
    x = wide;
  }
  const Tensor y = storage_cast(x, to);
  std::memcpy(c.out[0].raw_data(), y.raw_data(), y.nbytes());
}

// A Cast between integer types keeps a shape's elements (dims are far inside either range).
std::optional<SymShape> symbolic_value_cast(const Graph& g, const Node& n,
                                            std::span<const SymShape* const>,
                                            std::span<const SymShape* const> elems) {
  const auto is_int = [](DType t) { return t == DType::i64 || t == DType::i32; };
  if (!elems[0] || !is_int(g.values[n.inputs[0]].dtype) || !is_int(g.values[n.outputs[0]].dtype))
    return std::nullopt;
  return *elems[0];
}
}  // namespace

extern const OpDef kCast;
const OpDef kCast = with_symbolic_value(
    symbolic_value_cast,
    with_grad(grad_cast, with_element(emit_cast, {"Cast", 1, 1, 1, 1,
                                                  [](TypeCtx& c) {
                                                    c.out[0] = dtype_from_onnx_code(
                                                        c.attrs().get_int("to"));
                                                  },
                                                  shapes_same_as_input0, run_cast})));

// CastLike(x, like): Cast to like's dtype; like's shape and values are not read. No element
// emitter: the region compiler would read `like` at x's index, but its shape need not broadcast.
extern const OpDef kCastLike;
const OpDef kCastLike{
    "CastLike", 2, 2, 1, 1, [](TypeCtx& c) { c.out[0] = c.in[1]; }, shapes_same_as_input0,
    run_cast};

}  // namespace sgraph::ops
