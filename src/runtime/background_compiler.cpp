// BackgroundCompiler (see background_compiler.h): one worker thread and a queue.
#include "runtime/background_compiler.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "sgraph/error.h"

namespace sgraph {
namespace {
std::atomic<int> job_delay_ms{0};
}  // namespace

void BackgroundCompiler::delay_jobs_for_testing(int ms) { job_delay_ms = ms; }

BackgroundCompiler::~BackgroundCompiler() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BackgroundCompiler::submit(uint64_t id, Job job) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(Queued{id, std::move(job)});
    if (!thread_.joinable()) thread_ = std::thread([this] { work(); });
  }
  wake_.notify_one();
}

void BackgroundCompiler::drop_unless(const std::function<bool(uint64_t)>& live) {
  std::lock_guard lock(mu_);
  std::erase_if(queue_, [&](const Queued& q) { return !live(q.id); });
  if (queue_.empty() && !running_) idle_.notify_all();
}

std::vector<BackgroundCompiler::Done> BackgroundCompiler::take_done() {
  std::lock_guard lock(mu_);
  has_done_ = false;
  return std::exchange(done_, {});
}

void BackgroundCompiler::wait_idle() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return queue_.empty() && !running_; });
}

bool BackgroundCompiler::busy() const {
  std::lock_guard lock(mu_);
  return !queue_.empty() || running_;
}

void BackgroundCompiler::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Queued q = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    Done d{q.id, {}, {}};
    if (const int ms = job_delay_ms.load(); ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    try {
      d.compiled = q.job();
    } catch (const Error& e) {
      d.error = e.what();
    } catch (const std::exception& e) {  // e.g. out of memory: the region stays interpreted
      d.error = std::string("compiling failed: ") + e.what();
    }
    lock.lock();
    done_.push_back(std::move(d));
    has_done_ = true;
    running_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace sgraph
