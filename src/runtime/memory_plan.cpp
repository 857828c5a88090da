// Memory plan: greedy-by-size placement of buffers with known lifetimes in one arena.
#include "runtime/memory_plan.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "sgraph/error.h"

namespace sgraph {

namespace {
int64_t round_up(int64_t bytes) { return (bytes + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }
}  // namespace

MemoryPlan plan_memory(std::span<const BufferUse> buffers) {
  const size_t n = buffers.size();
  MemoryPlan plan;
  plan.offsets.assign(n, 0);
  std::vector<int64_t> size(n);
  for (size_t i = 0; i < n; ++i) {
    const BufferUse& b = buffers[i];
    SG_ASSERT(b.bytes >= 0 && b.first >= 0 && b.first <= b.last)
        << "buffer " << i << ": " << b.bytes << " bytes live over [" << b.first << ", " << b.last
        << "]";
    size[i] = round_up(b.bytes);
    plan.unshared_bytes += size[i];
  }
  // Largest first; ties by first use, then index, so the plan is deterministic.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (size[a] != size[b]) return size[a] > size[b];
    if (buffers[a].first != buffers[b].first) return buffers[a].first < buffers[b].first;
    return a < b;
  });
  // The placed buffers, indexed by blocks of steps: a buffer is listed in every block its
  // lifetime touches, so finding the ones live at the same time as another reads a few short
  // lists instead of every placed buffer.
  constexpr int32_t kBlock = 32;
  int32_t steps = 0;
  for (const BufferUse& b : buffers) steps = std::max(steps, b.last + 1);
  std::vector<std::vector<uint32_t>> blocks(static_cast<size_t>(steps / kBlock + 1));
  std::vector<size_t> seen(n, SIZE_MAX);  // the buffer whose neighbours were last gathered
  std::vector<uint32_t> near;
  for (size_t i : order) {
    if (size[i] == 0) continue;  // takes no space: offset 0
    const BufferUse& b = buffers[i];
    near.clear();
    for (int32_t k = b.first / kBlock; k <= b.last / kBlock; ++k)
      for (uint32_t p : blocks[k])
        if (seen[p] != i && buffers[p].first <= b.last && b.first <= buffers[p].last) {
          seen[p] = i;
          near.push_back(p);
        }
    std::sort(near.begin(), near.end(),
              [&](uint32_t x, uint32_t y) { return plan.offsets[x] < plan.offsets[y]; });
    // The lowest offset where the buffer fits between those live at the same time.
    int64_t at = 0;
    for (uint32_t p : near) {
      if (plan.offsets[p] >= at + size[i]) break;
      at = std::max(at, plan.offsets[p] + size[p]);
    }
    plan.offsets[i] = at;
    plan.arena_bytes = std::max(plan.arena_bytes, at + size[i]);
    for (int32_t k = b.first / kBlock; k <= b.last / kBlock; ++k)
      blocks[k].push_back(static_cast<uint32_t>(i));
  }
  return plan;
}

}  // namespace sgraph
