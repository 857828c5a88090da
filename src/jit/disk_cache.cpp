// The on-disk kernel cache (see DiskCache in jit_impl.h). An entry is one file, <key>.sgk:
//
//   sgraph-kernel 2\n <key>\n <symbol>\n <objects>\n
//   then per object: <its bytes>\n <its SHA-256, hex>\n
//   then the objects, one after the other
//
// (a kernel compiled in parts on several threads is several objects, linked together).
// Every field is checked before the object reaches the linker: an entry that is truncated, whose
// hash does not match, or that was written for another key (a renamed file) is ignored, and the
// kernel is compiled and written again. Writes go to a temporary file in the same directory that
// is then renamed over the entry, so a reader sees a whole entry or none, and processes sharing the
// directory can fill it concurrently (both write the same bytes). The directory is kept under its
// byte bound by removing the least recently used entries (a hit refreshes an entry's time).
#include <llvm/ADT/StringExtras.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/Support/SHA256.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <system_error>

#include "ir/debug.h"
#include "jit/jit_impl.h"

namespace sgraph::jit {
namespace fs = std::filesystem;
namespace {

constexpr const char* kMagic = "sgraph-kernel 2";
constexpr const char* kSuffix = ".sgk";
constexpr int64_t kMaxEntryBytes = int64_t{256} << 20;

std::string sha256_hex(std::string_view bytes) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(bytes)), true);
}

// The next '\n'-terminated field of `s` from `pos`, or false when there is none.
bool field(const std::string& s, size_t& pos, std::string& out) {
  const size_t end = s.find('\n', pos);
  if (end == std::string::npos) return false;
  out = s.substr(pos, end - pos);
  pos = end + 1;
  return true;
}

// A field holding a whole number of at most `digits` decimal digits.
bool count_field(const std::string& s, size_t& pos, size_t digits, size_t& out) {
  std::string f;
  if (!field(s, pos, f) || f.empty() || f.size() > digits ||
      f.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::stoull(f);
  return true;
}

}  // namespace

void ObjectSink::notifyObjectCompiled(const llvm::Module*, llvm::MemoryBufferRef obj) {
  last = obj.getBuffer().str();
}

llvm::orc::LLJITBuilder::CompileFunctionCreator ObjectSink::compiler() {
  return [this](llvm::orc::JITTargetMachineBuilder b)
             -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
    jtmb = b;
    auto tm = b.createTargetMachine();
    if (!tm) return tm.takeError();
    return std::make_unique<llvm::orc::TMOwningSimpleCompiler>(std::move(*tm), this);
  };
}

DiskCache::DiskCache(std::string dir, int64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {}

fs::path DiskCache::path_of(const std::string& key) const {
  return fs::path(dir_) / (key + kSuffix);
}

std::optional<DiskCache::Entry> DiskCache::load(const std::string& key) {
  const fs::path path = path_of(key);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return std::nullopt;  // no entry
  const auto ignore = [&](const char* why) -> std::optional<Entry> {
    SG_LOG(1) << "kernel cache: ignoring " << path.string() << ": " << why;
    return std::nullopt;
  };
  if (static_cast<int64_t>(size) > kMaxEntryBytes) return ignore("too large");
  std::ifstream in(path, std::ios::binary);
  std::string s(size, '\0');
  if (!in.read(s.data(), static_cast<std::streamsize>(size))) return ignore("unreadable");
  size_t pos = 0;
  std::string magic, stored_key, symbol;
  size_t count = 0;
  if (!field(s, pos, magic) || magic != kMagic) return ignore("not a kernel cache entry");
  if (!field(s, pos, stored_key) || stored_key != key) return ignore("written for another key");
  if (!field(s, pos, symbol) || symbol.empty()) return ignore("no symbol");
  if (!count_field(s, pos, 2, count) || count < 1) return ignore("truncated header");
  std::vector<std::pair<size_t, std::string>> parts(count);
  size_t total = 0;
  for (auto& [bytes, hash] : parts) {
    if (!count_field(s, pos, 10, bytes) || !field(s, pos, hash)) return ignore("truncated header");
    total += bytes;
  }
  if (total != s.size() - pos) return ignore("truncated or padded object");
  Entry e{std::move(symbol), {}};
  for (const auto& [bytes, hash] : parts) {
    e.objects.push_back(s.substr(pos, bytes));
    pos += bytes;
    if (sha256_hex(e.objects.back()) != hash) return ignore("an object's hash does not match");
  }
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // recently used
  return e;
}

void DiskCache::store(const std::string& key, const std::string& symbol,
                      const std::vector<std::string>& objects) {
  if (unwritable_) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  static std::atomic<uint64_t> serial{0};
  const fs::path tmp = fs::path(dir_) / (key + "." + std::to_string(getpid()) + "." +
                                         std::to_string(++serial) + ".tmp");
  int64_t bytes = 0;  // the entry's size
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kMagic << '\n' << key << '\n' << symbol << '\n' << objects.size() << '\n';
    for (const std::string& object : objects)
      out << object.size() << '\n' << sha256_hex(object) << '\n';
    for (const std::string& object : objects)
      out.write(object.data(), static_cast<std::streamsize>(object.size()));
    bytes = static_cast<int64_t>(out.tellp());
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      unwritable_ = true;
      SG_LOG(0) << "kernel cache: cannot write to " << dir_
                << "; kernels are compiled but not cached";
      return;
    }
  }
  fs::rename(tmp, path_of(key), ec);
  if (ec) {
    fs::remove(tmp, ec);
    return;
  }
  // (An entry written over an older one of the same key counts twice: the listing comes sooner.)
  if (known_bytes_ < 0 || known_bytes_ + bytes > max_bytes_ ||
      ++stores_since_scan_ >= kStoresPerScan)
    evict();
  else
    known_bytes_ += bytes;
}

void DiskCache::evict() {
  ++scans_;
  stores_since_scan_ = 0;
  std::error_code ec;
  struct File {
    fs::file_time_type time;
    fs::path path;
    int64_t bytes;
  };
  std::vector<File> files;
  int64_t total = 0;
  for (const fs::directory_entry& d : fs::directory_iterator(dir_, ec)) {
    if (d.path().extension() != kSuffix) continue;
    std::error_code e1, e2;
    const auto bytes = static_cast<int64_t>(d.file_size(e1));
    const auto time = d.last_write_time(e2);
    if (e1 || e2) continue;  // removed meanwhile by another process
    files.push_back({time, d.path(), bytes});
    total += bytes;
  }
  if (total > max_bytes_) {
    std::sort(files.begin(), files.end(),
              [](const File& a, const File& b) { return a.time < b.time; });
    for (const File& f : files) {
      if (total <= max_bytes_) break;
      if (fs::remove(f.path, ec)) total -= f.bytes;
    }
  }
  known_bytes_ = total;
}

}  // namespace sgraph::jit
