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
  SG_OP(Acos, acos)                                    \
  SG_OP(Acosh, acosh)                                  \
  SG_OP(Asin, asin)                                    \
  SG_OP(Asinh, asinh)                                  \
  SG_OP(Atan, atan)                                    \
  SG_OP(Atanh, atanh)                                  \
  SG_OP(Cos, cos)                                      \
  SG_OP(Cosh, cosh)                                    \
  SG_OP(Sin, sin)                                      \
  SG_OP(Sinh, sinh)                                    \
  SG_OP(Tan, tan)                                      \
  SG_OP(Ceil, ceil)                                    \
  SG_OP(Floor, floor)                                  \
  SG_OP(Round, round)                                  \
  SG_OP(Sign, sign)                                    \
  SG_OP(Reciprocal, reciprocal)                        \
  SG_OP(IsNaN, is_nan)                                 \
  SG_OP(IsInf, is_inf)                                 \
  SG_OP(Elu, elu)                                      \
  SG_OP(Celu, celu)                                    \
  SG_OP(Selu, selu)                                    \
  SG_OP(Softplus, softplus)                            \
  SG_OP(Softsign, softsign)                            \
  SG_OP(ThresholdedRelu, thresholded_relu)             \
  SG_OP(Shrink, shrink)                                \
  SG_OP(HardSwish, hard_swish)                         \
  SG_OP(Mish, mish)                                    \
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
  SG_OP(GreaterOrEqual, greater_or_equal)              \
  SG_OP(LessOrEqual, less_or_equal)                    \
  SG_OP(And, logical_and)                              \
  SG_OP(Or, logical_or)                                \
  SG_OP(Xor, logical_xor)                              \
  SG_OP(Mod, mod)                                      \
  SG_OP(Sum, sum)                                      \
  SG_OP(Mean, mean)                                    \
  SG_OP(PRelu, prelu)                                  \
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
  SG_OP(ReduceMin, reduce_min)                         \
  SG_OP(ReduceProd, reduce_prod)                       \
  SG_OP(ReduceL1, reduce_l1)                           \
  SG_OP(ReduceL2, reduce_l2)                           \
  SG_OP(ReduceLogSum, reduce_log_sum)                  \
  SG_OP(ReduceLogSumExp, reduce_log_sum_exp)           \
  SG_OP(ReduceSumSquare, reduce_sum_square)            \
  SG_OP(ArgMax, arg_max)                               \
  SG_OP(ArgMin, arg_min)                               \
  SG_OP(Softmax, softmax)                              \
  SG_OP(LogSoftmax, log_softmax)                       \
  SG_OP(LayerNormalization, layer_normalization)       \
  /* losses (loss.cpp) */                              \
  SG_OP(SoftmaxCrossEntropyLoss, softmax_cross_entropy_loss) \
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
  /* losses, element indexing and scans (issue 17, part A) */ \
  SG_OP(NegativeLogLikelihoodLoss, negative_log_likelihood_loss) \
  SG_OP(GatherElements, gather_elements)               \
  SG_OP(ScatterElements, scatter_elements)             \
  SG_OP(Trilu, trilu)                                  \
  SG_OP(CumSum, cum_sum)                               \
  SG_OP(GatherND, gather_nd)                           \
  SG_OP(ScatterND, scatter_nd)                         \
  SG_OP(Tile, tile)                                    \
  /* more neural-network, layout and utility ops (issue 17, part B) */ \
  SG_OP(CastLike, cast_like)                           \
  SG_OP(Hardmax, hardmax)                              \
  SG_OP(TopK, top_k)                                   \
  SG_OP(OneHot, one_hot)                               \
  SG_OP(DepthToSpace, depth_to_space)                  \
  SG_OP(SpaceToDepth, space_to_depth)                  \
  SG_OP(GlobalMaxPool, global_max_pool)                \
  SG_OP(InstanceNormalization, instance_normalization) \
  SG_OP(LRN, lrn)                                      \
  SG_OP(MeanVarianceNormalization, mean_variance_normalization) \
  SG_OP(EyeLike, eye_like)                             \
  SG_OP(Compress, compress)                            \
  SG_OP(NonZero, non_zero)                             \
  SG_OP(ReverseSequence, reverse_sequence)             \
  SG_OP(BitShift, bit_shift)                           \
  /* window functions (window_functions.cpp) */        \
  SG_OP(HannWindow, hann_window)                       \
  SG_OP(HammingWindow, hamming_window)                 \
  SG_OP(BlackmanWindow, blackman_window)               \
  /* Unique and Einsum (unique.cpp, einsum.cpp) */     \
  SG_OP(Unique, unique)                                \
  SG_OP(Einsum, einsum)                                \
  /* quantization and detection */                    \
  SG_OP(QuantizeLinear, quantize_linear)               \
  SG_OP(DequantizeLinear, dequantize_linear)           \
  SG_OP(DynamicQuantizeLinear, dynamic_quantize_linear) \
  SG_OP(MatMulInteger, matmul_integer)                 \
  SG_OP(QLinearMatMul, qlinear_matmul)                 \
  SG_OP(ConvInteger, conv_integer)                     \
  SG_OP(QLinearConv, qlinear_conv)                     \
  SG_OP(NonMaxSuppression, non_max_suppression)        \
  SG_OP(Det, det)                                      \
  SG_OP(MaxUnpool, max_unpool)                         \
  SG_OP(GridSample, grid_sample)                       \
  /* optimizers of domain ai.onnx.preview.training */ \
  SG_OP(Adagrad, adagrad)                              \
  SG_OP(Adam, adam)                                    \
  SG_OP(Momentum, momentum)                            \
  /* recurrent and control flow */                     \
  SG_OP(LSTM, lstm)                                    \
  SG_OP(GRU, gru)                                      \
  SG_OP(RNN, rnn)                                      \
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
