// ONNX node conformance: runs every test folder of ONNX's backend node tests whose ops sgraph
// supports and prints, per op, how many tests ran and passed. Tests using an op sgraph does not
// support are listed as such. Exits non-zero if a supported test fails.
//   sgraph_conformance [NODE_DIR] [--verbose]   (default: Debian libonnx-testdata's node tests)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "onnx/backend_test.h"
#include "sgraph/onnx.h"

namespace fs = std::filesystem;
using namespace sgraph;

namespace {

// Tests whose reference outputs are not a target (ONNX Runtime disagrees with them too), with why.
const std::map<std::string, std::string> kExcluded = {
    {"test_resize_downsample_scales_cubic_align_corners",
     "reference divides by scale*in - 1, not by the output length - 1 as ONNX Runtime does"},
    {"test_resize_downsample_scales_linear_align_corners",
     "reference divides by scale*in - 1, not by the output length - 1 as ONNX Runtime does"},
};

// The op a test is about: the op of a one-node model, else the test's name.
std::string op_of(const Graph& g, const std::string& test) {
  if (g.nodes.size() == 1) return std::string(op_name(g.nodes[0].op));
  return "(multi-node) " + test.substr(0, test.find('_', 5));
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = "/usr/share/libonnx-testdata/data/node";
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--verbose") == 0)
      verbose = true;
    else
      root = argv[i];
  }
  if (!fs::is_directory(root)) {
    std::printf("conformance: %s not found (apt-get install libonnx-testdata)\n", root.c_str());
    return 1;
  }
  std::vector<std::string> tests;
  for (const auto& e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "model.onnx")) tests.push_back(e.path().filename().string());
  std::sort(tests.begin(), tests.end());

  struct Row {
    int tests = 0, passed = 0;
  };
  std::map<std::string, Row> rows;
  std::map<std::string, int> unsupported;  // reason -> tests
  std::vector<std::string> failures;
  int ran = 0, passed = 0, excluded = 0;
  for (const std::string& t : tests) {
    const std::string dir = root + "/" + t;
    if (auto it = kExcluded.find(t); it != kExcluded.end()) {
      ++excluded;
      if (verbose) std::printf("EXCLUDED %s: %s\n", t.c_str(), it->second.c_str());
      continue;
    }
    std::string op;
    try {
      op = op_of(load_onnx(dir + "/model.onnx"), t);
    } catch (const Error& e) {
      std::string why = e.message();
      if (why.rfind("unsupported op", 0) == 0) why = why.substr(0, why.find(" (domain"));
      ++unsupported[why];
      if (verbose) std::printf("UNSUPPORTED %s: %s\n", t.c_str(), e.what());
      continue;
    }
    Row& row = rows[op];
    ++row.tests;
    ++ran;
    bool ok = true;
    std::string error;
    try {
      for (const DataSetResult& r : run_backend_test(dir, Tolerance{})) {
        if (!r.ok && ok) error = r.name + ": " + r.error;
        ok = ok && r.ok;
      }
    } catch (const Error& e) {
      ok = false;
      error = e.what();
    }
    if (ok) {
      ++row.passed;
      ++passed;
    } else {
      failures.push_back(t + ": " + error);
    }
  }
  std::printf("%-40s %6s %7s\n", "op", "tests", "passed");
  for (const auto& [op, r] : rows) std::printf("%-40s %6d %7d\n", op.c_str(), r.tests, r.passed);
  std::printf("\nnot run (unsupported), tests per reason:\n");
  for (const auto& [why, n] : unsupported) std::printf("  %4d  %s\n", n, why.c_str());
  std::printf("\nexcluded (reference not a target): %d\n", excluded);
  for (const std::string& f : failures) std::printf("FAIL %s\n", f.c_str());
  std::printf(
      "\nconformance: %d ops, %d of %d node tests run passed, %zu unsupported, %d excluded\n",
      static_cast<int>(rows.size()), passed, ran,
      tests.size() - static_cast<size_t>(ran) - static_cast<size_t>(excluded), excluded);
  return failures.empty() ? 0 : 1;
}
