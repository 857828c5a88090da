// The on-disk kernel cache's interface (disk_cache.cpp), apart from jit_impl.h so that it names
// no LLVM type and tests can reach it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sgraph::jit {

// disk_cache.cpp. Compiled kernels' object code in a directory shared by processes, keyed by
// KernelCache::key_of (see the file's comment for the format and its checks). Not thread-safe
// (Jit's mutex guards it).
class DiskCache {
 public:
  DiskCache(std::string dir, int64_t max_bytes);
  struct Entry {
    std::string symbol;                // the kernel's name in the objects
    std::vector<std::string> objects;  // relocatable object files, linked together
  };
  // The entry for `key` when there is a valid one (refreshing its time); nullopt otherwise.
  std::optional<Entry> load(const std::string& key);
  // Writes the entry atomically, then removes least recently used entries beyond the bound. A
  // directory that cannot be written is reported once and then left alone.
  //
  // The bound is checked by listing the directory (a stat per entry), which with a few thousand
  // entries, or on a shared volume, costs more than a small kernel's compile, under the JIT's lock.
  // So the directory is listed at the first store, then only when the bytes it held then plus
  // those stored since would pass the bound, or after kStoresPerScan stores (other processes
  // sharing it write too: their entries are counted at the next listing).
  void store(const std::string& key, const std::string& symbol,
             const std::vector<std::string>& objects);
  static constexpr int kStoresPerScan = 64;
  int scans() const { return scans_; }  // listings so far (tests)

 private:
  std::filesystem::path path_of(const std::string& key) const;
  void evict();
  std::string dir_;
  int64_t max_bytes_;
  bool unwritable_ = false;
  int64_t known_bytes_ = -1;  // at the last listing, plus the entries stored since (-1: none yet)
  int stores_since_scan_ = 0;
  int scans_ = 0;
};

}  // namespace sgraph::jit
