// Writes the models bench/compare needs beyond ../shared/testdata, in the ONNX backend-test
// layout (model.onnx, test_data_set_0/input_0.pb, output_0.pb), through libonnx-dev's protobuf
// classes:
//   mlp4x1024  x[batch,1024] -> 4 x (MatMul 1024x1024, Add bias, Relu), f32, random weights;
//              input batch 64
//   trivial    x[1,16] -> Relu -> Exp: the runtimes' baseline footprint with a model loaded
// The reference outputs come from plain double-precision loops, so `sgraph check` on the folder
// tests sgraph against an independent computation.
//   usage: sgraph_compare_models OUT_DIR
#include <onnx/onnx_pb.h>

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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sgraph_compare_models OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  try {
    return make_mlp(out / "mlp4x1024") && make_trivial(out / "trivial") ? 0 : 1;
  } catch (const std::exception& e) {  // e.g. a folder that cannot be created
    std::fprintf(stderr, "sgraph_compare_models: %s\n", e.what());
    return 1;
  }
}
