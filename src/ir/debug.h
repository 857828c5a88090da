// Debug logging by levels, from the SGRAPH_DEBUG environment variable (read once):
//   1 phases (warm-up, plan, ...), 2 regions, 3 generated IR, 4 per-kernel timing.
//   SG_LOG(1) << "planned " << n << " regions";   // one line on stderr, prefixed "sgraph: "
#pragma once

#include <iostream>
#include <sstream>

namespace sgraph {

int debug_level();

namespace detail {
class LogLine {
 public:
  ~LogLine() { std::cerr << "sgraph: " << out_.str() << "\n"; }
  template <class T>
  LogLine& operator<<(const T& v) {
    out_ << v;
    return *this;
  }

 private:
  std::ostringstream out_;
};
}  // namespace detail
}  // namespace sgraph

#define SG_LOG(level)                      \
  if (::sgraph::debug_level() < (level)) { \
  } else                                   \
    ::sgraph::detail::LogLine()
