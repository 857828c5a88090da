// `sgraph check DIR... [--rtol R] [--atol A] [--warmup N] [--passes P] [--each] [--require-kernels]
// [--no-jit] [--report]`: runs
// folders in the ONNX backend-test layout (model.onnx + test_data_set_<k>/) and compares each data
// set's outputs with its references. A DIR may also hold such folders, at any depth; they run in
// sorted order. One line per data set; a model that does not load, or a DIR with no model in it,
// counts as one failed data set. --report prints the session's report after a model's last run.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli.h"
#include "onnx/backend_test.h"
#include "sgraph/sgraph.h"

namespace fs = std::filesystem;

namespace sgraph::cli {

namespace {

// The test folders at or under `dir`: those holding a model.onnx, in sorted order.
void find_tests(const fs::path& dir, int depth, std::vector<fs::path>& out) {
  std::error_code ec;
  if (fs::exists(dir / "model.onnx", ec)) {
    out.push_back(dir);
    return;
  }
  if (depth == 0) return;
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec)) subdirs.push_back(e.path());
  std::sort(subdirs.begin(), subdirs.end());
  for (const fs::path& d : subdirs) find_tests(d, depth - 1, out);
}

struct Tally {
  int models = 0, passed = 0, failed = 0;
  int64_t kernel_calls = 0, compilations = 0, disk_loads = 0;
};

void line(bool ok, const std::string& folder, const std::string& what, const std::string& detail,
          Tally& tally) {
  ++(ok ? tally.passed : tally.failed);
  std::printf("%s  %s  %s%s%s\n", ok ? "PASS" : "FAIL", folder.c_str(), what.c_str(),
              detail.empty() ? "" : "  ", detail.c_str());
  std::fflush(stdout);  // real models take a while: show progress
}

void check_folder(const std::string& dir, Tolerance tol, const SessionOptions& options, int passes,
                  bool each, bool require_kernels, bool report, Tally& tally) {
  ++tally.models;
  std::vector<DataSetResult> results;
  Report rep;
  try {
    results = run_backend_test(load_onnx(dir + "/model.onnx"), dir, tol, options, passes, each,
                               report ? &rep : nullptr);
  } catch (const std::exception& e) {  // sgraph::Error, or e.g. running out of memory
    line(false, dir, "model", e.what(), tally);
    return;
  }
  if (results.empty()) line(false, dir, "-", "no test_data_set_0 folder", tally);
  for (size_t i = 0; i < results.size(); ++i) {
    const DataSetResult& r = results[i];
    // (Through one session, the first runs are its warm-up, which runs no kernel.)
    const bool served = each || i >= static_cast<size_t>(std::max(options.warmup_runs, 0));
    char errors[128];
    std::snprintf(errors, sizeof errors, "max_abs %.3g  max_rel %.3g  kernels %lld", r.max_abs,
                  r.max_rel, static_cast<long long>(r.kernel_calls));
    tally.kernel_calls += r.kernel_calls;
    tally.compilations += r.compilations;
    tally.disk_loads += r.disk_loads;
    const bool no_kernel = require_kernels && served && r.pass > 0 && r.ok && r.kernel_calls == 0;
    const std::string what =
        passes > 1 ? r.name + " (pass " + std::to_string(r.pass) + ")" : r.name;
    line(r.ok && !no_kernel, dir, what,
         errors + (!r.ok       ? "  " + r.error
                   : no_kernel ? "  no region kernel ran"
                               : ""),
         tally);
  }
  if (report && !results.empty()) std::printf("\n%s\n", rep.to_text().c_str());
}

}  // namespace

int cmd_check(const Args& args) {
  if (args.positional.empty()) throw UsageError("check: expected at least one DIR");
  const Tolerance tol{args.number("--rtol", 1e-3), args.number("--atol", 1e-4)};
  SessionOptions options;
  options.warmup_runs = static_cast<int>(args.integer("--warmup", options.warmup_runs, 1));
  options.jit = args.all("--no-jit").empty();
  options.threads = static_cast<int>(args.integer("--threads", options.threads, 1));
  options.cache_dir = tool_cache_dir(args);
  const int passes = static_cast<int>(args.integer("--passes", 1, 1));
  const bool each = !args.all("--each").empty();
  const bool require_kernels = !args.all("--require-kernels").empty();
  const bool report = !args.all("--report").empty();
  Tally tally;
  for (const std::string& dir : args.positional) {
    if (!fs::is_directory(dir)) {
      line(false, dir, "-", fs::exists(dir) ? "not a directory" : "no such directory", tally);
      continue;
    }
    std::vector<fs::path> tests;
    find_tests(dir, 8, tests);
    if (tests.empty()) line(false, dir, "-", "no model.onnx in it or its subfolders", tally);
    for (const fs::path& t : tests)
      check_folder(t.lexically_normal().string(), tol, options, passes, each, require_kernels,
                   report, tally);
  }
  if (tally.models == 0)
    std::printf("check: no model folder (model.onnx + test_data_set_<k>/) found: nothing ran\n");
  std::printf(
      "check: %d model folders, %d data set runs (rtol %g, atol %g, %d warm-up runs, %d passes, "
      "%sJIT %s, %lld kernel calls): %d passed, %d failed\n",
      tally.models, tally.passed + tally.failed, tol.rtol, tol.atol, options.warmup_runs, passes,
      each ? "a session per data set, " : "", options.jit ? "on" : "off",
      static_cast<long long>(tally.kernel_calls), tally.passed, tally.failed);
  std::printf("check: %lld kernels compiled, %lld loaded from the disk cache%s\n",
              static_cast<long long>(tally.compilations), static_cast<long long>(tally.disk_loads),
              options.cache_dir.empty() ? " (none)" : (" " + options.cache_dir).c_str());
  std::printf("%d passed, %d failed\n", tally.passed, tally.failed);
  return tally.failed == 0 && tally.passed > 0 ? 0 : 1;
}

}  // namespace sgraph::cli
