// BackgroundCompiler: compiles a Session's region kernels on threads of its own, so that no call
// waits for the JIT (SessionOptions::background_compile). The Session submits one job per region
// when it plans (the job's id goes in the region's plan), keeps serving through the interpreter,
// and between calls takes the finished kernels and installs each in the plan holding its id; a
// kernel no plan holds any more (its region was re-planned away) is dropped. Up to `workers`
// jobs run at once (the JIT compiles outside its lock), on threads of the calls' priority or, with
// `nice` > 0, a lower one (Linux). run_all is the synchronous form: a plan's jobs, run at once on
// up to that many threads, returning when all are done.
//
//   BackgroundCompiler bg(jit.compile_threads());
//   bg.submit(id, [=, &jit] { return jit::compile_region(...); });
//   for (BackgroundCompiler::Done& d : bg.take_done()) install(d);   // between calls
//   bg.wait_idle();                                                   // Session::wait_compiled()
#pragma once

#include <atomic>
#include <chrono>
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

  struct Queued {
    uint64_t id;
    Job job;
  };

  explicit BackgroundCompiler(int workers = 1, int nice = 0);
  // Finishes the jobs running, drops the queued ones and joins the threads.
  ~BackgroundCompiler();
  BackgroundCompiler(const BackgroundCompiler&) = delete;
  BackgroundCompiler& operator=(const BackgroundCompiler&) = delete;

  // Runs `jobs` on up to `threads` threads at once, this one among them (only this one when there
  // is one job or one thread, or when no other thread can be started), and returns them done, in
  // completion order; a job that throws is returned with its error, like a background one.
  static std::vector<Done> run_all(std::vector<Queued> jobs, int threads);

  // Queues a job (a worker thread starts when every one started is busy, up to `workers`). When
  // no worker runs and none can be started (a thread limit), the job is done at once with that
  // error.
  void submit(uint64_t id, Job job);
  // How many jobs may run at once from now on (threads already started stay).
  void set_workers(int workers);
  // Drops the queued jobs (not the running ones) that `live` says no plan waits for.
  void drop_unless(const std::function<bool(uint64_t)>& live);
  // The jobs finished since the last call, in completion order; never blocks on a compile.
  std::vector<Done> take_done();
  // True when take_done() has something (lock-free: callers poll it on every call).
  bool has_done() const { return has_done_.load(std::memory_order_acquire); }
  // Blocks until every queued job has finished.
  void wait_idle();
  // True while a job is queued or running.
  bool busy() const;
  // Milliseconds during which at least one job was running, over the compiler's life.
  double busy_ms() const;

  // Tests: every job first sleeps this long (a slow compile, on demand); 0 turns it off.
  static void delay_jobs_for_testing(int ms);

 private:
  using Clock = std::chrono::steady_clock;
  static Done run_one(Queued& q);
  // A worker's loop; until_empty: the caller's share in run_all (returns when the queue is empty).
  void work(bool until_empty);
  int workers_;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Queued> queue_;
  std::vector<Done> done_;
  int running_ = 0;  // jobs running
  bool stop_ = false;
  // Jobs in the background: `nice_` lower in priority than their creator, and slowed by
  // delay_jobs_for_testing (run_all's jobs are not: their caller waits for them).
  bool background_ = true;
  int nice_ = 0;                  // background workers' niceness over their creator's
  Clock::time_point busy_since_;  // when running_ last went from 0 to 1
  Clock::duration busy_{};        // over the intervals that ended
  std::atomic<bool> has_done_{false};
  std::vector<std::thread> threads_;
};

}  // namespace sgraph
