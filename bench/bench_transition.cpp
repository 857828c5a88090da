// Latency through the warm-up -> compile -> compiled transition: one model folder's data sets
// served in a cycle by a fresh Session, every call timed, with the kernels compiled in the call
// that ends the warm-up (synchronous) or on the Session's compiler threads (background). Prints per
// mode the latency percentiles over all calls, the slowest call and which it was, the first call
// that ran a kernel and the first with every kernel compiled (after the last call that left one
// compiling or waiting to be installed, re-plans' too); every output is checked against an
// interpreter's. Background compilation runs twice: at the calls' priority (the default), and at
// a lower one (SessionOptions::background_nice 10). A third row: the planned model
// (save_planned_onnx after a warm-up on the same data sets) with a warm disk cache: its Session
// plans and loads its kernels when made (the set-up column), and no call warms up.
//   build/release/bench/sgraph_transition MODEL_DIR [--calls N] [--threads N]
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "data_sets.h"
#include "sgraph/sgraph.h"

namespace {
using namespace sgraph;
using Feed = std::vector<Tensor>;

// Kernel calls of a report and of its subgraphs' (If branches).
int64_t kernel_calls(const Report& r) {
  int64_t n = r.kernel_calls;
  for (const Report& sub : r.subgraphs) n += kernel_calls(sub);
  return n;
}

double max_diff(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    for (int64_t j = 0; j < got[i].numel(); ++j) {
      const double a = got[i].at_double(j), b = want[i].at_double(j);
      const double d = std::abs(a - b) / (1e-4 + 1e-3 * std::abs(b));
      worst = std::max(worst, std::isnan(d) ? (std::isnan(a) && std::isnan(b) ? 0.0 : 1e9) : d);
    }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sgraph_transition MODEL_DIR [--calls N] [--threads N]\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  int calls = 200, threads = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--calls")) calls = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
  }
  try {
    const Graph g = load_onnx((dir / "model.onnx").string());
    const std::vector<Feed> sets = sgraph::bench::load_data_sets(dir);
    if (sets.empty()) throw Error(dir.string() + ": no test_data_set_0");
    Session ref(g, SessionOptions{.interpret_only = true});
    std::vector<std::vector<Tensor>> want;
    for (const Feed& f : sets) want.push_back(ref.run(f));
    std::printf("%s: %zu data sets in a cycle, %d calls, %d thread(s) per kernel\n\n",
                dir.filename().c_str(), sets.size(), calls, threads);
    std::printf(
        "| compilation | set-up ms | p50 ms | p90 ms | p99 ms | max ms | slowest call | first "
        "kernel call | every kernel from call | calls with a kernel | worst error / tolerance "
        "|\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    // The planned model, and a disk cache warmed with its kernels.
    const std::filesystem::path cache =
        std::filesystem::temp_directory_path() /
        ("sgraph_transition_" + std::to_string(static_cast<long>(getpid())));
    std::string planned;
    {
      Session w(load_onnx_bytes(save_onnx_bytes(g), "model"), SessionOptions{.jit = false});
      w.warm_up(sets);
      planned = save_planned_onnx_bytes(w);
      SessionOptions o;
      o.threads = threads;
      o.cache_dir = cache.string();
      Session fill(load_onnx_bytes(planned, "planned model"), o);
      for (const Feed& f : sets) fill.run(f);  // (If branches' kernels: when first run)
    }
    int status = 0;
    for (const char* mode :
         {"synchronous", "background", "background, nice 10", "planned model, warm cache"}) {
      const bool background = !std::strncmp(mode, "background", 10);
      const bool from_plan = !std::strcmp(mode, "planned model, warm cache");
      SessionOptions o;
      o.threads = threads;
      o.cache_dir = from_plan ? cache.string() : "";  // else every kernel compiled
      o.background_compile = background;
      if (std::strchr(mode, ',') && background) o.background_nice = 10;
      const auto made = std::chrono::steady_clock::now();
      Session s(from_plan ? load_onnx_bytes(planned, "planned model") : g, o);
      const double setup_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - made)
              .count();
      std::vector<double> ms;
      int first_kernel = 0, with_kernel = 0, planned_from = 0, compiling_until = 0;
      double worst = 0;
      for (int c = 0; c < calls; ++c) {
        const size_t k = static_cast<size_t>(c) % sets.size();
        const int64_t kernels_before = kernel_calls(s.report());
        const auto start = std::chrono::steady_clock::now();
        const std::vector<Tensor> out = s.run(sets[k]);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
        worst = std::max(worst, max_diff(out, want[k]));
        if (kernel_calls(s.report()) > kernels_before) {
          ++with_kernel;
          if (first_kernel == 0) first_kernel = c + 1;
        }
        if (planned_from == 0 && s.planned()) planned_from = c + 2;
        if (s.compiling()) compiling_until = c + 1;  // (re-plans too)
      }
      const auto slowest = std::max_element(ms.begin(), ms.end());
      const int slowest_call = static_cast<int>(slowest - ms.begin()) + 1;
      std::vector<double> sorted = ms;
      std::sort(sorted.begin(), sorted.end());
      const auto pct = [&](double p) {
        return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
      };
      std::printf("| %s | %.1f | %.3f | %.3f | %.3f | %.1f | %d | %d | %d | %d | %.3f |\n", mode,
                  setup_ms, pct(0.5), pct(0.9), pct(0.99), *slowest, slowest_call, first_kernel,
                  std::max(planned_from, compiling_until + 1), with_kernel, worst);
      if (worst > 1) status = 1;
    }
    std::filesystem::remove_all(cache);
    return status;
  } catch (const Error& e) {
    std::fprintf(stderr, "sgraph_transition: %s\n", e.what());
    return 1;
  }
}
