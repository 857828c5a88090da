// Test helper: writes an ONNX model back out through sgraph's exporter, with some of its top-level
// nodes grouped into model-local functions, for checking the files with another runtime
// (scripts/ort_check.sh).
//   sgraph_export_groups IN.onnx OUT.onnx [--groups K] [--size S]
// K groups (default 3) of up to S (default 8) consecutive nodes each, spread evenly over the
// graph's node list (consecutive nodes of a topological order contract without a cycle); K = 0
// writes no functions.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sgraph/onnx.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: sgraph_export_groups IN.onnx OUT.onnx [--groups K] [--size S]\n");
    return 2;
  }
  int groups = 3, size = 8;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--groups") == 0)
      groups = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--size") == 0)
      size = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "sgraph_export_groups: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  try {
    const sgraph::Graph g = sgraph::load_onnx(argv[1]);
    const auto n = static_cast<int32_t>(g.nodes.size());
    sgraph::OnnxSaveOptions options;
    for (int k = 0; k < groups; ++k) {
      const int32_t start = static_cast<int32_t>(int64_t{k} * n / groups);
      const int32_t end = static_cast<int32_t>(int64_t{k + 1} * n / groups);
      std::vector<int32_t> group;
      for (int32_t i = start; i < end && i < start + size; ++i) group.push_back(i);
      if (!group.empty()) options.functions.push_back(std::move(group));
    }
    sgraph::save_onnx(g, argv[2], options);
    std::printf("%s: %d nodes, %zu functions (", argv[2], n, options.functions.size());
    for (size_t k = 0; k < options.functions.size(); ++k)
      std::printf("%s%zu nodes", k ? ", " : "", options.functions[k].size());
    std::printf(")\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sgraph_export_groups: %s\n", e.what());
    return 1;
  }
  return 0;
}
