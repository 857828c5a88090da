#include "ir/debug.h"

#include <cstdlib>

namespace sgraph {

int debug_level() {
  static const int level = [] {
    const char* v = std::getenv("SGRAPH_DEBUG");
    return v ? std::atoi(v) : 0;
  }();
  return level;
}

}  // namespace sgraph
