// sgraph/runtime.h — what the Sessions of a process share.
//
// A Runtime holds the JIT and its in-memory kernel cache (one per disk-cache directory a Session
// names), so Sessions of one model, the Sessions of its subgraphs, and Sessions of models with
// layers in common compile each kernel once. Every Session uses one: SessionOptions::runtime, or
// the process's (Runtime::process()) when that is null.
//
//   auto rt = sgraph::Runtime::create();       // or leave SessionOptions::runtime null
//   sgraph::SessionOptions o;  o.runtime = rt;
//   sgraph::Session a(model_a, o), b(model_b, o);
//
// Threads. Region kernels run their parallel loops on oneTBB's worker pool, one per process
// (the machine's threads less one), each region plan through a task arena of its planned thread
// count (SessionOptions::threads at most). Calls running at once share those arenas: a region
// never runs on more threads than its plan gave it, however many calls are in it, and the threads
// working at any time are at most the calling threads plus the pool's. So a service sets
// SessionOptions::threads (intra-op threads per kernel) and its own number of calling threads
// (concurrent requests) and the machine is never oversubscribed by more than the callers.
#pragma once

#include <cstddef>
#include <memory>

namespace sgraph {

class Runtime {
 public:
  // The process's runtime, made on first use. Its JITs live as long as a Session uses them (a
  // process that makes Sessions one after another compiles afresh for each).
  static std::shared_ptr<Runtime> process();
  // A runtime of its own, whose JITs and kernels live as long as it does (benchmarks measuring
  // cold compiles, services keeping kernels between Sessions).
  static std::shared_ptr<Runtime> create();
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Distinct kernels alive in its JITs.
  size_t live_kernels() const;

  struct Impl;  // (src/runtime/runtime_impl.h)
  Impl& impl() const { return *impl_; }

 private:
  explicit Runtime(bool keep);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sgraph
