// The inputs of a backend-test folder's data sets (test_data_set_<k>/input_<i>.pb), for the
// benchmarks that serve a model's data sets in a cycle.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sgraph/sgraph.h"

namespace sgraph::bench {

inline std::vector<std::vector<Tensor>> load_data_sets(const std::filesystem::path& dir) {
  std::vector<std::vector<Tensor>> sets;
  for (int k = 0;; ++k) {
    const auto ds = dir / ("test_data_set_" + std::to_string(k));
    if (!std::filesystem::is_directory(ds)) break;
    std::vector<Tensor> inputs;
    for (int i = 0;; ++i) {
      const auto pb = ds / ("input_" + std::to_string(i) + ".pb");
      if (!std::filesystem::exists(pb)) break;
      inputs.push_back(load_tensor_pb(pb.string()));
    }
    sets.push_back(std::move(inputs));
  }
  return sets;
}

}  // namespace sgraph::bench
