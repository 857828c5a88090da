#include "service.h"

#include <unistd.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace sgraph::examples {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int kMaxRank = 16;
constexpr int kMaxNesting = kMaxRank + 8;  // {"inputs": {"x": {"data": [[...]]}}} and some slack

// The deepest nesting of arrays and objects in `text` (outside strings). The JSON parser is
// iterative, but a request nested a million deep is no request: it is refused before parsing.
int nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

DType parse_dtype(const std::string& s) {
  static const std::map<std::string, DType> names = {
      {"f32", DType::f32},      {"float32", DType::f32}, {"float", DType::f32},
      {"FP32", DType::f32},     {"f64", DType::f64},     {"float64", DType::f64},
      {"double", DType::f64},   {"FP64", DType::f64},    {"i32", DType::i32},
      {"int32", DType::i32},    {"INT32", DType::i32},   {"i64", DType::i64},
      {"int64", DType::i64},    {"INT64", DType::i64},   {"bool", DType::boolean},
      {"BOOL", DType::boolean}, {"u8", DType::u8},       {"uint8", DType::u8},
      {"UINT8", DType::u8},     {"i8", DType::i8},       {"int8", DType::i8},
      {"INT8", DType::i8}};
  auto it = names.find(s);
  SG_CHECK(it != names.end()) << "unknown dtype \"" << s
                              << "\" (f32, f64, i32, i64, bool, u8, i8, or numpy's names)";
  return it->second;
}

// Appends the numbers of `data` (flat, or nested arrays) to `out`, depth-first.
void flatten(const json& data, std::vector<const json*>& out, int depth) {
  if (!data.is_array()) {
    out.push_back(&data);
    return;
  }
  SG_CHECK(depth < kMaxRank) << "data nested deeper than " << kMaxRank << " arrays";
  for (const json& e : data) flatten(e, out, depth + 1);
}

template <class T>
T element(const json& e, int64_t i) {
  if constexpr (std::is_same_v<T, bool>) {
    if (e.is_boolean()) return e.get<bool>();
    SG_CHECK(e.is_number_integer() && (e.get<int64_t>() == 0 || e.get<int64_t>() == 1))
        << "data[" << i << "] is " << e.dump() << ", not a bool (true, false, 0 or 1)";
    return e.get<int64_t>() == 1;
  } else if constexpr (std::is_floating_point_v<T>) {
    SG_CHECK(e.is_number()) << "data[" << i << "] is " << e.dump() << ", not a number";
    return static_cast<T>(e.get<double>());
  } else {
    int64_t v = 0;
    if (e.is_number_integer() && !e.is_number_unsigned()) {
      v = e.get<int64_t>();
    } else if (e.is_number_unsigned()) {
      uint64_t u = e.get<uint64_t>();
      SG_CHECK(u <= uint64_t(std::numeric_limits<int64_t>::max()))
          << "data[" << i << "] = " << u << " is out of range";
      v = static_cast<int64_t>(u);
    } else {
      SG_CHECK(e.is_number_float()) << "data[" << i << "] is " << e.dump() << ", not a number";
      double d = e.get<double>();
      SG_CHECK(std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18)
          << "data[" << i << "] = " << e.dump() << " is not an integer";
      v = static_cast<int64_t>(d);
    }
    SG_CHECK(v >= int64_t(std::numeric_limits<T>::min()) &&
             v <= int64_t(std::numeric_limits<T>::max()))
        << "data[" << i << "] = " << v << " does not fit " << dtype_name(dtype_v<T>);
    return static_cast<T>(v);
  }
}

Tensor parse_tensor(const ValueInfo& info, const json& j) {
  SG_CHECK(j.is_object()) << "not an object with shape, dtype and data";
  for (const auto& [key, value] : j.items()) {
    SG_CHECK(key == "shape" || key == "dtype" || key == "data")
        << "unknown field \"" << key << "\" (shape, dtype, data)";
  }
  SG_CHECK(j.contains("shape") && j.contains("data")) << "needs \"shape\" and \"data\"";
  const json& js = j["shape"];
  SG_CHECK(js.is_array() && js.size() <= size_t(kMaxRank))
      << "shape must be an array of at most " << kMaxRank << " sizes";
  Shape shape;
  for (const json& d : js) {
    SG_CHECK(d.is_number_integer() && d.get<int64_t>() >= 0)
        << "shape " << js.dump() << " has a size that is not a non-negative integer";
    shape.push_back(d.get<int64_t>());
  }
  DType dtype = info.dtype;
  if (j.contains("dtype")) {
    SG_CHECK(j["dtype"].is_string()) << "dtype must be a string";
    dtype = parse_dtype(j["dtype"].get<std::string>());
    SG_CHECK(dtype == info.dtype) << "dtype " << dtype_name(dtype) << " given, the model takes "
                                  << dtype_name(info.dtype);
  }
  std::vector<const json*> elems;
  flatten(j["data"], elems, 0);
  // The element count, without overflow: a shape whose product exceeds the data is wrong anyway.
  int64_t count = 1;
  for (int64_t d : shape) {
    SG_CHECK(!__builtin_mul_overflow(count, d, &count))
        << "shape " << shape_str(shape) << " has more elements than data has";
  }
  SG_CHECK(count == int64_t(elems.size()))
      << "shape " << shape_str(shape) << " has " << count << " elements, data has " << elems.size();
  Tensor t(dtype, shape);
  visit_dtype(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < count; ++i) p[i] = element<T>(*elems[size_t(i)], i);
  });
  return t;
}

// A JSON string (quoted, escaped).
std::string json_string(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Appends {"shape": [...], "dtype": "...", "data": [...]}. Written directly rather than through a
// json value: floats in their shortest round-trip form (a float held as a JSON double prints 17
// digits, doubling the response), and no per-element allocation.
void append_tensor_json(std::string& out, const Tensor& t) {
  char buf[32];
  out += "{\"shape\":[";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    if (i) out += ',';
    out += std::to_string(t.shape()[i]);
  }
  out += "],\"dtype\":\"";
  out += dtype_name(t.dtype());
  out += "\",\"data\":[";
  out.reserve(out.size() + size_t(t.numel()) * 12 + 2);
  visit_dtype(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (i) out += ',';
      if constexpr (std::is_floating_point_v<T>) {
        if (!std::isfinite(p[i])) {
          out += "null";
          continue;
        }
        out.append(buf, std::to_chars(buf, buf + sizeof buf, p[i]).ptr);
      } else if constexpr (std::is_same_v<T, bool>) {
        out += p[i] ? "true" : "false";
      } else {
        out.append(buf, std::to_chars(buf, buf + sizeof buf, int64_t(p[i])).ptr);
      }
    }
  });
  out += "]}";
}

// {"name": tensor, ...} in the order given.
void append_tensors_json(std::string& out, const Graph& g, const std::vector<ValueId>& ids,
                         const std::vector<Tensor>& tensors) {
  out += '{';
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (i) out += ',';
    out += json_string(g.value(ids[i]).name);
    out += ':';
    append_tensor_json(out, tensors[i]);
  }
  out += '}';
}

json dims_json(const std::optional<DimList>& dims) {
  if (!dims) return nullptr;
  json out = json::array();
  for (const Dim& d : *dims) {
    if (d.is_static())
      out.push_back(d.size);
    else if (!d.symbol.empty())
      out.push_back(d.symbol);
    else
      out.push_back(nullptr);
  }
  return out;
}

json values_json(const Graph& g, const std::vector<ValueId>& ids) {
  json out = json::array();
  for (ValueId id : ids) {
    const ValueInfo& v = g.value(id);
    out.push_back({{"name", v.name},
                   {"dtype", v.dtype == DType::undefined ? "" : std::string(dtype_name(v.dtype))},
                   {"shape", dims_json(v.shape)}});
  }
  return out;
}

std::string error_body(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool is_internal(const Error& e) { return e.message().rfind("internal error", 0) == 0; }

}  // namespace

std::vector<Tensor> parse_predict_request(const Graph& graph, std::string_view body,
                                          std::string* id) {
  SG_CHECK(nesting_depth(body) <= kMaxNesting)
      << "request JSON nested deeper than " << kMaxNesting << " levels";
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    SG_FAIL() << "request body is not JSON: " << e.what();
  }
  SG_CHECK(j.is_object()) << "request must be a JSON object with \"inputs\"";
  for (const auto& [key, value] : j.items()) {
    SG_CHECK(key == "inputs" || key == "id") << "unknown field \"" << key << "\" (inputs, id)";
  }
  if (id) *id = j.contains("id") ? j["id"].dump() : "";
  if (j.contains("id")) {
    SG_CHECK(j["id"].is_string() || j["id"].is_number_integer())
        << "id must be a string or an integer";
  }
  SG_CHECK(j.contains("inputs") && j["inputs"].is_object())
      << "request needs \"inputs\": an object of named inputs";
  const json& ins = j["inputs"];
  std::string names;
  for (ValueId v : graph.inputs) names += (names.empty() ? "" : ", ") + graph.value(v).name;
  for (const auto& [key, value] : ins.items()) {
    bool known = std::any_of(graph.inputs.begin(), graph.inputs.end(),
                             [&](ValueId v) { return graph.value(v).name == key; });
    SG_CHECK(known) << "unknown input '" << key << "'; the model's inputs are " << names;
  }
  std::vector<Tensor> inputs;
  for (ValueId v : graph.inputs) {
    const ValueInfo& info = graph.value(v);
    SG_CHECK(ins.contains(info.name))
        << "input '" << info.name << "' missing; the model's inputs are " << names;
    try {
      inputs.push_back(parse_tensor(info, ins[info.name]));
    } catch (Error& e) {
      throw Error("input '" + info.name + "': " + e.message());
    }
  }
  return inputs;
}

std::string format_predict_request(const Graph& graph, const std::vector<Tensor>& inputs,
                                   const std::string& id) {
  SG_CHECK(inputs.size() == graph.inputs.size()) << "one tensor per model input";
  std::string out = "{";
  if (!id.empty()) out += "\"id\":" + json_string(id) + ",";
  out += "\"inputs\":";
  append_tensors_json(out, graph, graph.inputs, inputs);
  out += '}';
  return out;
}

std::vector<Tensor> parse_predict_response(const Graph& graph, std::string_view body,
                                           std::string* id) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    SG_FAIL() << "response is not JSON: " << e.what();
  }
  SG_CHECK(j.is_object() && j.contains("outputs") && j["outputs"].is_object())
      << "response has no outputs: " << std::string(body.substr(0, 200));
  if (id) *id = j.contains("id") ? j["id"].dump() : "";
  std::vector<Tensor> outs;
  for (ValueId v : graph.outputs) {
    const ValueInfo& info = graph.value(v);
    SG_CHECK(j["outputs"].contains(info.name)) << "response lacks output '" << info.name << "'";
    const json& t = j["outputs"][info.name];
    // Non-finite values come back as null: NaN here, so a comparison flags them.
    json copy = t;
    if (copy.contains("data") && copy["data"].is_array()) {
      for (json& e : copy["data"]) {
        if (e.is_null()) e = std::numeric_limits<double>::quiet_NaN();
      }
    }
    outs.push_back(parse_tensor(info, copy));
  }
  return outs;
}

int64_t resident_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long long size = 0, resident = 0;
  int got = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * sysconf(_SC_PAGESIZE) : 0;
}

Service::Service(ServiceOptions options) : options_(std::move(options)) {
  Graph g = load_onnx(options_.model);
  name_ = options_.name;
  if (name_.empty()) name_ = fs::absolute(options_.model).parent_path().filename().string();
  if (name_.empty()) name_ = g.name;
  session_ = std::make_unique<Session>(std::move(g), options_.session);
  if (!options_.warmup_dir.empty()) {
    SG_CHECK(fs::is_directory(options_.warmup_dir)) << options_.warmup_dir << ": no such folder";
    auto sets = load_data_set_inputs(options_.warmup_dir);
    SG_CHECK(!sets.empty()) << options_.warmup_dir << ": no test_data_set_<k>/input_<i>.pb files";
    try {
      session_->warm_up(sets);
    } catch (Error& e) {
      throw e.in_file(options_.warmup_dir);
    }
    warmup_sets_ = int(sets.size());
  }
}

void Service::count(int status, std::chrono::steady_clock::duration took) {
  size_t i = 0;
  while (i + 1 < kStatuses.size() && kStatuses[i] != status) ++i;
  by_status_[i].fetch_add(1, std::memory_order_relaxed);
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
  latency_sum_ns_.fetch_add(ns, std::memory_order_relaxed);
  size_t b = 0;
  while (b < kBuckets.size() && double(ns) * 1e-9 > kBuckets[b]) ++b;
  latency_buckets_[b].fetch_add(1, std::memory_order_relaxed);
}

ServiceResponse Service::predict(std::string_view body) {
  auto start = std::chrono::steady_clock::now();
  ServiceResponse r;
  request_bytes_.fetch_add(int64_t(body.size()), std::memory_order_relaxed);
  try {
    SG_CHECK(body.size() <= options_.max_body_bytes)
        << "request body of " << body.size() << " bytes exceeds the limit of "
        << options_.max_body_bytes << " bytes";
    std::string id;
    std::vector<Tensor> inputs = parse_predict_request(session_->graph(), body, &id);
    std::vector<Tensor> outputs = session_->run(inputs);
    // id is the request's JSON text of a string or an integer: echoed as it came.
    r.body = "{";
    if (!id.empty()) r.body += "\"id\":" + id + ",";
    r.body += "\"model_name\":" + json_string(name_) + ",\"outputs\":";
    append_tensors_json(r.body, session_->graph(), session_->graph().outputs, outputs);
    r.body += '}';
  } catch (const Error& e) {
    r.status = is_internal(e) ? 500 : 400;
    r.body = error_body(e.what());
  } catch (const std::exception& e) {
    r.status = 500;
    r.body = error_body(std::string("internal error: ") + e.what());
  }
  response_bytes_.fetch_add(int64_t(r.body.size()), std::memory_order_relaxed);
  count(r.status, std::chrono::steady_clock::now() - start);
  return r;
}

ServiceResponse Service::reject(int status, const std::string& message) {
  ServiceResponse r;
  r.status = status;
  r.body = error_body(message);
  count(status, std::chrono::nanoseconds(0));
  return r;
}

ServiceResponse Service::describe() const {
  const Graph& g = session_->graph();
  json j;
  j["name"] = name_;
  j["model"] = options_.model;
  j["inputs"] = values_json(g, g.inputs);
  j["outputs"] = values_json(g, g.outputs);
  j["warmup_sets"] = warmup_sets_;
  j["report"] = json::parse(session_->report().to_json());
  ServiceResponse r;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

ServiceResponse Service::health() const {
  json j{{"status", "ok"},
         {"model", name_},
         {"planned", session_->planned()},
         {"compiling", session_->compiling()}};
  ServiceResponse r;
  r.body = j.dump();
  return r;
}

ServiceResponse Service::metrics() const {
  Report rep = session_->report();
  std::ostringstream o;
  auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n'
      << name << ' ' << value << '\n';
  };
  o << "# HELP sgraph_requests_total Requests answered, by HTTP status.\n"
       "# TYPE sgraph_requests_total counter\n";
  for (size_t i = 0; i < kStatuses.size(); ++i) {
    o << "sgraph_requests_total{code=\"" << (kStatuses[i] ? std::to_string(kStatuses[i]) : "other")
      << "\"} " << by_status_[i].load() << '\n';
  }
  o << "# HELP sgraph_request_duration_seconds Predict requests: parsing, the Session's run and "
       "formatting.\n# TYPE sgraph_request_duration_seconds histogram\n";
  int64_t cumulative = 0;
  for (size_t b = 0; b <= kBuckets.size(); ++b) {
    cumulative += latency_buckets_[b].load();
    o << "sgraph_request_duration_seconds_bucket{le=\"";
    if (b < kBuckets.size())
      o << kBuckets[b];
    else
      o << "+Inf";
    o << "\"} " << cumulative << '\n';
  }
  o << "sgraph_request_duration_seconds_sum " << double(latency_sum_ns_.load()) * 1e-9 << '\n'
    << "sgraph_request_duration_seconds_count " << cumulative << '\n';
  metric("sgraph_request_bytes_total", "counter", "Request body bytes received.",
         request_bytes_.load());
  metric("sgraph_response_bytes_total", "counter", "Response body bytes sent.",
         response_bytes_.load());

  // The Session's own record (sgraph::Report).
  int ops = int(rep.ops.size()), compiled_ops = 0;
  int64_t profiled = 0, compiled_profiled = 0;
  for (const OpReport& op : rep.ops) profiled += op.median_ns;
  for (const RegionReport& reg : rep.regions) {
    if (!reg.compiled) continue;
    compiled_ops += int(reg.nodes.size());
    compiled_profiled += reg.profiled_ns;
  }
  metric("sgraph_warmup_runs", "gauge", "Warm-up runs observed.", rep.warmup_runs);
  metric("sgraph_planned", "gauge", "1 once regions are planned.", rep.planned ? 1 : 0);
  metric("sgraph_compiling", "gauge", "1 while kernels are compiled in the background.",
         session_->compiling() ? 1 : 0);
  metric("sgraph_kernels_compiled_total", "counter",
         "Kernels compiled (re-planned-away regions included).", rep.compilations);
  metric("sgraph_kernels_loaded_from_disk_total", "counter", "Kernels loaded from the disk cache.",
         rep.disk_loads);
  metric("sgraph_compile_seconds_total", "counter", "Time spent compiling kernels.",
         rep.compile_ms_total * 1e-3);
  metric("sgraph_replans_total", "counter", "Re-plans after repeated guard misses.", rep.replans);
  metric("sgraph_regions", "gauge", "Regions in the current plan.", rep.regions.size());
  metric("sgraph_kernel_calls_total", "counter", "Region kernel calls.", rep.kernel_calls);
  metric("sgraph_guard_misses_total", "counter",
         "Region calls whose shape guard missed (the region's ops were interpreted).",
         rep.guard_misses);
  metric("sgraph_ops", "gauge", "Ops of the model.", ops);
  metric("sgraph_interpreted_ops_share", "gauge",
         "Share of the model's ops the current plan leaves to the interpreter.",
         ops ? double(ops - compiled_ops) / ops : 1.0);
  metric("sgraph_interpreted_time_share", "gauge",
         "Share of the warm-up's profiled op time outside compiled regions.",
         profiled ? double(profiled - compiled_profiled) / double(profiled) : 1.0);
  int64_t misses = rep.guard_misses, calls = rep.kernel_calls;
  metric("sgraph_guard_miss_share", "gauge", "Guard misses over region calls.",
         calls + misses ? double(misses) / double(calls + misses) : 0.0);
  metric("sgraph_arena_bytes", "gauge", "One call state's arena (the memory plan's peak).",
         rep.arena_bytes);
  metric("sgraph_call_states", "gauge", "Call states (one per concurrent call at most).",
         rep.call_states);
  metric("sgraph_dynamic_bytes", "gauge", "Dynamic regions' output blocks, all call states.",
         rep.dynamic_bytes);
  metric("sgraph_memory_bytes", "gauge", "Arenas and dynamic blocks of all call states.",
         rep.arena_bytes * int64_t(rep.call_states) + rep.dynamic_bytes);
  metric("process_resident_memory_bytes", "gauge", "Resident set size.", resident_bytes());
  metric("process_uptime_seconds", "gauge", "Seconds since the service started.",
         std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  ServiceResponse r;
  r.body = o.str();
  r.content_type = "text/plain; version=0.0.4";
  return r;
}

}  // namespace sgraph::examples
