// Elementwise binary (and variadic Max/Min/Sum/Mean, ternary Where) ops with numpy-style
// broadcasting.
#include <cmath>

#include "ops/element.h"
#include "ops/grad.h"
#include "ops/int_math.h"
#include "ops/lowering.h"
#include "ops/op.h"

namespace sgraph::ops {
namespace {

// out[i] = f(a[ia], b[ib]) over the broadcast of a and b; the output is allocated already.
template <class A, class B, class O, class F>
void broadcast_apply(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.data<O>();
  const int64_t n = out.numel();
  if (a.shape() == out.shape() && b.shape() == out.shape()) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
  } else if (a.shape() == out.shape() && b.numel() == 1) {
    const B s = pb[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], s);
  } else {
    const std::array<Shape, 2> st{broadcast_strides(a.shape(), out.shape()),
                                  broadcast_strides(b.shape(), out.shape())};
    for_each_broadcast<2>(out.shape(), st, [&](int64_t i, const std::array<int64_t, 2>& o) {
      po[i] = f(pa[o[0]], pb[o[1]]);
    });
  }
}

void shapes_broadcast(ShapeCtx& c) {
  Shape s = c.shape(0);
  for (size_t i = 1; i < c.in.size(); ++i) s = broadcast_shapes(s, c.shape(i));
  c.out[0] = std::move(s);
}

void types_arith(TypeCtx& c) {
  for (size_t i = 0; i < c.in.size(); ++i) {
    c.expect_numeric(i);
    c.expect_same(0, i);
  }
  c.out[0] = c.in[0];
}

void types_compare(TypeCtx& c) {
  c.expect_same(0, 1);
  if (c.node.op != OpKind::Equal) c.expect_numeric(0);
  c.out[0] = DType::boolean;
}

void types_float_variadic(TypeCtx& c) {
  for (size_t i = 0; i < c.in.size(); ++i) {
    c.expect_float(i);
    c.expect_same(0, i);
  }
  c.out[0] = c.in[0];
}

void types_logical(TypeCtx& c) {
  c.expect_one_of(0, {DType::boolean});
  c.expect_one_of(1, {DType::boolean});
  c.out[0] = DType::boolean;
}

// Mod's fmod attribute: 0 = the remainder takes the divisor's sign (integers only), 1 = C fmod.
bool mod_is_fmod(const Attributes& attrs) {
  const int64_t fmod = attrs.get_int("fmod", 0);
  SG_CHECK(fmod == 0 || fmod == 1) << "fmod must be 0 or 1, got " << fmod;
  return fmod == 1;
}

template <class F>
void arith(KernelCtx& c, F f) {
  visit_dtype(c.in[0].dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) broadcast_apply<T, T, T>(c.in[0], c.in[1], c.out[0], f);
  });
}

// Variadic Max/Min: fold the inputs pairwise into the output.
template <class F>
void fold(KernelCtx& c, F f) {
  visit_dtype(c.in[0].dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      if (c.in.size() == 1) {
        broadcast_apply<T, T, T>(c.in[0], c.in[0], c.out[0], [](T x, T) { return x; });
        return;
      }
      Tensor acc = c.in[0];
      for (size_t i = 1; i < c.in.size(); ++i) {
        Tensor dst = i + 1 == c.in.size()
                         ? c.out[0]
                         : Tensor(acc.dtype(), broadcast_shapes(acc.shape(), c.in[i].shape()));
        broadcast_apply<T, T, T>(acc, c.in[i], dst, f);
        acc = dst;
      }
    }
  });
}

template <class F>
void logical(KernelCtx& c, F f) {
  broadcast_apply<bool, bool, bool>(c.in[0], c.in[1], c.out[0], f);
}

template <class F>
void compare(KernelCtx& c, F f) {
  visit_dtype(c.in[0].dtype(),
              [&]<class T>() { broadcast_apply<T, T, bool>(c.in[0], c.in[1], c.out[0], f); });
}

// Integer power by squaring, wrapping on overflow (negative exponents truncate as C integer
// division would).
template <class T>
T ipow(T base, int64_t e) {
  if (e < 0) return base == 1 ? 1 : (base == -1 ? (e % 2 ? -1 : 1) : 0);
  T r = 1;
  while (e) {
    if (e & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return r;
}

// ---- JIT element emitters (src/ops/element.h) ---------------------------------------------

using llvm::CmpInst;
using llvm::Value;

Value* emit_add(ElementCtx& c, Operands x) {
  return c.is_float() ? c.b.CreateFAdd(x[0], x[1]) : c.b.CreateAdd(x[0], x[1]);
}
Value* emit_sub(ElementCtx& c, Operands x) {
  return c.is_float() ? c.b.CreateFSub(x[0], x[1]) : c.b.CreateSub(x[0], x[1]);
}
Value* emit_mul(ElementCtx& c, Operands x) {
  return c.is_float() ? c.b.CreateFMul(x[0], x[1]) : c.b.CreateMul(x[0], x[1]);
}
// Floats only: an integer division by zero would trap where the reference throws.
// A signed integer divisor b for sdiv/srem: 1 where b is -1 (`minus_one`), whose quotient and
// remainder the caller makes itself (lowest / -1 and lowest % -1 overflow). b has no zero
// (why_not_divisor).
struct SignedDivisor {
  Value* minus_one;
  Value* d;
};
SignedDivisor signed_divisor(ElementCtx& c, Value* b) {
  Value* minus_one = c.b.CreateICmpEQ(b, c.constant(-1));
  return {minus_one, c.b.CreateSelect(minus_one, c.constant(1), b)};
}

// Integers as the reference: truncation toward zero, lowest / -1 wrapping to lowest.
Value* emit_div(ElementCtx& c, Operands x) {
  if (c.is_float()) return c.b.CreateFDiv(x[0], x[1]);
  if (c.in[0] == DType::boolean) return nullptr;
  llvm::IRBuilderBase& b = c.b;
  if (c.is_unsigned()) return b.CreateUDiv(x[0], x[1]);
  const auto [minus_one, d] = signed_divisor(c, x[1]);
  return b.CreateSelect(minus_one, b.CreateSub(c.constant(0), x[0]), b.CreateSDiv(x[0], d));
}
// pow in x's float type, the exponent converted to it (integer x: not compiled).
Value* emit_pow(ElementCtx& c, Operands x) {
  if (!c.is_float(0) || c.in[1] == DType::boolean) return nullptr;
  llvm::Type* t = x[0]->getType();
  Value* y = c.is_float(1)      ? c.b.CreateFPCast(x[1], t)
             : c.is_unsigned(1) ? c.b.CreateUIToFP(x[1], t)
                                : c.b.CreateSIToFP(x[1], t);
  Value* args[] = {x[0], y};
  return c.math("pow", args);
}

// Variadic Max/Min: NaN-propagating for floats, as the reference.
Value* fold(ElementCtx& c, Operands x, llvm::Intrinsic::ID f, llvm::Intrinsic::ID s,
            llvm::Intrinsic::ID u) {
  const llvm::Intrinsic::ID id = c.is_float() ? f : (c.is_unsigned() ? u : s);
  Value* acc = x[0];
  for (size_t i = 1; i < x.size(); ++i) {
    Value* args[] = {acc, x[i]};
    acc = c.intrinsic(id, args);
  }
  return acc;
}
Value* emit_max(ElementCtx& c, Operands x) {
  return fold(c, x, llvm::Intrinsic::maximum, llvm::Intrinsic::smax, llvm::Intrinsic::umax);
}
Value* emit_min(ElementCtx& c, Operands x) {
  return fold(c, x, llvm::Intrinsic::minimum, llvm::Intrinsic::smin, llvm::Intrinsic::umin);
}
// Sum and Mean add in input order, as the reference does.
Value* emit_sum(ElementCtx& c, Operands x) {
  Value* acc = x[0];
  for (size_t i = 1; i < x.size(); ++i) acc = c.b.CreateFAdd(acc, x[i]);
  return acc;
}
Value* emit_mean(ElementCtx& c, Operands x) {
  return c.b.CreateFDiv(emit_sum(c, x), c.constant(static_cast<double>(x.size())));
}

// Comparisons give i1; floats compare ordered (false with a NaN).
Value* compare(ElementCtx& c, Operands x, CmpInst::Predicate f, CmpInst::Predicate s,
               CmpInst::Predicate u) {
  if (c.is_float()) return c.b.CreateFCmp(f, x[0], x[1]);
  return c.b.CreateICmp(c.is_unsigned() ? u : s, x[0], x[1]);
}
Value* emit_equal(ElementCtx& c, Operands x) {
  return compare(c, x, CmpInst::FCMP_OEQ, CmpInst::ICMP_EQ, CmpInst::ICMP_EQ);
}
Value* emit_greater(ElementCtx& c, Operands x) {
  return compare(c, x, CmpInst::FCMP_OGT, CmpInst::ICMP_SGT, CmpInst::ICMP_UGT);
}
Value* emit_less(ElementCtx& c, Operands x) {
  return compare(c, x, CmpInst::FCMP_OLT, CmpInst::ICMP_SLT, CmpInst::ICMP_ULT);
}
Value* emit_greater_or_equal(ElementCtx& c, Operands x) {
  return compare(c, x, CmpInst::FCMP_OGE, CmpInst::ICMP_SGE, CmpInst::ICMP_UGE);
}
Value* emit_less_or_equal(ElementCtx& c, Operands x) {
  return compare(c, x, CmpInst::FCMP_OLE, CmpInst::ICMP_SLE, CmpInst::ICMP_ULE);
}
// Mod as the reference computes it: floats C's fmod (frem); integers C's remainder, moved to the
// divisor's sign without fmod, and 0 for a divisor of -1 (where the remainder of the lowest value
// would overflow).
Value* emit_mod(ElementCtx& c, Operands x) {
  if (c.is_float()) return c.b.CreateFRem(x[0], x[1]);
  if (c.in[0] == DType::boolean) return nullptr;
  llvm::IRBuilderBase& b = c.b;
  if (c.is_unsigned()) return b.CreateURem(x[0], x[1]);
  const auto [minus_one, d] = signed_divisor(c, x[1]);
  Value* r = b.CreateSRem(x[0], d);
  if (c.attrs().get_int("fmod", 0) == 0) {
    Value* other_sign =
        b.CreateICmpNE(b.CreateICmpSLT(r, c.constant(0)), b.CreateICmpSLT(d, c.constant(0)));
    Value* moved = b.CreateAnd(b.CreateICmpNE(r, c.constant(0)), other_sign);
    r = b.CreateSelect(moved, b.CreateAdd(r, d), r);
  }
  return b.CreateSelect(minus_one, c.constant(0), r);
}

Value* emit_and(ElementCtx& c, Operands x) { return c.b.CreateAnd(x[0], x[1]); }
Value* emit_or(ElementCtx& c, Operands x) { return c.b.CreateOr(x[0], x[1]); }
Value* emit_xor(ElementCtx& c, Operands x) { return c.b.CreateXor(x[0], x[1]); }

Value* emit_prelu(ElementCtx& c, Operands x) {
  Value* neg = c.is_float() ? c.b.CreateFCmpOLT(x[0], c.constant(0))
                            : c.b.CreateICmpSLT(x[0], c.constant(0));
  return c.b.CreateSelect(neg, emit_mul(c, x.subspan(0, 2)), x[0]);
}
Value* emit_where(ElementCtx& c, Operands x) { return c.b.CreateSelect(x[0], x[1], x[2]); }

// ---- gradient rules (src/ops/grad.h): an operand's gradient is summed back to its shape -------

void grad_add(GradCtx& c) {
  for (size_t i = 0; i < 2; ++i)
    if (c.wants(i)) c.set(i, c.sum_to(c.dout(0), c.in(i)));
}
void grad_sub(GradCtx& c) {
  if (c.wants(0)) c.set(0, c.sum_to(c.dout(0), c.in(0)));
  if (c.wants(1)) c.set(1, c.sum_to(c.b.neg(c.dout(0)), c.in(1)));
}
void grad_mul(GradCtx& c) {  // d(a * b) = dy * b, dy * a
  for (size_t i = 0; i < 2; ++i)
    if (c.wants(i)) c.set(i, c.sum_to(c.b.mul(c.dout(0), c.in(1 - i)), c.in(i)));
}
void grad_div(GradCtx& c) {  // y = a / b: da = dy / b, db = -dy * y / b
  const ValueId dy = c.dout(0), b = c.in(1);
  if (c.wants(0)) c.set(0, c.sum_to(c.b.div(dy, b), c.in(0)));
  if (c.wants(1)) c.set(1, c.sum_to(c.b.neg(c.b.div(c.b.mul(dy, c.out(0)), b)), b));
}
void grad_sum(GradCtx& c) {  // Sum and Mean: every input gets dy (divided by their count)
  ValueId dy = c.dout(0);
  if (c.node.op == OpKind::Mean)
    dy = c.b.div(dy, c.scalar(static_cast<double>(c.node.inputs.size()), dy));
  for (size_t i = 0; i < c.node.inputs.size(); ++i)
    if (c.wants(i)) c.set(i, c.sum_to(dy, c.in(i)));
}
void grad_where(GradCtx& c) {  // the chosen value input gets dy, the other 0; cond gets nothing
  const ValueId zero = c.scalar(0, c.dout(0));
  if (c.wants(1)) c.set(1, c.sum_to(c.b.where(c.in(0), c.dout(0), zero), c.in(1)));
  if (c.wants(2)) c.set(2, c.sum_to(c.b.where(c.in(0), zero, c.dout(0)), c.in(2)));
}

// Add, Sub and Mul of a shape's elements by constants (x.size(1) * 2, a length less one), for
// integer vectors of known elements, one of them a single element or both the same length: a
// form stays one (a multiple of a floor division is none); nullopt otherwise.
std::optional<SymShape> symbolic_value_arith(const Graph& g, const Node& n,
                                             std::span<const SymShape* const>,
                                             std::span<const SymShape* const> elems) {
  const DType t = g.values[n.outputs[0]].dtype;
  if ((t != DType::i64 && t != DType::i32) || !elems[0] || !elems[1]) return std::nullopt;
  const SymShape &a = *elems[0], &b = *elems[1];
  if (!(a.size() == b.size() || a.size() == 1 || b.size() == 1)) return std::nullopt;
  const auto one = [&](const SymDim& x, const SymDim& y) -> std::optional<SymDim> {
    if (x.symbolic() && y.symbolic()) return std::nullopt;
    if (!x.symbolic() && !y.symbolic())
      return SymDim::constant(n.op == OpKind::Add   ? x.offset + y.offset
                              : n.op == OpKind::Sub ? x.offset - y.offset
                                                    : x.offset * y.offset);
    if (n.op == OpKind::Add) return x.symbolic() ? x.plus(y.offset) : y.plus(x.offset);
    if (n.op == OpKind::Sub) {
      if (!x.symbolic()) return std::nullopt;  // (c - dim: a negative scale)
      return x.plus(-y.offset);
    }
    return x.symbolic() ? x.times(y.offset) : y.times(x.offset);
  };
  SymShape out;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::optional<SymDim> r = one(a[a.size() == 1 ? 0 : i], b[b.size() == 1 ? 0 : i]);
    if (!r) return std::nullopt;
    out.push_back(*r);
  }
  return out;
}

}  // namespace

extern const OpDef kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kEqual, kGreater, kLess, kWhere;
extern const OpDef kGreaterOrEqual, kLessOrEqual, kAnd, kOr, kXor, kMod, kSum, kMean, kPRelu;

// Add, Sub, Mul: wrapping integer arithmetic, and the elements of a shape's arithmetic.
#define SG_ARITH(Name, emit, grad, wrap)                                                         \
  const OpDef k##Name = with_symbolic_value(                                                     \
      symbolic_value_arith,                                                                      \
      with_grad(grad, with_element(emit, {#Name, 2, 2, 1, 1, types_arith, shapes_broadcast,      \
                                          [](KernelCtx& c) {                                     \
                                            arith(c, [](auto a, auto b) { return wrap(a, b); }); \
                                          }})))
SG_ARITH(Add, emit_add, grad_add, wrap_add);
SG_ARITH(Sub, emit_sub, grad_sub, wrap_sub);
SG_ARITH(Mul, emit_mul, grad_mul, wrap_mul);
#undef SG_ARITH
namespace {
// An integer Div or Mod compiles only with a constant divisor holding no zero: the interpreter's
// error for a zero divisor is not one a kernel can raise.
std::string why_not_divisor(const Graph& g, const Node& n) {
  if (is_float(g.values[n.inputs[0]].dtype)) return "";
  const Tensor& d = g.values[n.inputs[1]].initializer;
  if (!d.defined())
    return "its integer divisor is not a constant (a kernel cannot raise the interpreter's error "
           "for a zero divisor)";
  for (int64_t i = 0; i < d.numel(); ++i)
    if (d.at_double(i) == 0) return "its constant integer divisor holds a zero";
  return "";
}
const Lowering kDivisorLowering{.why_not = why_not_divisor};
}  // namespace

// Integer division truncates toward zero (lowest / -1 wraps to lowest); division by zero is an
// error for integers.
const OpDef kDiv = with_lowering(
    &kDivisorLowering,
    with_grad(grad_div, with_element(emit_div, {"Div", 2, 2, 1, 1, types_arith, shapes_broadcast,
                                                [](KernelCtx& c) {
                                                  arith(c, [](auto a, auto b) -> decltype(a) {
                                                    if constexpr (std::is_integral_v<decltype(a)>) {
                                                      SG_CHECK(b != 0)
                                                          << "integer division by zero";
                                                      return int_div(a, b);
                                                    } else {
                                                      return a / b;
                                                    }
                                                  });
                                                }})));

// Pow(x, y): y may have another numeric dtype than x; the result has x's dtype.
const OpDef kPow = with_element(
    emit_pow,
    {"Pow", 2, 2, 1, 1,
     [](TypeCtx& c) {
       c.expect_numeric(0);
       c.expect_numeric(1);
       c.out[0] = c.in[0];
     },
     shapes_broadcast,
     [](KernelCtx& c) {
       visit_dtype(c.in[0].dtype(), [&]<class X>() {
         visit_dtype(c.in[1].dtype(), [&]<class Y>() {
           if constexpr (!std::is_same_v<X, bool> && !std::is_same_v<Y, bool>) {
             broadcast_apply<X, Y, X>(c.in[0], c.in[1], c.out[0], [](X a, Y b) -> X {
               if constexpr (std::is_integral_v<X> && std::is_integral_v<Y>)
                 return ipow<X>(a, static_cast<int64_t>(b));
               else if constexpr (std::is_integral_v<X>)
                 return saturate_cast<X>(std::pow(static_cast<double>(a), static_cast<double>(b)));
               else
                 return static_cast<X>(std::pow(static_cast<double>(a), static_cast<double>(b)));
             });
           }
         });
       });
     }});

const OpDef kMax =
    with_element(emit_max, {"Max", 1, 64, 1, 1, types_arith, shapes_broadcast, [](KernelCtx& c) {
                              fold(c, [](auto a, auto b) -> decltype(a) {
                                if constexpr (std::is_floating_point_v<decltype(a)>)
                                  if (std::isnan(a) || std::isnan(b)) return NAN;
                                return a < b ? b : a;
                              });
                            }});
const OpDef kMin =
    with_element(emit_min, {"Min", 1, 64, 1, 1, types_arith, shapes_broadcast, [](KernelCtx& c) {
                              fold(c, [](auto a, auto b) -> decltype(a) {
                                if constexpr (std::is_floating_point_v<decltype(a)>)
                                  if (std::isnan(a) || std::isnan(b)) return NAN;
                                return b < a ? b : a;
                              });
                            }});

const OpDef kEqual = with_element(
    emit_equal, {"Equal", 2, 2, 1, 1, types_compare, shapes_broadcast,
                 [](KernelCtx& c) { compare(c, [](auto a, auto b) { return a == b; }); }});
const OpDef kGreater = with_element(
    emit_greater, {"Greater", 2, 2, 1, 1, types_compare, shapes_broadcast,
                   [](KernelCtx& c) { compare(c, [](auto a, auto b) { return a > b; }); }});
const OpDef kLess = with_element(
    emit_less, {"Less", 2, 2, 1, 1, types_compare, shapes_broadcast,
                [](KernelCtx& c) { compare(c, [](auto a, auto b) { return a < b; }); }});

const OpDef kGreaterOrEqual =
    with_element(emit_greater_or_equal,
                 {"GreaterOrEqual", 2, 2, 1, 1, types_compare, shapes_broadcast,
                  [](KernelCtx& c) { compare(c, [](auto a, auto b) { return a >= b; }); }});
const OpDef kLessOrEqual = with_element(
    emit_less_or_equal, {"LessOrEqual", 2, 2, 1, 1, types_compare, shapes_broadcast,
                         [](KernelCtx& c) { compare(c, [](auto a, auto b) { return a <= b; }); }});

const OpDef kAnd = with_element(
    emit_and, {"And", 2, 2, 1, 1, types_logical, shapes_broadcast,
               [](KernelCtx& c) { logical(c, [](bool a, bool b) { return a && b; }); }});
const OpDef kOr = with_element(
    emit_or, {"Or", 2, 2, 1, 1, types_logical, shapes_broadcast,
              [](KernelCtx& c) { logical(c, [](bool a, bool b) { return a || b; }); }});
const OpDef kXor = with_element(
    emit_xor, {"Xor", 2, 2, 1, 1, types_logical, shapes_broadcast,
               [](KernelCtx& c) { logical(c, [](bool a, bool b) { return a != b; }); }});

// Mod(a, b) {fmod}: floats need fmod=1 (std::fmod); integer modulo by zero is an error.
const OpDef kMod = with_lowering(
    &kDivisorLowering,
    with_element(emit_mod, OpDef{"Mod", 2, 2, 1, 1,
                                 [](TypeCtx& c) {
                                   types_arith(c);
                                   SG_CHECK(mod_is_fmod(c.attrs()) || !is_float(c.in[0]))
                                       << "Mod of " << dtype_name(c.in[0]) << " needs fmod=1";
                                 },
                                 shapes_broadcast,
                                 [](KernelCtx& c) {
                                   const bool fmod = mod_is_fmod(c.attrs());
                                   arith(c, [fmod](auto a, auto b) -> decltype(a) {
                                     using T = decltype(a);
                                     if constexpr (std::is_floating_point_v<T>) {
                                       return std::fmod(a, b);
                                     } else {
                                       SG_CHECK(b != 0) << "integer modulo by zero";
                                       if constexpr (std::is_signed_v<T>)
                                         if (b == -1)
                                           return 0;  // also avoids the overflow of lowest % -1
                                       T r = static_cast<T>(a % b);  // C's remainder: the sign of a
                                       if (!fmod && r != 0 && (r < 0) != (b < 0))
                                         r = static_cast<T>(r + b);
                                       return r;
                                     }
                                   });
                                 }}));

// BitShift(x, y) {direction = LEFT | RIGHT}: unsigned integers (u8 is the one sgraph has). A shift
// by the bit width or more gives 0, where C++'s shift would be undefined.
extern const OpDef kBitShift;
const OpDef kBitShift{"BitShift",
                      2,
                      2,
                      1,
                      1,
                      [](TypeCtx& c) {
                        c.expect_one_of(0, {DType::u8});
                        c.expect_same(0, 1);
                        const std::string d = c.attrs().get_string("direction");
                        SG_CHECK(d == "LEFT" || d == "RIGHT")
                            << "BitShift direction must be LEFT or RIGHT, got '" << d << "'";
                        c.out[0] = c.in[0];
                      },
                      shapes_broadcast,
                      [](KernelCtx& c) {
                        const bool left = c.attrs().get_string("direction") == "LEFT";
                        broadcast_apply<uint8_t, uint8_t, uint8_t>(
                            c.in[0], c.in[1], c.out[0], [left](uint8_t a, uint8_t b) -> uint8_t {
                              if (b >= 8) return 0;
                              return static_cast<uint8_t>(left ? a << b : a >> b);
                            });
                      }};

// Sum and Mean: variadic with broadcasting, floats only (as in ONNX).
const OpDef kSum = with_grad(
    grad_sum,
    with_element(emit_sum,
                 {"Sum", 1, 64, 1, 1, types_float_variadic, shapes_broadcast, [](KernelCtx& c) {
                    fold(c, [](auto a, auto b) -> decltype(a) { return a + b; });
                  }}));
const OpDef kMean = with_grad(
    grad_sum,
    with_element(emit_mean,
                 {"Mean", 1, 64, 1, 1, types_float_variadic, shapes_broadcast, [](KernelCtx& c) {
                    fold(c, [](auto a, auto b) -> decltype(a) { return a + b; });
                    visit_float(c.out[0].dtype(), [&]<class T>() {
                      const T n = static_cast<T>(c.in.size());
                      T* y = c.out[0].data<T>();
                      for (int64_t i = 0, m = c.out[0].numel(); i < m; ++i) y[i] /= n;
                    });
                  }}));

// PRelu(x, slope): x < 0 ? slope * x : x, slope broadcasting to x's shape (one way only).
const OpDef kPRelu = with_element(
    emit_prelu, {"PRelu", 2, 2, 1, 1,
                 [](TypeCtx& c) {
                   c.expect_one_of(0, {DType::f32, DType::f64, DType::i32, DType::i64});
                   c.expect_same(0, 1);
                   c.out[0] = c.in[0];
                 },
                 [](ShapeCtx& c) {
                   SG_CHECK(broadcast_shapes(c.shape(0), c.shape(1)) == c.shape(0))
                       << "slope of shape " << shape_str(c.shape(1))
                       << " does not broadcast to x's shape " << shape_str(c.shape(0));
                   c.out[0] = c.shape(0);
                 },
                 [](KernelCtx& c) {
                   arith(c,
                         [](auto x, auto slope) -> decltype(x) { return x < 0 ? slope * x : x; });
                 }});

// Where(cond, x, y): three-way broadcast.
const OpDef kWhere = with_grad(
    grad_where, with_element(emit_where, {"Where", 3, 3, 1, 1,
                                          [](TypeCtx& c) {
                                            c.expect_one_of(0, {DType::boolean});
                                            c.expect_same(1, 2);
                                            c.out[0] = c.in[1];
                                          },
                                          shapes_broadcast,
                                          [](KernelCtx& c) {
                                            const Shape& os = c.out[0].shape();
                                            const std::array<Shape, 3> st{
                                                broadcast_strides(c.in[0].shape(), os),
                                                broadcast_strides(c.in[1].shape(), os),
                                                broadcast_strides(c.in[2].shape(), os)};
                                            const bool* cond = c.in[0].data<bool>();
                                            visit_dtype(c.in[1].dtype(), [&]<class T>() {
                                              const T* x = c.in[1].data<T>();
                                              const T* y = c.in[2].data<T>();
                                              T* o = c.out[0].data<T>();
                                              for_each_broadcast<3>(
                                                  os, st,
                                                  [&](int64_t i, const std::array<int64_t, 3>& f) {
                                                    o[i] = cond[f[0]] ? x[f[1]] : y[f[2]];
                                                  });
                                            });
                                          }}));

}  // namespace sgraph::ops
