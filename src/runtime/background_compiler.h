// BackgroundCompiler: compiles a Session's region kernels on a thread of its own, so that no call
// waits for the JIT (SessionOptions::background_compile). The Session submits one job per region
// when it plans (the job's id goes in the region's plan), keeps serving through the interpreter,
// and between calls takes the finished kernels and installs each in the plan holding its id; a
// kernel no plan holds any more (its region was re-planned away) is dropped.
//
//   BackgroundCompiler bg;
//   bg.submit(id, [=, &jit] { return jit::compile_region(...); });
//   for (BackgroundCompiler::Done& d : bg.take_done()) install(d);   // between calls
//   bg.wait_idle();                                                   // Session::wait_compiled()
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "jit/region_compiler.h"

namespace sgraph {

class BackgroundCompiler {
 public:
  using Job = std::function<jit::CompiledRegion()>;
  struct Done {
    uint64_t job = 0;  // the id it was submitted with
    jit::CompiledRegion compiled;
    std::string error;  // the sgraph::Error the job threw ("": none)
  };

  BackgroundCompiler() = default;
  // Finishes the job running, drops the queued ones and joins the thread.
  ~BackgroundCompiler();
  BackgroundCompiler(const BackgroundCompiler&) = delete;
  BackgroundCompiler& operator=(const BackgroundCompiler&) = delete;

  // Queues a job (the thread starts with the first one).
  void submit(uint64_t id, Job job);
  // Drops the queued jobs (not the running one) that `live` says no plan waits for.
  void drop_unless(const std::function<bool(uint64_t)>& live);
  // The jobs finished since the last call, in completion order; never blocks on a compile.
  std::vector<Done> take_done();
  // True when take_done() has something (lock-free: callers poll it on every call).
  bool has_done() const { return has_done_.load(std::memory_order_acquire); }
  // Blocks until every queued job has finished.
  void wait_idle();
  // True while a job is queued or running.
  bool busy() const;

  // Tests: every job first sleeps this long (a slow compile, on demand); 0 turns it off.
  static void delay_jobs_for_testing(int ms);

 private:
  struct Queued {
    uint64_t id;
    Job job;
  };
  void work();
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Queued> queue_;
  std::vector<Done> done_;
  bool running_ = false, stop_ = false;
  std::atomic<bool> has_done_{false};
  std::thread thread_;
};

}  // namespace sgraph
