// Helper threads started where the system lets them start. A thread the system will not start
// (a process or container thread limit, no memory for its stack: std::system_error) is not an
// error for work that the caller can do itself: try_start_thread says so, and the caller runs
// that share of the work on its own thread. (A std::thread left joinable while an exception
// unwinds would call std::terminate; a job queued for a thread that never started would wait
// forever.)
//
//   std::vector<std::thread> helpers;
//   int started = 1;
//   while (started < n && try_start_thread(helpers, [&, p = started] { part(p); })) ++started;
//   part(0);
//   for (int p = started; p < n; ++p) part(p);   // the parts no thread took
//   for (std::thread& t : helpers) t.join();
#pragma once

#include <exception>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace sgraph {

namespace detail {
// Consumes one failure injected by fail_thread_starts_for_testing: true when this start fails.
bool injected_thread_start_failure();
}  // namespace detail

// Starts a thread running `f` at the end of `threads`: true, or false with nothing started (and
// the reason in *why when given).
template <class F>
bool try_start_thread(std::vector<std::thread>& threads, F&& f, std::string* why = nullptr) {
  try {
    if (detail::injected_thread_start_failure())
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                              "a thread start failed on purpose (test)");
    threads.emplace_back(std::forward<F>(f));
    return true;
  } catch (const std::exception& e) {  // std::system_error, or std::bad_alloc growing `threads`
    if (why) *why = e.what();
    return false;
  }
}

// Tests: the next `n` thread starts through try_start_thread fail (0: none).
void fail_thread_starts_for_testing(int n);

}  // namespace sgraph
