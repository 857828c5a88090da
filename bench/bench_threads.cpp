// Throughput of one Session shared by many threads (sgraph_threads): the bundled encoder block
// (and optionally other backend-test folders), warmed up on its data sets so one dynamic kernel
// serves every shape, then T threads each making N calls over the data sets in a cycle. Prints
// calls per second per thread count and the ratio to one thread, thread counts alternating over
// rounds (the median round is shown), and checks every output against a serial run.
//
//   sgraph_threads [--calls N] [--rounds R] [--kernel-threads K] [MODEL_DIR...]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "data_sets.h"
#include "sgraph/sgraph.h"

using namespace sgraph;

namespace {

bool same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 2000, rounds = 3, kernel_threads = 1;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--calls" && i + 1 < argc)
      calls = std::atoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else if (a == "--kernel-threads" && i + 1 < argc)
      kernel_threads = std::atoi(argv[++i]);
    else if (a.rfind("--", 0) == 0) {
      std::fprintf(
          stderr,
          "usage: sgraph_threads [--calls N] [--rounds R] [--kernel-threads K] [MODEL_DIR...]\n");
      return 2;
    } else
      dirs.push_back(a);
  }
  if (dirs.empty())
    dirs.push_back(std::string(SGRAPH_SOURCE_DIR) + "/examples/models/tiny_encoder_block");
  const std::vector<int> thread_counts = {1, 2, 4, 16};
  std::printf(
      "one Session, T threads x %d calls each, kernel threads %d, %u hardware threads, "
      "median of %d rounds\n",
      calls, kernel_threads, std::thread::hardware_concurrency(), rounds);
  std::printf("%-22s %8s %12s %10s\n", "model", "threads", "calls/s", "vs 1");
  int status = 0;
  for (const std::string& dir : dirs) {
    const auto sets = bench::load_data_sets(dir);
    if (sets.empty()) {
      std::fprintf(stderr, "%s: no data sets\n", dir.c_str());
      return 1;
    }
    SessionOptions o;
    o.threads = kernel_threads;
    Session s(load_onnx(dir + "/model.onnx"), o);
    s.warm_up(sets);
    std::vector<std::vector<Tensor>> serial;
    for (const auto& in : sets) serial.push_back(s.run(in));
    std::vector<std::vector<double>> rate(thread_counts.size());
    std::atomic<int64_t> mismatches{0};
    for (int r = 0; r < rounds; ++r) {
      for (size_t t = 0; t < thread_counts.size(); ++t) {
        const int n = thread_counts[t];
        std::vector<std::thread> pool;
        const auto start = std::chrono::steady_clock::now();
        for (int k = 0; k < n; ++k) {
          pool.emplace_back([&, k] {
            for (int c = 0; c < calls; ++c) {
              const size_t d = size_t(k + c) % sets.size();
              std::vector<Tensor> out = s.run(sets[d]);
              for (size_t j = 0; j < out.size(); ++j) {
                if (!same(out[j], serial[d][j])) mismatches.fetch_add(1);
              }
            }
          });
        }
        for (auto& th : pool) th.join();
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        rate[t].push_back(double(n) * calls / secs);
      }
    }
    std::string name = std::filesystem::path(dir).filename().string();
    double base = 0;
    for (size_t t = 0; t < thread_counts.size(); ++t) {
      auto v = rate[t];
      std::sort(v.begin(), v.end());
      const double med = v[v.size() / 2];
      if (t == 0) base = med;
      std::printf("%-22s %8d %12.0f %9.2fx\n", name.c_str(), thread_counts[t], med, med / base);
    }
    Report rep = s.report();
    std::printf(
        "%-22s outputs differing from the serial run: %lld; kernel calls %lld, guard "
        "misses %lld, call states %zu\n",
        "", (long long)mismatches.load(), (long long)rep.kernel_calls, (long long)rep.guard_misses,
        rep.call_states);
    if (mismatches) status = 1;
  }
  return status;
}
