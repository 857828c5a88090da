// Runs folders in the ONNX backend-test layout — model.onnx plus test_data_set_<k>/input_<i>.pb
// and output_<j>.pb — and compares outputs. Shared by `sgraph check` and the conformance suite.
#pragma once

#include <string>
#include <vector>

#include "sgraph/graph.h"
#include "sgraph/session.h"

namespace sgraph {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-4;
};

// |got - want| <= atol + rtol * |want| elementwise, NaN matching NaN; integer and bool outputs
// must be exact. Returns "" when they match, else why not (shape, dtype, or worst element).
struct Comparison {
  bool ok = true;
  double max_abs = 0, max_rel = 0;
  std::string why;
};
Comparison compare_tensors(const Tensor& got, const Tensor& want, Tolerance tol);

struct DataSetResult {
  std::string name;  // test_data_set_<k>
  bool ok = false;
  double max_abs = 0, max_rel = 0;
  std::string error;  // why it failed
};

// The data set folders of a test folder, in order.
std::vector<std::string> data_sets(const std::string& dir);
// Inputs of one data set, in order.
std::vector<Tensor> load_inputs(const std::string& data_set_dir);

// Outputs (references) of one data set, in order.
std::vector<Tensor> load_outputs(const std::string& data_set_dir);

// The first op of the model file (subgraphs included) that the ONNX importer does not know, as
// "unsupported op 'Name'" (with its domain unless it is ai.onnx); "" when it knows them all or
// the file does not parse. Unlike load_onnx it does not stop at an error of another kind, so it
// tells a model sgraph cannot run from one it fails to load.
std::string unknown_op(const std::string& model_path);

// Loads dir/model.onnx and runs every data set in order through one Session with `options`
// (so the first warmup_runs data sets warm up, and later ones run through compiled regions,
// falling back when their shapes differ). Throws sgraph::Error when the model cannot be loaded.
std::vector<DataSetResult> run_backend_test(const std::string& dir, Tolerance tol,
                                            const SessionOptions& options = {});
// The same with the model already loaded (`graph`); `dir` holds the data sets.
std::vector<DataSetResult> run_backend_test(const Graph& graph, const std::string& dir,
                                            Tolerance tol, const SessionOptions& options = {});

// A data set replayed through a compiled plan: `kernel_calls` region kernels ran in the compared
// run (If branches' included); `outside` names each op left out of every region, with why
// ("Gather: not compilable: ..."), and each planned region that got no kernel, with why.
struct ReplayResult : DataSetResult {
  int64_t kernel_calls = 0;
  std::vector<std::string> outside;
};
// Every data set of `dir` through a Session of its own with `options`: its inputs warm the
// Session up (options.warmup_runs runs, so it plans from that data set's shapes alone), then run
// once more and that last run's outputs are compared with the references.
std::vector<ReplayResult> replay_backend_test(const Graph& graph, const std::string& dir,
                                              Tolerance tol, const SessionOptions& options);

}  // namespace sgraph
