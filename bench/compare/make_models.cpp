// Writes the models bench/compare needs beyond ../shared/testdata, in the ONNX backend-test
// layout (model.onnx, test_data_set_0/input_0.pb, output_0.pb), through libonnx-dev's protobuf
// classes:
//   mlp4x1024  x[batch,1024] -> 4 x (MatMul 1024x1024, Add bias, Relu), f32, random weights;
//              input batch 64
//   trivial    x[1,16] -> Relu -> Exp: the runtimes' baseline footprint with a model loaded
//   recognizer x[batch,3,48,width] -> an OCR recognizer's shape of computation: a conv stem
//              (3 strided 3x3 Convs + Relu, mean over the height) into 3 pre-norm transformer
//              blocks (d=192, 6 heads, GELU MLP of 384, written as PyTorch exports it at opset
//              17) and a 97-class head, f32, random weights; inputs 1x3x48x160, 2x3x48x320,
//              1x3x48x480
//   recognizer_export  the same model with its attention's reshape shapes made from Shape(x), as
//              an exporter tracing x.view(x.size(0), x.size(1), 6, 32) writes them
// The reference outputs come from plain double-precision loops, so `sgraph check` on the folder
// tests sgraph against an independent computation.
//   usage: sgraph_compare_models OUT_DIR
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> data;
};

Matrix random_matrix(int64_t rows, int64_t cols, float scale, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, scale);
  Matrix m{rows, cols, std::vector<float>(static_cast<size_t>(rows * cols))};
  for (float& v : m.data) v = dist(rng);
  return m;
}

onnx::TensorProto tensor_proto(const Matrix& m, const std::string& name, bool as_vector) {
  onnx::TensorProto t;
  t.set_name(name);
  if (!as_vector) t.add_dims(m.rows);
  t.add_dims(m.cols);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.set_raw_data(
      std::string(reinterpret_cast<const char*>(m.data.data()), m.data.size() * sizeof(float)));
  return t;
}

// A float tensor value [dim0, cols]; dim0 is symbolic when `dim0_name` is not empty.
void add_value(onnx::ValueInfoProto* v, const std::string& name, const std::string& dim0_name,
               int64_t dim0, int64_t cols) {
  v->set_name(name);
  auto* tensor = v->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto* d0 = tensor->mutable_shape()->add_dim();
  if (dim0_name.empty())
    d0->set_dim_value(dim0);
  else
    d0->set_dim_param(dim0_name);
  tensor->mutable_shape()->add_dim()->set_dim_value(cols);
}

void add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> inputs,
              const std::string& output) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(output);
  for (const std::string& in : inputs) n->add_input(in);
  n->add_output(output);
}

template <class Message>
bool write(const Message& message, const fs::path& path) {
  std::ofstream out(path, std::ios::binary);
  if (out && message.SerializeToOstream(&out)) return true;
  std::fprintf(stderr, "sgraph_compare_models: cannot write %s\n", path.c_str());
  return false;
}

onnx::ModelProto new_model(const std::string& name) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("sgraph bench/compare");
  model.add_opset_import()->set_version(17);
  model.mutable_graph()->set_name(name);
  return model;
}

bool write_folder(const fs::path& dir, const onnx::ModelProto& model, const Matrix& input,
                  const Matrix& output) {
  fs::create_directories(dir / "test_data_set_0");
  return write(model, dir / "model.onnx") &&
         write(tensor_proto(input, "x", false), dir / "test_data_set_0" / "input_0.pb") &&
         write(tensor_proto(output, "y", false), dir / "test_data_set_0" / "output_0.pb");
}

bool make_mlp(const fs::path& dir) {
  constexpr int64_t kWidth = 1024, kBatch = 64, kLayers = 4;
  std::mt19937 rng(2024);
  onnx::ModelProto model = new_model("mlp4x1024");
  onnx::GraphProto* g = model.mutable_graph();
  add_value(g->add_input(), "x", "batch", 0, kWidth);
  const Matrix x = random_matrix(kBatch, kWidth, 1.0f, rng);
  std::vector<double> act(x.data.begin(), x.data.end()), next;
  std::string prev = "x";
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    const std::string l = std::to_string(layer);
    // He-style scale keeps activations O(1) through the Relus.
    const Matrix w = random_matrix(kWidth, kWidth, std::sqrt(2.0f / kWidth), rng);
    const Matrix b = random_matrix(1, kWidth, 0.1f, rng);
    *g->add_initializer() = tensor_proto(w, "w" + l, false);
    *g->add_initializer() = tensor_proto(b, "b" + l, true);
    const std::string out = layer + 1 == kLayers ? "y" : "h" + l;
    add_node(g, "MatMul", {prev, "w" + l}, "mm" + l);
    add_node(g, "Add", {"mm" + l, "b" + l}, "add" + l);
    add_node(g, "Relu", {"add" + l}, out);
    prev = out;
    // The reference: act = relu(act * w + b), in double.
    next.assign(static_cast<size_t>(kBatch * kWidth), 0.0);
    for (int64_t i = 0; i < kBatch; ++i) {
      double* row = &next[static_cast<size_t>(i * kWidth)];
      for (int64_t k = 0; k < kWidth; ++k) {
        const double a = act[static_cast<size_t>(i * kWidth + k)];
        const float* wk = &w.data[static_cast<size_t>(k * kWidth)];
        for (int64_t j = 0; j < kWidth; ++j) row[j] += a * wk[j];
      }
      for (int64_t j = 0; j < kWidth; ++j) row[j] = std::max(0.0, row[j] + b.data[j]);
    }
    act.swap(next);
  }
  add_value(g->add_output(), "y", "batch", 0, kWidth);
  return write_folder(dir, model, x,
                      Matrix{kBatch, kWidth, std::vector<float>(act.begin(), act.end())});
}

bool make_trivial(const fs::path& dir) {
  std::mt19937 rng(7);
  onnx::ModelProto model = new_model("trivial");
  onnx::GraphProto* g = model.mutable_graph();
  add_value(g->add_input(), "x", "", 1, 16);
  add_node(g, "Relu", {"x"}, "r");
  add_node(g, "Exp", {"r"}, "y");
  add_value(g->add_output(), "y", "", 1, 16);
  const Matrix x = random_matrix(1, 16, 1.0f, rng);
  Matrix y = x;
  for (float& v : y.data) v = static_cast<float>(std::exp(std::max(0.0, double{v})));
  return write_folder(dir, model, x, y);
}

// An N-d float tensor, row-major; the recognizer's reference computes in double.
struct Tensor {
  std::vector<int64_t> dims;
  std::vector<double> data;
  int64_t dim(size_t i) const { return dims[i]; }
};

Tensor random_tensor(std::vector<int64_t> dims, double mean, float scale, std::mt19937& rng) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::normal_distribution<float> dist(0.0f, scale);
  Tensor t{std::move(dims), std::vector<double>(static_cast<size_t>(n))};
  // Rounded to float first: the model holds f32 weights, the reference must use the same values.
  for (double& v : t.data) v = static_cast<double>(static_cast<float>(mean + dist(rng)));
  return t;
}

onnx::TensorProto float_proto(const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  for (int64_t d : t.dims) p.add_dims(d);
  p.set_data_type(onnx::TensorProto::FLOAT);
  std::vector<float> f(t.data.begin(), t.data.end());
  p.set_raw_data(std::string(reinterpret_cast<const char*>(f.data()), f.size() * sizeof(float)));
  return p;
}

onnx::TensorProto int64_proto(const std::vector<int64_t>& v, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.add_dims(static_cast<int64_t>(v.size()));
  p.set_data_type(onnx::TensorProto::INT64);
  p.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
  return p;
}

// A float value whose dims are symbolic where `names` has a name, fixed otherwise.
void add_value_nd(onnx::ValueInfoProto* v, const std::string& name,
                  const std::vector<std::string>& names, const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* tensor = v->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = tensor->mutable_shape()->add_dim();
    if (names[i].empty())
      d->set_dim_value(dims[i]);
    else
      d->set_dim_param(names[i]);
  }
}

onnx::NodeProto* add_op(onnx::GraphProto* g, const std::string& op, std::vector<std::string> inputs,
                        const std::string& output) {
  add_node(g, op, std::move(inputs), output);
  return g->mutable_node(g->node_size() - 1);
}

void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_float(onnx::NodeProto* n, const std::string& name, float v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

// Reference Conv, 3x3 kernel, pad 1, strides (sh, sw), bias, then Relu.
Tensor conv3x3_relu(const Tensor& x, const Tensor& w, const Tensor& b, int64_t sh, int64_t sw) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3), m = w.dim(0);
  const int64_t oh = (h + 2 - 3) / sh + 1, ow = (wd + 2 - 3) / sw + 1;
  Tensor y{{n, m, oh, ow}, std::vector<double>(static_cast<size_t>(n * m * oh * ow))};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          double acc = b.data[static_cast<size_t>(o)];
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t kr = 0; kr < 3; ++kr)
              for (int64_t kq = 0; kq < 3; ++kq) {
                const int64_t ir = r * sh - 1 + kr, iq = q * sw - 1 + kq;
                if (ir < 0 || ir >= h || iq < 0 || iq >= wd) continue;
                acc += x.data[static_cast<size_t>(((i * c + ci) * h + ir) * wd + iq)] *
                       w.data[static_cast<size_t>(((o * c + ci) * 3 + kr) * 3 + kq)];
              }
          y.data[static_cast<size_t>(((i * m + o) * oh + r) * ow + q)] = std::max(0.0, acc);
        }
  return y;
}

// rows x [rows, k] times w [k, m] plus bias [m].
std::vector<double> linear(const std::vector<double>& x, int64_t rows, const Tensor& w,
                           const Tensor& b) {
  const int64_t k = w.dim(0), m = w.dim(1);
  std::vector<double> y(static_cast<size_t>(rows * m));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double acc = b.data[static_cast<size_t>(j)];
      for (int64_t p = 0; p < k; ++p)
        acc += x[static_cast<size_t>(i * k + p)] * w.data[static_cast<size_t>(p * m + j)];
      y[static_cast<size_t>(i * m + j)] = acc;
    }
  return y;
}

std::vector<double> layer_norm(const std::vector<double>& x, int64_t rows, int64_t d,
                               const Tensor& gamma, const Tensor& beta, double eps) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < rows; ++i) {
    const double* r = &x[static_cast<size_t>(i * d)];
    double mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) mean += r[j];
    mean /= static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j) var += (r[j] - mean) * (r[j] - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(d) + eps);
    for (int64_t j = 0; j < d; ++j)
      y[static_cast<size_t>(i * d + j)] = (r[j] - mean) * inv * gamma.data[static_cast<size_t>(j)] +
                                          beta.data[static_cast<size_t>(j)];
  }
  return y;
}

bool make_recognizer(const fs::path& dir, bool exported) {
  constexpr int64_t kD = 192, kHeads = 6, kHead = kD / kHeads, kFf = 384, kBlocks = 3,
                    kClasses = 97;
  constexpr float kEps = 1e-5f;
  std::mt19937 rng(4242);
  onnx::ModelProto model = new_model(exported ? "recognizer_export" : "recognizer");
  onnx::GraphProto* g = model.mutable_graph();
  add_value_nd(g->add_input(), "x", {"batch", "", "", "width"}, {0, 3, 48, 0});
  const auto init = [&](const Tensor& t, const std::string& name) {
    *g->add_initializer() = float_proto(t, name);
  };
  const auto scalar = [&](double v, const std::string& name) {
    init(Tensor{{}, {static_cast<double>(static_cast<float>(v))}}, name);
  };

  // The stem.
  struct ConvSpec {
    int64_t in, out, sh, sw;
  };
  const ConvSpec convs[] = {{3, 32, 2, 2}, {32, 64, 2, 2}, {64, kD, 2, 1}};
  std::vector<Tensor> conv_w, conv_b;
  std::string prev = "x";
  for (size_t i = 0; i < 3; ++i) {
    const std::string l = std::to_string(i);
    const ConvSpec& c = convs[i];
    conv_w.push_back(random_tensor({c.out, c.in, 3, 3}, 0.0,
                                   std::sqrt(2.0f / static_cast<float>(c.in * 9)), rng));
    conv_b.push_back(random_tensor({c.out}, 0.0, 0.05f, rng));
    init(conv_w.back(), "conv" + l + ".w");
    init(conv_b.back(), "conv" + l + ".b");
    onnx::NodeProto* n =
        add_op(g, "Conv", {prev, "conv" + l + ".w", "conv" + l + ".b"}, "conv" + l);
    set_ints(n, "kernel_shape", {3, 3});
    set_ints(n, "pads", {1, 1, 1, 1});
    set_ints(n, "strides", {c.sh, c.sw});
    add_op(g, "Relu", {"conv" + l}, "relu" + l);
    prev = "relu" + l;
  }
  onnx::NodeProto* pool = add_op(g, "ReduceMean", {prev}, "pooled");
  set_ints(pool, "axes", {2});
  set_int(pool, "keepdims", 0);
  set_ints(add_op(g, "Transpose", {"pooled"}, "seq0"), "perm", {0, 2, 1});
  prev = "seq0";

  // The blocks' weights.
  struct Block {
    Tensor ln1_g, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo, ln2_g, ln2_b, w1, b1, w2, b2;
  };
  std::vector<Block> blocks;
  const float lin_d = 1.0f / std::sqrt(static_cast<float>(kD));
  const float lin_f = 1.0f / std::sqrt(static_cast<float>(kFf));
  *g->add_initializer() = int64_proto({0, 0, kHeads, kHead}, "heads_shape");
  *g->add_initializer() = int64_proto({0, 0, kD}, "model_shape");
  *g->add_initializer() = int64_proto({0}, "lead_start");
  *g->add_initializer() = int64_proto({2}, "lead_end");
  *g->add_initializer() = int64_proto({kHeads, kHead}, "heads_tail");
  *g->add_initializer() = int64_proto({kD}, "model_tail");
  scalar(1.0 / std::sqrt(static_cast<double>(kHead)), "attn_scale");
  scalar(std::sqrt(2.0), "sqrt2");
  scalar(1.0, "one");
  scalar(0.5, "half");
  for (int64_t b = 0; b < kBlocks; ++b) {
    const std::string p = "b" + std::to_string(b) + ".";
    Block k{random_tensor({kD}, 1.0, 0.1f, rng),       random_tensor({kD}, 0.0, 0.1f, rng),
            random_tensor({kD, kD}, 0.0, lin_d, rng),  random_tensor({kD}, 0.0, 0.05f, rng),
            random_tensor({kD, kD}, 0.0, lin_d, rng),  random_tensor({kD}, 0.0, 0.05f, rng),
            random_tensor({kD, kD}, 0.0, lin_d, rng),  random_tensor({kD}, 0.0, 0.05f, rng),
            random_tensor({kD, kD}, 0.0, lin_d, rng),  random_tensor({kD}, 0.0, 0.05f, rng),
            random_tensor({kD}, 1.0, 0.1f, rng),       random_tensor({kD}, 0.0, 0.1f, rng),
            random_tensor({kD, kFf}, 0.0, lin_d, rng), random_tensor({kFf}, 0.0, 0.05f, rng),
            random_tensor({kFf, kD}, 0.0, lin_f, rng), random_tensor({kD}, 0.0, 0.05f, rng)};
    const std::pair<const Tensor*, const char*> named[] = {
        {&k.ln1_g, "ln1.g"}, {&k.ln1_b, "ln1.b"}, {&k.wq, "wq"},       {&k.bq, "bq"},
        {&k.wk, "wk"},       {&k.bk, "bk"},       {&k.wv, "wv"},       {&k.bv, "bv"},
        {&k.wo, "wo"},       {&k.bo, "bo"},       {&k.ln2_g, "ln2.g"}, {&k.ln2_b, "ln2.b"},
        {&k.w1, "w1"},       {&k.b1, "b1"},       {&k.w2, "w2"},       {&k.b2, "b2"}};
    for (const auto& [t, name] : named) init(*t, p + name);
    blocks.push_back(std::move(k));

    const auto ln = [&](const std::string& in, const std::string& which, const std::string& out) {
      onnx::NodeProto* n =
          add_op(g, "LayerNormalization", {in, p + which + ".g", p + which + ".b"}, out);
      set_int(n, "axis", -1);
      set_float(n, "epsilon", kEps);
    };
    const auto dense = [&](const std::string& in, const std::string& w, const std::string& bias,
                           const std::string& out) {
      add_op(g, "MatMul", {in, p + w}, out + ".mm");
      add_op(g, "Add", {out + ".mm", p + bias}, out);
    };
    ln(prev, "ln1", p + "ln1");
    // The heads' split and merge: [0, 0, 6, 32] and [0, 0, 192], or as an exporter tracing
    // x.view(x.size(0), x.size(1), 6, 32) writes them, from Shape(x)[0:2].
    std::string heads_shape = "heads_shape", model_shape = "model_shape";
    if (exported) {
      add_op(g, "Shape", {p + "ln1"}, p + "ln1.shape");
      add_op(g, "Slice", {p + "ln1.shape", "lead_start", "lead_end"}, p + "lead");
      set_int(add_op(g, "Concat", {p + "lead", "heads_tail"}, p + "heads_shape"), "axis", 0);
      set_int(add_op(g, "Concat", {p + "lead", "model_tail"}, p + "model_shape"), "axis", 0);
      heads_shape = p + "heads_shape";
      model_shape = p + "model_shape";
    }
    for (const char* h : {"q", "k", "v"}) {
      dense(p + "ln1", std::string("w") + h, std::string("b") + h, p + h);
      add_op(g, "Reshape", {p + h, heads_shape}, p + h + ".split");
    }
    set_ints(add_op(g, "Transpose", {p + "q.split"}, p + "qh"), "perm", {0, 2, 1, 3});
    set_ints(add_op(g, "Transpose", {p + "k.split"}, p + "kt"), "perm", {0, 2, 3, 1});
    set_ints(add_op(g, "Transpose", {p + "v.split"}, p + "vh"), "perm", {0, 2, 1, 3});
    add_op(g, "MatMul", {p + "qh", p + "kt"}, p + "scores");
    add_op(g, "Mul", {p + "scores", "attn_scale"}, p + "scaled");
    set_int(add_op(g, "Softmax", {p + "scaled"}, p + "probs"), "axis", -1);
    add_op(g, "MatMul", {p + "probs", p + "vh"}, p + "ctx");
    set_ints(add_op(g, "Transpose", {p + "ctx"}, p + "ctx.t"), "perm", {0, 2, 1, 3});
    add_op(g, "Reshape", {p + "ctx.t", model_shape}, p + "ctx.m");
    dense(p + "ctx.m", "wo", "bo", p + "attn");
    add_op(g, "Add", {prev, p + "attn"}, p + "res1");
    ln(p + "res1", "ln2", p + "ln2");
    dense(p + "ln2", "w1", "b1", p + "ff1");
    add_op(g, "Div", {p + "ff1", "sqrt2"}, p + "gelu.div");
    add_op(g, "Erf", {p + "gelu.div"}, p + "gelu.erf");
    add_op(g, "Add", {p + "gelu.erf", "one"}, p + "gelu.add");
    add_op(g, "Mul", {p + "ff1", p + "gelu.add"}, p + "gelu.mul");
    add_op(g, "Mul", {p + "gelu.mul", "half"}, p + "gelu");
    dense(p + "gelu", "w2", "b2", p + "ff2");
    add_op(g, "Add", {p + "res1", p + "ff2"}, p + "res2");
    prev = p + "res2";
  }
  const Tensor lnf_g = random_tensor({kD}, 1.0, 0.1f, rng),
               lnf_b = random_tensor({kD}, 0.0, 0.1f, rng);
  const Tensor wc = random_tensor({kD, kClasses}, 0.0, lin_d, rng);
  const Tensor bc = random_tensor({kClasses}, 0.0, 0.05f, rng);
  init(lnf_g, "head.ln.g");
  init(lnf_b, "head.ln.b");
  init(wc, "head.w");
  init(bc, "head.b");
  onnx::NodeProto* lnf =
      add_op(g, "LayerNormalization", {prev, "head.ln.g", "head.ln.b"}, "head.ln");
  set_int(lnf, "axis", -1);
  set_float(lnf, "epsilon", kEps);
  add_op(g, "MatMul", {"head.ln", "head.w"}, "head.mm");
  add_op(g, "Add", {"head.mm", "head.b"}, "y");
  add_value_nd(g->add_output(), "y", {"batch", "steps", ""}, {0, 0, kClasses});
  if (!write(model, dir / "model.onnx")) return false;

  // One data set per input shape, each with its double-precision reference.
  const std::pair<int64_t, int64_t> shapes[] = {{1, 160}, {2, 320}, {1, 480}};
  int set = 0;
  for (const auto& [batch, width] : shapes) {
    const Tensor x = random_tensor({batch, 3, 48, width}, 0.0, 1.0f, rng);
    Tensor h = x;
    for (size_t i = 0; i < 3; ++i)
      h = conv3x3_relu(h, conv_w[i], conv_b[i], convs[i].sh, convs[i].sw);
    const int64_t hh = h.dim(2), steps = h.dim(3), rows = batch * steps;
    std::vector<double> act(static_cast<size_t>(rows * kD));  // [batch, steps, d]
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t c = 0; c < kD; ++c)
        for (int64_t t = 0; t < steps; ++t) {
          double sum = 0;
          for (int64_t r = 0; r < hh; ++r)
            sum += h.data[static_cast<size_t>(((n * kD + c) * hh + r) * steps + t)];
          act[static_cast<size_t>((n * steps + t) * kD + c)] = sum / static_cast<double>(hh);
        }
    for (const Block& k : blocks) {
      const std::vector<double> a = layer_norm(act, rows, kD, k.ln1_g, k.ln1_b, kEps);
      const std::vector<double> q = linear(a, rows, k.wq, k.bq), kk = linear(a, rows, k.wk, k.bk),
                                v = linear(a, rows, k.wv, k.bv);
      std::vector<double> ctx(act.size()), scores(static_cast<size_t>(steps));
      const double scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kHead)));
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t hd = 0; hd < kHeads; ++hd)
          for (int64_t i = 0; i < steps; ++i) {
            const auto at = [&](const std::vector<double>& m, int64_t t, int64_t j) {
              return m[static_cast<size_t>((n * steps + t) * kD + hd * kHead + j)];
            };
            double mx = -INFINITY, sum = 0;
            for (int64_t t = 0; t < steps; ++t) {
              double s = 0;
              for (int64_t j = 0; j < kHead; ++j) s += at(q, i, j) * at(kk, t, j);
              scores[static_cast<size_t>(t)] = s * scale;
              mx = std::max(mx, s * scale);
            }
            for (double& s : scores) sum += (s = std::exp(s - mx));
            for (int64_t j = 0; j < kHead; ++j) {
              double acc = 0;
              for (int64_t t = 0; t < steps; ++t)
                acc += scores[static_cast<size_t>(t)] * at(v, t, j);
              ctx[static_cast<size_t>((n * steps + i) * kD + hd * kHead + j)] = acc / sum;
            }
          }
      const std::vector<double> o = linear(ctx, rows, k.wo, k.bo);
      for (size_t i = 0; i < act.size(); ++i) act[i] += o[i];
      std::vector<double> f =
          linear(layer_norm(act, rows, kD, k.ln2_g, k.ln2_b, kEps), rows, k.w1, k.b1);
      for (double& u : f) u = 0.5 * u * (1.0 + std::erf(u / std::sqrt(2.0)));
      const std::vector<double> f2 = linear(f, rows, k.w2, k.b2);
      for (size_t i = 0; i < act.size(); ++i) act[i] += f2[i];
    }
    const Tensor y{{batch, steps, kClasses},
                   linear(layer_norm(act, rows, kD, lnf_g, lnf_b, kEps), rows, wc, bc)};
    const fs::path data = dir / ("test_data_set_" + std::to_string(set++));
    fs::create_directories(data);
    if (!write(float_proto(x, "x"), data / "input_0.pb") ||
        !write(float_proto(y, "y"), data / "output_0.pb"))
      return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sgraph_compare_models OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  try {
    fs::create_directories(out / "recognizer");
    fs::create_directories(out / "recognizer_export");
    return make_mlp(out / "mlp4x1024") && make_trivial(out / "trivial") &&
                   make_recognizer(out / "recognizer", false) &&
                   make_recognizer(out / "recognizer_export", true)
               ? 0
               : 1;
  } catch (const std::exception& e) {  // e.g. a folder that cannot be created
    std::fprintf(stderr, "sgraph_compare_models: %s\n", e.what());
    return 1;
  }
}
