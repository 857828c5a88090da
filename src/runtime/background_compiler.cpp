// BackgroundCompiler (see background_compiler.h): worker threads and a queue.
#include "runtime/background_compiler.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "ir/debug.h"
#include "ir/threads.h"
#include "sgraph/error.h"

namespace sgraph {
namespace {
std::atomic<int> job_delay_ms{0};

// A background worker may yield the cores to the threads serving calls: its niceness is raised by
// `nicer` (SessionOptions::background_nice; Linux: per thread, and the threads a compile starts,
// e.g. a split module's parts, inherit it). A worker competing with calls for a core then gets a
// small share of it: the calls run interpreted at about the speed they would without it, and the
// kernels come when a core is idle. run_all's threads keep the caller's priority: it waits.
void lower_priority([[maybe_unused]] int nicer) {
#ifdef __linux__
  if (nicer <= 0) return;
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (errno == 0) setpriority(PRIO_PROCESS, tid, std::min(now + nicer, 19));
#endif
}
}  // namespace

void BackgroundCompiler::delay_jobs_for_testing(int ms) { job_delay_ms = ms; }

BackgroundCompiler::BackgroundCompiler(int workers, int nice)
    : workers_(std::max(workers, 1)), nice_(nice) {}

BackgroundCompiler::~BackgroundCompiler() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::vector<BackgroundCompiler::Done> BackgroundCompiler::run_all(std::vector<Queued> jobs,
                                                                  int threads) {
  std::vector<Done> done;
  if (jobs.size() <= 1 || threads <= 1) {
    for (Queued& q : jobs) done.push_back(run_one(q));
    return done;
  }
  // The caller is one of the threads: it takes jobs from the queue with the helpers, and runs all
  // of them itself when no helper could be started.
  BackgroundCompiler pool(std::min(threads, static_cast<int>(jobs.size())) - 1);
  pool.background_ = false;  // (the caller waits: its priority; no test delay)
  for (Queued& q : jobs) pool.submit(q.id, std::move(q.job));
  pool.work(/*until_empty=*/true);
  pool.wait_idle();
  return pool.take_done();
}

void BackgroundCompiler::submit(uint64_t id, Job job) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(Queued{id, std::move(job)});
    const size_t wanted = static_cast<size_t>(running_) + queue_.size();
    std::string why;
    if (threads_.size() < static_cast<size_t>(workers_) && threads_.size() < wanted &&
        !try_start_thread(
            threads_, [this] { work(false); }, &why) &&
        threads_.empty() && background_) {
      // No thread to run it, now or later (run_all's caller runs its own): the job ends with
      // that error, and its region stays interpreted (a later plan tries again).
      SG_LOG(1) << "background compiler: no thread could be started (" << why
                << "); the region stays interpreted";
      queue_.pop_back();
      done_.push_back(
          Done{id, {}, "compiling failed: no compiler thread could be started: " + why});
      has_done_ = true;
    }
  }
  wake_.notify_one();
}

void BackgroundCompiler::set_workers(int workers) {
  std::lock_guard lock(mu_);
  workers_ = std::max(workers, 1);
}

void BackgroundCompiler::drop_unless(const std::function<bool(uint64_t)>& live) {
  std::lock_guard lock(mu_);
  std::erase_if(queue_, [&](const Queued& q) { return !live(q.id); });
  if (queue_.empty() && running_ == 0) idle_.notify_all();
}

std::vector<BackgroundCompiler::Done> BackgroundCompiler::take_done() {
  std::lock_guard lock(mu_);
  has_done_ = false;
  return std::exchange(done_, {});
}

void BackgroundCompiler::wait_idle() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

bool BackgroundCompiler::busy() const {
  std::lock_guard lock(mu_);
  return !queue_.empty() || running_ > 0;
}

double BackgroundCompiler::busy_ms() const {
  std::lock_guard lock(mu_);
  Clock::duration d = busy_;
  if (running_ > 0) d += Clock::now() - busy_since_;
  return std::chrono::duration<double, std::milli>(d).count();
}

BackgroundCompiler::Done BackgroundCompiler::run_one(Queued& q) {
  Done d{q.id, {}, {}};
  try {
    d.compiled = q.job();
  } catch (const Error& e) {
    d.error = e.what();
  } catch (const std::exception& e) {  // e.g. out of memory: the region stays interpreted
    d.error = std::string("compiling failed: ") + e.what();
  }
  return d;
}

void BackgroundCompiler::work(bool until_empty) {
  if (background_) lower_priority(nice_);  // (run_all's pool, the only until_empty, is not)
  std::unique_lock lock(mu_);
  for (;;) {
    if (until_empty && queue_.empty()) return;
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Queued q = std::move(queue_.front());
    queue_.pop_front();
    if (running_++ == 0) busy_since_ = Clock::now();
    lock.unlock();
    if (const int ms = job_delay_ms.load(); ms > 0 && background_)
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    Done d = run_one(q);
    lock.lock();
    done_.push_back(std::move(d));
    has_done_ = true;
    if (--running_ == 0) busy_ += Clock::now() - busy_since_;
    if (queue_.empty() && running_ == 0) idle_.notify_all();
  }
}

}  // namespace sgraph
