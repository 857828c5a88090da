// sgraph/op_list.h — every op sgraph knows, in one list.
//
// SG_OP(Name, builder_method) — Name is the op's ONNX name and the OpKind enumerator; the builder
// method is how GraphBuilder spells it (b.matmul(x, w)). Everything else about an op (shape and
// dtype rules, reference kernel, and later its JIT emitter and gradient) lives in its file under
// src/ops/. Adding an op: one line here, its file, its test.
#pragma once

#include <cstdint>

// clang-format off
#define SG_FOR_EACH_OP(SG_OP)                          \
  /* elementwise unary (src/ops/unary.cpp) */          \
  SG_OP(Neg, neg)                                      \
  SG_OP(Abs, abs)                                      \
  SG_OP(Sqrt, sqrt)                                    \
  SG_OP(Exp, exp)                                      \
  SG_OP(Log, log)                                      \
  SG_OP(Erf, erf)                                      \
  SG_OP(Tanh, tanh)                                    \
  SG_OP(Sigmoid, sigmoid)                              \
  SG_OP(Relu, relu)                                    \
  SG_OP(LeakyRelu, leaky_relu)                         \
  SG_OP(HardSigmoid, hard_sigmoid)                     \
  SG_OP(Not, logical_not)                              \
  SG_OP(Clip, clip)                                    \
  SG_OP(Cast, cast)                                    \
  /* elementwise binary, broadcasting (binary.cpp) */  \
  SG_OP(Add, add)                                      \
  SG_OP(Sub, sub)                                      \
  SG_OP(Mul, mul)                                      \
  SG_OP(Div, div)                                      \
  SG_OP(Pow, pow)                                      \
  SG_OP(Max, max)                                      \
  SG_OP(Min, min)                                      \
  SG_OP(Equal, equal)                                  \
  SG_OP(Greater, greater)                              \
  SG_OP(Less, less)                                    \
  SG_OP(Where, where)                                  \
  /* contractions and neural-network ops */            \
  SG_OP(MatMul, matmul)                                \
  SG_OP(Gemm, gemm)                                    \
  SG_OP(Conv, conv)                                    \
  SG_OP(ConvTranspose, conv_transpose)                 \
  SG_OP(MaxPool, max_pool)                             \
  SG_OP(AveragePool, average_pool)                     \
  SG_OP(GlobalAveragePool, global_average_pool)        \
  SG_OP(BatchNormalization, batch_normalization)       \
  /* reductions and normalisations */                  \
  SG_OP(ReduceSum, reduce_sum)                         \
  SG_OP(ReduceMean, reduce_mean)                       \
  SG_OP(ReduceMax, reduce_max)                         \
  SG_OP(Softmax, softmax)                              \
  SG_OP(LogSoftmax, log_softmax)                       \
  SG_OP(LayerNormalization, layer_normalization)       \
  /* layout, movement and shape ops */                 \
  SG_OP(Identity, identity)                            \
  SG_OP(Reshape, reshape)                              \
  SG_OP(Flatten, flatten)                              \
  SG_OP(Squeeze, squeeze)                              \
  SG_OP(Unsqueeze, unsqueeze)                          \
  SG_OP(Transpose, transpose)                          \
  SG_OP(Concat, concat)                                \
  SG_OP(Split, split)                                  \
  SG_OP(Slice, slice)                                  \
  SG_OP(Gather, gather)                                \
  SG_OP(Expand, expand)                                \
  SG_OP(Pad, pad)                                      \
  SG_OP(Shape, shape)                                  \
  SG_OP(Range, range)                                  \
  SG_OP(ConstantOfShape, constant_of_shape)            \
  SG_OP(Size, size)                                    \
  SG_OP(Resize, resize)                                \
  /* recurrent and control flow */                     \
  SG_OP(LSTM, lstm)                                    \
  SG_OP(If, if_)
// clang-format on

namespace sgraph {

enum class OpKind : uint16_t {
#define SG_OP_ENUM(Name, method) Name,
  SG_FOR_EACH_OP(SG_OP_ENUM)
#undef SG_OP_ENUM
};

inline constexpr int kNumOps = 0
#define SG_OP_COUNT(Name, method) +1
    SG_FOR_EACH_OP(SG_OP_COUNT)
#undef SG_OP_COUNT
    ;

}  // namespace sgraph
