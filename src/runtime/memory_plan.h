// Memory plan: places buffers of known sizes and lifetimes in one arena, so that a compiled plan
// allocates once and reuses the same memory on every call.
//
//   std::vector<BufferUse> uses = {{.bytes = 4096, .first = 0, .last = 2},
//                                  {.bytes = 4096, .first = 3, .last = 4}};
//   MemoryPlan p = plan_memory(uses);  // both at offset 0; p.arena_bytes == 4096
//
// Lifetimes are inclusive step intervals: a buffer is live from the step that writes it to the
// last step that reads it. Two buffers whose intervals share a step never share a byte. Sizes are
// rounded up to kArenaAlign, so every offset is a multiple of it. The placement is greedy by size
// (largest first, each at the lowest offset that fits beside the already placed buffers live at
// the same time), which is near-optimal on the interval sets of real graphs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sgraph {

inline constexpr int64_t kArenaAlign = 64;

struct BufferUse {
  int64_t bytes = 0;
  int32_t first = 0, last = 0;  // steps, inclusive; first <= last
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // per buffer, into the arena
  int64_t arena_bytes = 0;       // the arena's size: the plan's peak
  int64_t unshared_bytes = 0;    // the sum of the (rounded) buffer sizes: the arena without sharing
};

MemoryPlan plan_memory(std::span<const BufferUse> buffers);

}  // namespace sgraph
