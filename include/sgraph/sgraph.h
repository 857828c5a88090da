// sgraph — a graph runtime that profiles a model's shapes and JIT-fuses what stays stable.
//
//   #include <sgraph/sgraph.h>
//   using namespace sgraph;
//
//   GraphBuilder b("mlp");
//   ValueId x = b.input("x", DType::f32, {Dim("batch"), 4});
//   ValueId w = b.constant("w", Tensor::from<float>({4, 2}, {1, 0, 0, 1, 1, 0, 0, 1}));
//   ValueId bias = b.constant("b", Tensor::from<float>({2}, {0.5f, -0.5f}));
//   b.output(b.relu(b.add(b.matmul(x, w), bias)), "y");
//
//   Session session(b.build());
//   Tensor in = Tensor::from<float>({1, 4}, {1, 2, 3, 4});
//   std::vector<Tensor> out = session.run({in});   // out[0]: f32[1,2] {4.5, 5.5}
//
// Errors (bad graphs, wrong input shapes or dtypes) throw sgraph::Error naming the node and op.
#pragma once

#include "sgraph/error.h"
#include "sgraph/graph.h"
#include "sgraph/onnx.h"
#include "sgraph/op_list.h"
#include "sgraph/report.h"
#include "sgraph/runtime.h"
#include "sgraph/session.h"
#include "sgraph/tensor.h"
#include "sgraph/train.h"
