// Runtime's internals: the JITs, one per disk-cache configuration (see sgraph/runtime.h).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "jit/jit.h"
#include "sgraph/runtime.h"

namespace sgraph {

struct Runtime::Impl {
  explicit Impl(bool k) : keep(k) {}
  // The JIT for a disk cache (made on first use). Thread-safe.
  std::shared_ptr<jit::Jit> jit(const jit::DiskCacheOptions& disk);
  size_t live_kernels() const;

  const bool keep;  // hold the JITs (else only while a Session does)
  mutable std::mutex mu;
  std::map<std::pair<std::string, int64_t>, std::weak_ptr<jit::Jit>> jits;
  std::vector<std::shared_ptr<jit::Jit>> kept;
};

}  // namespace sgraph
