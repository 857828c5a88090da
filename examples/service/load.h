// A checking load generator for the service: N connections (a thread each, keep-alive) send
// predict requests for a bounded time, cycling through inputs of several shapes, and every
// response is compared with the interpreter's output for the same inputs (an interpret-only
// Session of the same model, run before the load starts). Phases: the run's time is split evenly
// between lists of shapes, so a later phase can bring shapes the plan has not seen (guard misses,
// then a re-plan and a compile while the load goes on).
//
// Shapes are given as values of the model's symbolic input dims, e.g. "batch=2,seq=8".
// Phases last equally long unless weighted: weights 1,9 give the first a tenth of the time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sgraph/sgraph.h"

namespace sgraph::examples {

using DimValues = std::map<std::string, int64_t>;  // symbol -> size

// "batch=2,seq=8" -> {batch: 2, seq: 8}; "batch=2,seq=8;batch=1,seq=5" -> two. Throws
// sgraph::Error on bad text.
std::vector<DimValues> parse_shape_list(const std::string& text);

struct LoadOptions {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string model;  // the .onnx the server serves (for the reference outputs)
  std::string name;   // its name on the server; default: the model file's folder name
  int connections = 16;
  double seconds = 10;
  std::vector<std::vector<DimValues>> phases;  // at least one, each with at least one shape
  std::vector<double> phase_weights;           // empty: equal; else one per phase
  int requests_per_shape = 4;                  // distinct inputs per shape
  uint64_t seed = 1;
  double rtol = 1e-3, atol = 1e-4;  // |got - want| <= atol + rtol * |want|
};

struct PreparedRequest {
  std::string id;
  std::string body;
  std::vector<Tensor> expected;  // the interpreter's outputs
};
// Per phase, its requests: random inputs of each shape (f32/f64 normal, integers 0 or 1, bools),
// and the interpreter's outputs for them.
std::vector<std::vector<PreparedRequest>> prepare_requests(const LoadOptions& options);

struct LoadResult {
  int64_t requests = 0;    // answered
  int64_t errors = 0;      // transport failures and statuses other than 200
  int64_t mismatches = 0;  // 200, but outputs differ from the interpreter's
  std::string first_problem;
  double seconds = 0;
  std::vector<float> latency_ms;  // sorted
  std::vector<int64_t> phase_requests;
  // From the server's /metrics at the start and the end (max: sampled every 0.5 s).
  int64_t rss_start = 0, rss_end = 0, rss_max = 0;
  double replans = 0, kernels_compiled = 0, guard_misses = 0, kernel_calls = 0;

  double percentile(double p) const;  // of latency_ms, p in [0, 100]
  std::string to_text(const LoadOptions& options) const;
};

LoadResult run_load(const LoadOptions& options,
                    const std::vector<std::vector<PreparedRequest>>& requests);

// A Lua data file for examples/service/wrk_check.lua: the same requests and expected outputs.
void write_wrk_data(const std::string& path, const LoadOptions& options,
                    const std::vector<std::vector<PreparedRequest>>& requests);

// When each phase ends, seconds from the start.
std::vector<double> phase_ends(const LoadOptions& options);

// One value of the server's /metrics text ("name value" lines); -1 when absent.
double metric_value(const std::string& metrics, const std::string& name);

}  // namespace sgraph::examples
