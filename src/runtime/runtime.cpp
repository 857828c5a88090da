// Runtime: the JITs the Sessions of a process share (see sgraph/runtime.h).
#include "runtime/runtime_impl.h"

namespace sgraph {

std::shared_ptr<jit::Jit> Runtime::Impl::jit(const jit::DiskCacheOptions& disk) {
  std::lock_guard<std::mutex> lock(mu);
  std::weak_ptr<jit::Jit>& slot = jits[{disk.dir, disk.max_bytes}];
  if (std::shared_ptr<jit::Jit> j = slot.lock()) return j;
  std::shared_ptr<jit::Jit> j = jit::Jit::create(disk);
  slot = j;
  if (keep) kept.push_back(j);
  return j;
}

size_t Runtime::Impl::live_kernels() const {
  std::lock_guard<std::mutex> lock(mu);
  size_t n = 0;
  for (const auto& [key, weak] : jits)
    if (std::shared_ptr<jit::Jit> j = weak.lock()) n += j->live_kernels();
  return n;
}

Runtime::Runtime(bool keep) : impl_(std::make_unique<Impl>(keep)) {}
Runtime::~Runtime() = default;

std::shared_ptr<Runtime> Runtime::process() {
  static const std::shared_ptr<Runtime> rt(new Runtime(false));
  return rt;
}

std::shared_ptr<Runtime> Runtime::create() { return std::shared_ptr<Runtime>(new Runtime(true)); }

size_t Runtime::live_kernels() const { return impl_->live_kernels(); }

}  // namespace sgraph
