// An inference service over one sgraph Session, without the transport: each endpoint is a method
// taking the request body and returning an HTTP status and a JSON body, so the HTTP binding
// (http_server.h) stays thin and the logic is testable without sockets. Uses only the public
// headers, as a user of the library would.
//
// Endpoints (http_server.cpp routes them):
//   POST /v1/models/<name>:predict   {"id": ..., "inputs": {"<input>": {"shape": [...],
//                                      "dtype": "f32", "data": [...]}, ...}}
//                                    -> {"id": ..., "model_name": ..., "outputs": {"<output>":
//                                        {"shape": [...], "dtype": ..., "data": [...]}, ...}}
//   GET  /v1/models/<name>           inputs and outputs (dims with their symbols) and the report
//   GET  /metrics                    Prometheus text: requests by status, latency histogram,
//                                    kernels, guard misses, interpreted share, memory
//   GET  /healthz                    {"status": "ok", "planned": ..., "compiling": ...}
//
// `data` is the tensor's elements in row-major order, flat or nested; `dtype` may be left out (the
// model's is taken) and is one of sgraph's names (f32, i64, bool, ...) or numpy's (float32, int64,
// ...). `id` (string or number) is echoed. A bad request (malformed JSON, an unknown or missing
// input, a wrong dtype, rank or shape, data that does not fit the shape or the dtype, a body over
// the size limit) gets 400 and {"error": "<the sgraph::Error text>"}: it changes nothing in the
// Session (it is not a warm-up run and counts no guard miss), and the service keeps serving.
// Non-finite floats in outputs are written as null (JSON has no NaN).
//
// Every method may be called from any number of threads at once: the Session's run() is
// thread-safe (sgraph/session.h), and the counters are atomics.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sgraph/sgraph.h"

namespace sgraph::examples {

struct ServiceOptions {
  std::string model;  // the .onnx file
  std::string name;   // served as /v1/models/<name>; default: the model file's folder name
  // A folder of data sets (test_data_set_<k>/input_<i>.pb, as in ONNX's test layout, or the
  // input_<i>.pb files directly in it): the Session is warmed up on them before serving
  // (Session::warm_up), so requests never are warm-up runs. Empty: the first requests are.
  std::string warmup_dir;
  size_t max_body_bytes = size_t{64} << 20;  // larger request bodies get 400
  // Background compilation by default: no request waits for the JIT (sgraph/session.h).
  SessionOptions session = [] {
    SessionOptions o;
    o.background_compile = true;
    return o;
  }();
};

struct ServiceResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

class Service {
 public:
  // Loads and verifies the model, then warms up from options.warmup_dir when given. Throws
  // sgraph::Error naming the file (and node) on a bad model or data set.
  explicit Service(ServiceOptions options);

  const std::string& name() const { return name_; }
  const ServiceOptions& options() const { return options_; }
  Session& session() { return *session_; }
  int warmup_sets() const { return warmup_sets_; }

  ServiceResponse predict(std::string_view body);
  ServiceResponse describe() const;
  ServiceResponse metrics() const;
  ServiceResponse health() const;
  // A request the transport rejects before it reaches an endpoint (unknown path or model, body
  // over the limit): the response, counted in the metrics.
  ServiceResponse reject(int status, const std::string& message);

 private:
  void count(int status, std::chrono::steady_clock::duration took);

  ServiceOptions options_;
  std::string name_;
  std::unique_ptr<Session> session_;
  int warmup_sets_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  // Counters (metrics()).
  static constexpr std::array<int, 6> kStatuses = {200, 400, 404, 413, 500, 0};  // 0: any other
  std::array<std::atomic<int64_t>, kStatuses.size()> by_status_{};
  // Predict latency (parse, run, format), seconds: cumulative buckets as Prometheus wants them.
  static constexpr std::array<double, 16> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                      0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                                      1,      2.5,     5,      10};
  std::array<std::atomic<int64_t>, kBuckets.size() + 1> latency_buckets_{};  // last: +Inf
  std::atomic<int64_t> latency_sum_ns_{0};
  std::atomic<int64_t> request_bytes_{0}, response_bytes_{0};
};

// The predict request's inputs, in the order of graph.inputs (also used by the load generator to
// write requests). Throws sgraph::Error naming the input on anything wrong; `id` gets the
// request's id as JSON text ("" when absent).
std::vector<Tensor> parse_predict_request(const Graph& graph, std::string_view body,
                                          std::string* id);
// A predict request body for `inputs` (in graph order).
std::string format_predict_request(const Graph& graph, const std::vector<Tensor>& inputs,
                                   const std::string& id);
// Outputs of a predict response by name, in the order given; throws sgraph::Error when it is not
// one (the load generator checks responses with it).
std::vector<Tensor> parse_predict_response(const Graph& graph, std::string_view body,
                                           std::string* id);

// This process's resident set size, bytes (Linux /proc/self/statm; 0 elsewhere).
int64_t resident_bytes();

}  // namespace sgraph::examples
