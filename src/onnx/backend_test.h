// Runs folders in the ONNX backend-test layout — model.onnx plus test_data_set_<k>/input_<i>.pb
// and output_<j>.pb — and compares outputs. Shared by `sgraph check` and the conformance suite.
#pragma once

#include <span>
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
  std::string error;         // why it failed
  int pass = 1;              // which pass over the data sets (see run_backend_test)
  int64_t kernel_calls = 0;  // region kernels this data set's run called (0: all interpreted)
  // Kernels compiled and kernels loaded from the disk cache for this data set's run (with a
  // session per data set: also during its warm-up).
  int64_t compilations = 0, disk_loads = 0;
  // With a session per data set: each op left out of every region, with why ("Gather: not
  // compilable: ..."), and each planned region that got no kernel, with why.
  std::vector<std::string> outside;
};

// The data set folders of a test folder, in order.
std::vector<std::string> data_sets(const std::string& dir);
// Inputs of one data set, in order. `expect`: the model's input dtypes, if known (a bf16 input's
// data may be stored as UINT16 bits).
std::vector<Tensor> load_inputs(const std::string& data_set_dir,
                                std::span<const DType> expect = {});
// Outputs (references) of one data set, in order (`expect` as for load_inputs).
std::vector<Tensor> load_outputs(const std::string& data_set_dir,
                                 std::span<const DType> expect = {});

// The first op of the model file (subgraphs and the bodies of called local functions included)
// that the ONNX importer does not know, as "unsupported op 'Name'" (with its domain unless it is
// ai.onnx); "" when it knows them all or the file does not parse. Unlike load_onnx it does not stop
// at an error of another kind, so it tells a model sgraph cannot run from one it fails to load.
std::string unknown_op(const std::string& model_path);

// Loads dir/model.onnx and runs every data set in order through one Session with `options`
// (so the first warmup_runs data sets warm up, and later ones run through compiled regions,
// falling back when their shapes differ), `passes` times over (a second pass serves the warm-up's
// own data sets through the plan). With `session_per_data_set`, each data set has a Session of its
// own, warmed up on that data set alone (a warm-up run that throws is listed with pass 0), then
// runs `passes` times through the plan made for it: every shape is served compiled. Throws
// sgraph::Error when the model cannot be loaded.
std::vector<DataSetResult> run_backend_test(const std::string& dir, Tolerance tol,
                                            const SessionOptions& options = {}, int passes = 1,
                                            bool session_per_data_set = false);
// The same with the model already loaded (`graph`); `dir` holds the data sets. `report`, when
// given, receives the shared session's report after the last run (with a session per data set:
// the last one's).
std::vector<DataSetResult> run_backend_test(const Graph& graph, const std::string& dir,
                                            Tolerance tol, const SessionOptions& options = {},
                                            int passes = 1, bool session_per_data_set = false,
                                            Report* report = nullptr);

// Every data set of `dir` through a Session of its own, warmed up on it, then served once and
// compared (run_backend_test with a session per data set and one pass).
using ReplayResult = DataSetResult;
std::vector<ReplayResult> replay_backend_test(const Graph& graph, const std::string& dir,
                                              Tolerance tol, const SessionOptions& options);

}  // namespace sgraph
