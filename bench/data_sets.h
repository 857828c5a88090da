// The inputs of a backend-test folder's data sets (test_data_set_<k>/input_<i>.pb), for the
// benchmarks that serve a model's data sets in a cycle.
#pragma once

#include <filesystem>
#include <vector>

#include "sgraph/sgraph.h"

namespace sgraph::bench {

inline std::vector<std::vector<Tensor>> load_data_sets(const std::filesystem::path& dir) {
  return load_data_set_inputs(dir.string());
}

}  // namespace sgraph::bench
