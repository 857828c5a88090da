#include "load.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "service.h"

namespace sgraph::examples {
namespace {

using Clock = std::chrono::steady_clock;

Tensor random_input(const ValueInfo& info, const DimValues& dims, std::mt19937_64& rng) {
  SG_CHECK(info.shape) << "input '" << info.name << "' has no declared shape";
  Shape shape;
  for (const Dim& d : *info.shape) {
    if (d.is_static()) {
      shape.push_back(d.size);
      continue;
    }
    auto it = dims.find(d.symbol);
    SG_CHECK(it != dims.end()) << "input '" << info.name << "' " << dims_str(*info.shape)
                               << ": no size given for dim '" << d.symbol << "'";
    shape.push_back(it->second);
  }
  Tensor t(info.dtype, shape);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> bit(0, 1);
  visit_dtype(info.dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_floating_point_v<T>)
        p[i] = static_cast<T>(normal(rng));
      else
        p[i] = static_cast<T>(bit(rng));
    }
  });
  return t;
}

bool close_enough(const Tensor& got, const Tensor& want, double rtol, double atol,
                  std::string* why) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    *why = "got " + std::string(dtype_name(got.dtype())) + shape_str(got.shape()) + ", want " +
           std::string(dtype_name(want.dtype())) + shape_str(want.shape());
    return false;
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.at_double(i), w = want.at_double(i);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      *why = "element " + std::to_string(i) + ": got " + std::to_string(g) + ", want " +
             std::to_string(w);
      return false;
    }
  }
  return true;
}

std::string model_name(const LoadOptions& o) {
  if (!o.name.empty()) return o.name;
  return std::filesystem::absolute(o.model).parent_path().filename().string();
}

}  // namespace

double metric_value(const std::string& metrics, const std::string& name) {
  std::istringstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
        line[name.size()] == ' ') {
      return std::strtod(line.c_str() + name.size() + 1, nullptr);
    }
  }
  return -1;
}

std::vector<DimValues> parse_shape_list(const std::string& text) {
  std::vector<DimValues> out;
  std::istringstream shapes(text);
  std::string shape;
  while (std::getline(shapes, shape, ';')) {
    DimValues dims;
    std::istringstream items(shape);
    std::string item;
    while (std::getline(items, item, ',')) {
      auto eq = item.find('=');
      SG_CHECK(eq != std::string::npos && eq > 0) << "'" << item << "' is not symbol=size";
      char* end = nullptr;
      long long v = std::strtoll(item.c_str() + eq + 1, &end, 10);
      SG_CHECK(*end == '\0' && v >= 0 && eq + 1 < item.size())
          << "'" << item << "': the size is not a non-negative integer";
      dims[item.substr(0, eq)] = v;
    }
    SG_CHECK(!dims.empty()) << "an empty shape in '" << text << "'";
    out.push_back(std::move(dims));
  }
  SG_CHECK(!out.empty()) << "no shapes in '" << text << "'";
  return out;
}

std::vector<std::vector<PreparedRequest>> prepare_requests(const LoadOptions& o) {
  SG_CHECK(!o.phases.empty()) << "no shapes to send";
  SessionOptions interpret;
  interpret.interpret_only = true;
  Session reference(load_onnx(o.model), interpret);
  const Graph& g = reference.graph();
  std::mt19937_64 rng(o.seed);
  std::vector<std::vector<PreparedRequest>> phases;
  int next_id = 0;
  for (const auto& shapes : o.phases) {
    SG_CHECK(!shapes.empty()) << "a phase with no shapes";
    std::vector<PreparedRequest> reqs;
    for (int k = 0; k < o.requests_per_shape; ++k) {
      for (const DimValues& dims : shapes) {
        std::vector<Tensor> inputs;
        for (ValueId v : g.inputs) inputs.push_back(random_input(g.value(v), dims, rng));
        PreparedRequest r;
        r.id = std::to_string(next_id++);
        r.body = format_predict_request(g, inputs, r.id);
        r.expected = reference.run(inputs);
        reqs.push_back(std::move(r));
      }
    }
    phases.push_back(std::move(reqs));
  }
  return phases;
}

std::vector<double> phase_ends(const LoadOptions& o) {
  std::vector<double> w = o.phase_weights;
  if (w.empty()) w.assign(o.phases.size(), 1.0);
  SG_CHECK(w.size() == o.phases.size())
      << w.size() << " phase weights for " << o.phases.size() << " phases";
  double total = 0;
  for (double x : w) {
    SG_CHECK(x > 0) << "phase weights must be positive";
    total += x;
  }
  std::vector<double> ends;
  double at = 0;
  for (double x : w) ends.push_back(at += x / total * o.seconds);
  return ends;
}

double LoadResult::percentile(double p) const {
  if (latency_ms.empty()) return 0;
  size_t i = size_t(std::ceil(p / 100.0 * double(latency_ms.size())));
  i = std::clamp<size_t>(i, 1, latency_ms.size());
  return latency_ms[i - 1];
}

std::string LoadResult::to_text(const LoadOptions& o) const {
  char buf[512];
  std::string s;
  auto mib = [](int64_t b) { return double(b) / (1 << 20); };
  std::snprintf(buf, sizeof buf, "sgraph_load: %d connections, %.1f s, %zu phase(s)\n",
                o.connections, seconds, phase_requests.size());
  s += buf;
  std::snprintf(buf, sizeof buf, "  requests     %lld (%.1f/s)", (long long)requests,
                seconds > 0 ? double(requests) / seconds : 0.0);
  s += buf;
  if (phase_requests.size() > 1) {
    s += "  by phase";
    for (int64_t n : phase_requests) s += " " + std::to_string(n);
  }
  s += "\n";
  std::snprintf(buf, sizeof buf,
                "  errors       %lld\n  mismatches   %lld (every response checked against the "
                "interpreter, rtol %g atol %g)\n",
                (long long)errors, (long long)mismatches, o.rtol, o.atol);
  s += buf;
  std::snprintf(buf, sizeof buf, "  latency ms   p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
                percentile(50), percentile(99), percentile(99.9),
                latency_ms.empty() ? 0.0 : double(latency_ms.back()));
  s += buf;
  std::snprintf(buf, sizeof buf, "  server RSS   start %.1f MiB  end %.1f MiB  max %.1f MiB\n",
                mib(rss_start), mib(rss_end), mib(rss_max));
  s += buf;
  std::snprintf(buf, sizeof buf,
                "  server       kernel calls %.0f  guard misses %.0f  re-plans %.0f  kernels "
                "compiled %.0f\n",
                kernel_calls, guard_misses, replans, kernels_compiled);
  s += buf;
  if (!first_problem.empty()) s += "  first problem: " + first_problem + "\n";
  return s;
}

LoadResult run_load(const LoadOptions& o, const std::vector<std::vector<PreparedRequest>>& phases) {
  Graph g = load_onnx(o.model);
  const std::string path = "/v1/models/" + model_name(o) + ":predict";
  LoadResult result;
  std::mutex mu;  // result's problem text and merged latencies

  auto fetch_metrics = [&]() -> std::string {
    httplib::Client c(o.host, o.port);
    c.set_read_timeout(10, 0);
    auto res = c.Get("/metrics");
    return res && res->status == 200 ? res->body : std::string();
  };
  auto rss_of = [](const std::string& m) {
    return int64_t(metric_value(m, "process_resident_memory_bytes"));
  };
  std::string m0 = fetch_metrics();
  SG_CHECK(!m0.empty()) << "no server answering /metrics at " << o.host << ":" << o.port;
  result.rss_start = result.rss_max = rss_of(m0);

  std::atomic<int64_t> requests{0}, errors{0}, mismatches{0};
  std::vector<std::atomic<int64_t>> phase_requests(phases.size());
  const auto start = Clock::now();
  const std::vector<double> ends_at = phase_ends(o);
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  std::atomic<bool> stop_sampling{false};
  std::thread sampler([&] {
    while (!stop_sampling) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      int64_t rss = rss_of(fetch_metrics());
      std::lock_guard lock(mu);
      result.rss_max = std::max(result.rss_max, rss);
    }
  });

  auto problem = [&](const std::string& what) {
    std::lock_guard lock(mu);
    if (result.first_problem.empty()) result.first_problem = what;
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < o.connections; ++w) {
    workers.emplace_back([&, w] {
      httplib::Client client(o.host, o.port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(60, 0);
      client.set_write_timeout(60, 0);
      std::vector<float> lat;
      size_t k = size_t(w);
      while (true) {
        auto now = Clock::now();
        if (now >= end) break;
        double elapsed = std::chrono::duration<double>(now - start).count();
        size_t p = 0;
        while (p + 1 < phases.size() && elapsed >= ends_at[p]) ++p;
        const auto& reqs = phases[p];
        const PreparedRequest& r = reqs[k % reqs.size()];
        k += size_t(o.connections);  // connections send different requests at once
        auto t0 = Clock::now();
        auto res = client.Post(path, r.body, "application/json");
        auto t1 = Clock::now();
        lat.push_back(std::chrono::duration<float, std::milli>(t1 - t0).count());
        requests.fetch_add(1);
        phase_requests[p].fetch_add(1);
        if (!res) {
          errors.fetch_add(1);
          problem("request " + r.id + ": " + httplib::to_string(res.error()));
          continue;
        }
        if (res->status != 200) {
          errors.fetch_add(1);
          problem("request " + r.id + ": HTTP " + std::to_string(res->status) + " " +
                  res->body.substr(0, 300));
          continue;
        }
        try {
          std::string id;
          std::vector<Tensor> got = parse_predict_response(g, res->body, &id);
          std::string why;
          if (id != "\"" + r.id + "\"") why = "id " + id + " answered request " + r.id;
          for (size_t i = 0; why.empty() && i < got.size(); ++i) {
            if (!close_enough(got[i], r.expected[i], o.rtol, o.atol, &why)) {
              why = "output " + std::to_string(i) + ", " + why;
            }
          }
          if (!why.empty()) {
            mismatches.fetch_add(1);
            problem("request " + r.id + ": " + why);
          }
        } catch (const Error& e) {
          mismatches.fetch_add(1);
          problem("request " + r.id + ": " + e.what());
        }
      }
      std::lock_guard lock(mu);
      result.latency_ms.insert(result.latency_ms.end(), lat.begin(), lat.end());
    });
  }
  for (auto& t : workers) t.join();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  stop_sampling = true;
  sampler.join();
  std::sort(result.latency_ms.begin(), result.latency_ms.end());
  result.requests = requests;
  result.errors = errors;
  result.mismatches = mismatches;
  for (auto& n : phase_requests) result.phase_requests.push_back(n);
  std::string m1 = fetch_metrics();
  result.rss_end = rss_of(m1);
  result.rss_max = std::max(result.rss_max, result.rss_end);
  result.replans = metric_value(m1, "sgraph_replans_total");
  result.kernels_compiled = metric_value(m1, "sgraph_kernels_compiled_total");
  result.guard_misses = metric_value(m1, "sgraph_guard_misses_total");
  result.kernel_calls = metric_value(m1, "sgraph_kernel_calls_total");
  return result;
}

void write_wrk_data(const std::string& path, const LoadOptions& o,
                    const std::vector<std::vector<PreparedRequest>>& phases) {
  std::ofstream f(path);
  SG_CHECK(f) << path << ": cannot write";
  f << "-- Requests and the interpreter's outputs for wrk_check.lua (written by sgraph_load)\n"
    << "return {\n  path = \"/v1/models/" << model_name(o) << ":predict\",\n"
    << "  rtol = " << o.rtol << ", atol = " << o.atol << ",\n"
    << "  phase_ends = {";
  for (double e : phase_ends(o)) f << e << ",";
  f << "},\n  phases = {\n";
  f.precision(9);
  for (const auto& reqs : phases) {
    f << "    {\n";
    for (const PreparedRequest& r : reqs) {
      // Expected values as one string (a table constructor of thousands of numbers would exceed
      // LuaJIT's constants per chunk); non-finite ones as "nan", which never matches.
      f << "      { id = \"" << r.id << "\", body = [==[" << r.body << "]==], expected = \"";
      bool first = true;
      for (const Tensor& t : r.expected) {
        for (int64_t i = 0; i < t.numel(); ++i) {
          double v = t.at_double(i);
          f << (first ? "" : ",");
          if (std::isfinite(v))
            f << v;
          else
            f << "nan";
          first = false;
        }
      }
      f << "\" },\n";
    }
    f << "    },\n";
  }
  f << "  },\n}\n";
  SG_CHECK(f.good()) << path << ": write failed";
}

}  // namespace sgraph::examples
