// Samples for the op-lowering test (tests/jit/test_op_lowerings.cpp), which compiles every op
// that has a JIT lowering (ops::is_compilable) and compares the kernel with the interpreter.
// Elementwise ops (OpDef::element) get samples generated from their arity; every other compilable
// op needs at least one sample registered here, in its own test file (tests/ops/test_<op>.cpp),
// or the lowering test fails naming it:
//
//   SG_LOWERING_SAMPLE(Slice, negative_step) {
//     const ValueId x = s.input(DType::f32, {n, 4});  // fed with pseudo-random values in [-1, 1]
//     s.output(s.b.slice(x, s.b.ints({-1}), s.b.ints({-n - 1}), s.b.ints({0}), s.b.ints({-2})));
//   }
//
// The body builds a graph into `s` for the base size `n` (1, 7 and 1023 in turn) with s.b (a
// GraphBuilder), s.input and s.output. Each sample also runs in a fused form, where every s.input
// is computed in the region (Neg of the negated values) and every s.output feeds an elementwise
// op, so the op is compiled between others. Parameters that must be constants (Slice starts, Pad
// pads, ...) are s.b.ints or s.b.constant.
#pragma once

#include <cstdint>
#include <vector>

#include "sgraph/sgraph.h"

namespace sgraph::test {

class LoweringSample {
 public:
  explicit LoweringSample(bool fused) : fused_(fused) {}
  // A graph input of dtype t and shape s, fed with pseudo-random values in [lo, hi] (integers
  // rounded, bools x > (lo + hi) / 2); `halves`: floats rounded to halves within [lo, hi], so
  // that comparisons see ties.
  ValueId input(DType t, Shape s, float lo = -1, float hi = 1, bool halves = false);
  // A graph output (through an elementwise op in the fused form).
  void output(ValueId v);

  GraphBuilder b;
  std::vector<Tensor> feeds;        // one per s.input, in order
  double rtol = 1e-5, atol = 1e-6;  // for float outputs; other dtypes must match exactly

 private:
  bool fused_;
};

using LoweringSampleFn = void (*)(LoweringSample& s, int64_t n);

struct LoweringSampleEntry {
  OpKind op;
  const char* variant;
  LoweringSampleFn build;
};

inline std::vector<LoweringSampleEntry>& lowering_samples() {
  static std::vector<LoweringSampleEntry> samples;
  return samples;
}

inline bool register_lowering_sample(OpKind op, const char* variant, LoweringSampleFn build) {
  lowering_samples().push_back({op, variant, build});
  return true;
}

}  // namespace sgraph::test

#define SG_LOWERING_SAMPLE(Op, variant)                                                      \
  static void sg_lowering_sample_##Op##_##variant(::sgraph::test::LoweringSample&, int64_t); \
  [[maybe_unused]] static const bool sg_lowering_sample_registered_##Op##_##variant =        \
      ::sgraph::test::register_lowering_sample(::sgraph::OpKind::Op, #variant,               \
                                               &sg_lowering_sample_##Op##_##variant);        \
  static void sg_lowering_sample_##Op##_##variant(::sgraph::test::LoweringSample& s,         \
                                                  [[maybe_unused]] int64_t n)
