// The on-disk kernel cache (DiskCacheOptions, SessionOptions::cache_dir): a second JIT (as a second
// process would) loads what the first compiled and computes the same; damaged, foreign and renamed
// entries are ignored and rewritten; an unwritable directory only costs the caching; the directory
// stays within its bound, least recently used first; JITs sharing a directory concurrently; a
// Session loads what another compiled, whatever its warm-up's timing.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "jit/disk_cache.h"
#include "jit/region_test_util.h"
#include "runtime/op_profiler.h"
#include "runtime/warmup_record.h"

using namespace sgraph;
using namespace sgraph::jit;
using namespace sgraph::test::region;
namespace fs = std::filesystem;
using test::TempDir;

namespace {

// A small elementwise graph; `k` changes its code (a constant), so each k is another kernel.
Graph graph_of(float k) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {3, 37});
  ValueId c = b.constant("c", Tensor::from<float>({1}, {k}));
  b.output(b.add(b.mul(b.tanh(x), c), x), "y");
  return b.build();
}

std::vector<Tensor> feeds() { return {random_of(DType::f32, {3, 37}, 7, -2, 2)}; }

// Compiles graph_of(k) under a fixed name (so the same k is the same code), runs it, checks it
// against the interpreter, and says whether the kernel came from the disk cache.
bool run_checked(Jit& jit, float k) {
  const RegionRun run = run_region(graph_of(k), feeds(), jit, 1, "cached_region");
  for (size_t i = 0; i < run.got.size(); ++i)
    test::check_tensors_close(run.got[i], run.want[i], 1e-5, 1e-6);
  return run.compiled.kernel.from_disk;
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// g carrying `record` with every op's warm-up times multiplied by `scale`: the same warm-up as
// timed on a machine more or less loaded.
Graph retimed(const Graph& g, const std::string& record, double scale) {
  ShapeTracker tracker(g);
  OpProfiler prof(g);
  load_warmup_record(g, record, tracker, prof);
  std::vector<std::vector<int64_t>> samples = prof.samples();
  for (std::vector<int64_t>& s : samples)
    for (int64_t& ns : s) ns = static_cast<int64_t>(static_cast<double>(ns) * scale);
  std::vector<OpProfile> figures;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    figures.push_back(prof.profile(static_cast<int32_t>(i)));
  prof.restore(std::move(samples), figures);
  Graph out = g;
  out.metadata[kWarmupRecordKey] =
      save_warmup_record(g, tracker, prof, test::node_names(g), test::value_names(g));
  return out;
}

}  // namespace

TEST_CASE("JIT disk cache: a second JIT loads the kernel instead of compiling it") {
  TempDir dir;
  {
    auto jit = Jit::create({dir.path.string()});
    CHECK_FALSE(run_checked(*jit, 2.0f));
  }
  REQUIRE(test::cache_entries(dir.path).size() == 1);
  auto jit = Jit::create({dir.path.string()});
  CHECK(run_checked(*jit, 2.0f));        // loaded, and it computes what the interpreter does
  CHECK_FALSE(run_checked(*jit, 3.0f));  // other code: compiled, and cached too
  CHECK(test::cache_entries(dir.path).size() == 2);
  auto no_cache = Jit::create();
  CHECK_FALSE(run_checked(*no_cache, 2.0f));
}

TEST_CASE("JIT disk cache: damaged, foreign and renamed entries are ignored and rewritten") {
  TempDir dir;
  {
    auto jit = Jit::create({dir.path.string()});
    run_checked(*jit, 2.0f);
  }
  {
    TempDir other;  // another kernel's entry, to rename over this one's
    auto jit = Jit::create({other.path.string()});
    run_checked(*jit, 5.0f);
    REQUIRE(test::cache_entries(other.path).size() == 1);
    fs::copy_file(test::cache_entries(other.path)[0], dir.path / "other.bin");
  }
  REQUIRE(test::cache_entries(dir.path).size() == 1);
  const fs::path entry = test::cache_entries(dir.path)[0];
  const std::string good = test::read_file(entry);
  const std::string foreign = test::read_file(dir.path / "other.bin");
  std::string flipped = good;
  flipped[flipped.size() - 40] ^= 0x5a;  // a byte of the object
  std::string header_only = good.substr(0, good.find('\n', good.find('\n') + 1) + 1);
  const std::vector<std::pair<const char*, std::string>> damages = {
      {"a flipped byte in the object", flipped},
      {"truncated to half", good.substr(0, good.size() / 2)},
      {"truncated after the key", header_only},
      {"one byte appended", good + "x"},
      {"empty", ""},
      {"not an entry", std::string(4096, '\x7f')},
      {"another kernel's entry renamed to this key", foreign},
  };
  for (const auto& [what, bytes] : damages) {
    INFO(what);
    write_file(entry, bytes);
    auto jit = Jit::create({dir.path.string()});
    CHECK_FALSE(run_checked(*jit, 2.0f));   // ignored: compiled, correct
    CHECK(test::read_file(entry) == good);  // and rewritten
    auto again = Jit::create({dir.path.string()});
    CHECK(run_checked(*again, 2.0f));
  }
}

TEST_CASE("JIT disk cache: a directory that cannot be written costs only the caching") {
  TempDir dir;
  fs::create_directories(dir.path);
  write_file(dir.path / "file", "not a directory");
  auto jit = Jit::create({(dir.path / "file" / "cache").string()});
  CHECK_FALSE(run_checked(*jit, 2.0f));
  CHECK_FALSE(run_checked(*jit, 3.0f));
  auto again = Jit::create({(dir.path / "file" / "cache").string()});
  CHECK_FALSE(run_checked(*again, 2.0f));
}

TEST_CASE("JIT disk cache: the least recently used entries go beyond the bound") {
  TempDir probe;
  int64_t entry_bytes = 0;
  {
    auto jit = Jit::create({probe.path.string()});
    run_checked(*jit, 2.0f);
    entry_bytes = static_cast<int64_t>(fs::file_size(test::cache_entries(probe.path).at(0)));
  }
  // Room for two entries (the kernels differ only in a constant, so in size by a few bytes).
  TempDir dir;
  const DiskCacheOptions two{dir.path.string(), 2 * entry_bytes + entry_bytes / 2};
  // Which kernels the directory holds, each probed in a copy of it (a miss writes an entry).
  const auto kernels_cached = [&] {
    std::set<float> ks;
    for (float k : {2.0f, 3.0f, 4.0f, 6.0f}) {
      TempDir copy;
      fs::copy(dir.path, copy.path);
      auto jit = Jit::create({copy.path.string()});
      if (run_checked(*jit, k)) ks.insert(k);
    }
    return ks;
  };
  const auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  for (float k : {2.0f, 3.0f, 4.0f}) {
    auto jit = Jit::create(two);
    run_checked(*jit, k);
    pause();
  }
  CHECK(test::cache_entries(dir.path).size() == 2);
  CHECK(kernels_cached() == std::set<float>{3.0f, 4.0f});  // 2 was the oldest
  pause();
  {
    auto jit = Jit::create(two);
    CHECK(run_checked(*jit, 3.0f));  // a hit makes 3 the most recently used
  }
  pause();
  {
    auto jit = Jit::create(two);
    CHECK_FALSE(run_checked(*jit, 6.0f));
  }
  CHECK(kernels_cached() == std::set<float>{3.0f, 6.0f});  // 4 went, not 3
}

TEST_CASE(
    "JIT disk cache: the directory is listed at the first store and when the bound may pass") {
  // Listing costs a stat per entry under the JIT's lock: once, then only when the bytes known
  // at the last listing plus those stored since would pass the bound, or every kStoresPerScan.
  TempDir dir;
  const std::string object(4000, 'x');
  const auto key = [](int i) { return "k" + std::to_string(i); };
  DiskCache roomy(dir.path.string(), int64_t{1} << 30);
  for (int i = 0; i < 20; ++i) roomy.store(key(i), "sym", {object});
  CHECK(roomy.scans() == 1);
  REQUIRE(test::cache_entries(dir.path).size() == 20);
  const auto entry = static_cast<int64_t>(fs::file_size(test::cache_entries(dir.path).at(0)));
  // Room for 5: the first store lists the 21 entries and keeps 5; each later one that would pass
  // the bound lists again, so the directory never holds more than 5 after a store.
  DiskCache five(dir.path.string(), 5 * entry + entry / 2);
  for (int i = 20; i < 30; ++i) {
    five.store(key(i), "sym", {object});
    CHECK(test::cache_entries(dir.path).size() <= 5);
  }
  CHECK(five.scans() >= 2);
  CHECK(five.scans() <= 10);
  // Entries another writer adds are counted at the next listing: after that many stores of this
  // one's own at most (here: as soon as its own would pass the bound by its count).
  DiskCache other(dir.path.string(), int64_t{1} << 30);
  for (int i = 30; i < 50; ++i) other.store(key(i), "sym", {object});
  REQUIRE(test::cache_entries(dir.path).size() == 25);
  for (int i = 50; i < 50 + DiskCache::kStoresPerScan; ++i) five.store(key(i), "sym", {object});
  CHECK(test::cache_entries(dir.path).size() <= 5);
}

TEST_CASE("JIT disk cache: JITs filling one directory concurrently") {
  TempDir dir;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      try {
        auto jit = Jit::create({dir.path.string()});
        for (int i = 0; i < 6; ++i) run_checked(*jit, static_cast<float>((t + i) % 6));
      } catch (...) {
        ++failures;
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(test::cache_entries(dir.path).size() == 6);
  size_t leftovers = 0;  // no temporary file is left behind
  for (const fs::directory_entry& e : fs::directory_iterator(dir.path))
    leftovers += e.path().extension() != ".sgk";
  CHECK(leftovers == 0);
  auto jit = Jit::create({dir.path.string()});
  for (int k = 0; k < 6; ++k) CHECK(run_checked(*jit, static_cast<float>(k)));
}

TEST_CASE("Session: a second Session with the same cache_dir compiles nothing") {
  TempDir dir;
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {4, 64});
  ValueId w = b.constant("w", random_of(DType::f32, {64, 16}, 3, -1, 1));
  b.output(b.relu(b.add(b.matmul(b.tanh(x), w), b.constant("b", Tensor::from<float>({1}, {0.5f})))),
           "y");
  const Graph g = b.build();
  const std::vector<Tensor> in = {random_of(DType::f32, {4, 64}, 11, -2, 2)};
  SessionOptions o;
  o.cache_dir = dir.path.string();
  o.threads = 2;
  std::vector<Tensor> first;
  {
    Session s(g, o);
    for (int i = 0; i < 4; ++i) first = s.run(in);
    CHECK(s.report().compilations == 1);
    CHECK(s.report().disk_loads == 0);
  }
  Session s(g, o);
  std::vector<Tensor> second;
  for (int i = 0; i < 4; ++i) second = s.run(in);
  const Report r = s.report();
  CHECK(r.compilations == 0);
  CHECK(r.disk_loads == 1);
  REQUIRE(r.regions.size() == 1);
  CHECK(r.regions[0].disk_hit);
  CHECK(r.regions[0].kernel_calls == 1);
  check_same(second.at(0), first.at(0));
  CHECK(test::contains(r.to_text(), "loaded from the disk cache"));
}

TEST_CASE("Session: replicas whose warm-ups timed a region apart share its kernel on disk") {
  // A region with a nest big enough to be split over threads: its kernel runs on 1 or 2 threads
  // as its profiled time says, but its code (the cache key) must be the same either way.
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {512, 1024});
  b.output(b.add(b.mul(b.tanh(x), b.constant("c", Tensor::from<float>({1}, {0.75f}))), x), "y");
  const Graph g = b.build();
  const std::vector<Tensor> in = {random_of(DType::f32, {512, 1024}, 13, -2, 2)};
  std::string record;
  {
    SessionOptions w;
    w.jit = false;
    Session s(g, w);
    for (int i = 0; i < w.warmup_runs; ++i) s.run(in);
    REQUIRE(s.planned());
    record = s.warmup_record(test::node_names(g), test::value_names(g));
  }
  TempDir dir;
  SessionOptions o;
  o.cache_dir = dir.path.string();
  o.threads = 2;
  Tensor first;
  {  // (a Session of its own: while it lives, the next would share its kernel in memory)
    Session quiet(retimed(g, record, 1e-4), o);  // profiled at microseconds: the calling thread
    first = quiet.run(in).at(0);
    const Report q = quiet.report();
    CHECK(q.compilations == 1);
    REQUIRE(q.regions.size() == 1);
    CHECK(q.regions[0].threads == 1);
  }
  Session loaded(retimed(g, record, 1e4), o);  // profiled at seconds: two threads
  const Tensor second = loaded.run(in).at(0);
  const Report l = loaded.report();
  CHECK(l.compilations == 0);
  CHECK(l.disk_loads == 1);
  REQUIRE(l.regions.size() == 1);
  CHECK(l.regions[0].disk_hit);
  CHECK(l.regions[0].threads == 2);
  CHECK(l.regions[0].kernel_calls == 1);
  SessionOptions interp;
  interp.interpret_only = true;
  Session ref(g, interp);
  const Tensor want = ref.run(in).at(0);
  test::check_tensors_close(first, want, 1e-5, 1e-6);
  test::check_tensors_close(second, want, 1e-5, 1e-6);
}
