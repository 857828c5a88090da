// Which ops a region may hold: the one place that decides it until the JIT exists. Once the JIT
// lands, "compilable" will mean "has a JIT element emitter" (a field of OpDef) and this list goes.
// Ops not named here (including ones added to op_list.h later) are not compilable.
#include "ops/op.h"

namespace sgraph::ops {

bool is_compilable(OpKind op) {
  switch (op) {
    // elementwise unary
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Sqrt:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Erf:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Relu:
    case OpKind::LeakyRelu:
    case OpKind::HardSigmoid:
    case OpKind::Not:
    case OpKind::Acos:
    case OpKind::Acosh:
    case OpKind::Asin:
    case OpKind::Asinh:
    case OpKind::Atan:
    case OpKind::Atanh:
    case OpKind::Cos:
    case OpKind::Cosh:
    case OpKind::Sin:
    case OpKind::Sinh:
    case OpKind::Tan:
    case OpKind::Ceil:
    case OpKind::Floor:
    case OpKind::Round:
    case OpKind::Sign:
    case OpKind::Reciprocal:
    case OpKind::IsNaN:
    case OpKind::IsInf:
    case OpKind::Elu:
    case OpKind::Celu:
    case OpKind::Selu:
    case OpKind::Softplus:
    case OpKind::Softsign:
    case OpKind::ThresholdedRelu:
    case OpKind::Shrink:
    case OpKind::HardSwish:
    case OpKind::Mish:
    case OpKind::Clip:
    case OpKind::Cast:
    // elementwise binary and variadic (broadcasting), and Where
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Pow:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Equal:
    case OpKind::Greater:
    case OpKind::Less:
    case OpKind::GreaterOrEqual:
    case OpKind::LessOrEqual:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Xor:
    case OpKind::Mod:
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::PRelu:
    case OpKind::Where:
    // contractions
    case OpKind::MatMul:
    case OpKind::Gemm:
    // reductions and normalisations
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd:
    case OpKind::ReduceL1:
    case OpKind::ReduceL2:
    case OpKind::ReduceLogSum:
    case OpKind::ReduceLogSumExp:
    case OpKind::ReduceSumSquare:
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
    case OpKind::LayerNormalization:
    // layout and movement
    case OpKind::Identity:
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
    case OpKind::Transpose:
    case OpKind::Concat:
    case OpKind::Split:
    case OpKind::Slice:
    case OpKind::Gather:
    case OpKind::Expand:
    case OpKind::Pad:
      return true;
    // Conv, ConvTranspose, pools, BatchNormalization, ArgMax/ArgMin, shape-valued ops (Shape,
    // Size, Range, ConstantOfShape), Resize, LSTM, control flow (If), and anything not listed.
    default:
      return false;
  }
}

}  // namespace sgraph::ops
