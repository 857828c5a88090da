// Differential fuzzing of the JIT while it serves: random graphs whose inputs have symbolic dims
// (n, m) are warmed up at one size of the symbols, then served at other sizes and at the
// warm-up's again, each call compared with the interpreter on shapes and values. Besides
// elementwise, movement and reduction ops with multi-element constant operands (Pad's pads,
// Slice's starts/ends/axes/steps, Gather's indices, Reshape's and Expand's shapes, reduction
// axes), the graphs hold what a kernel specialised on one call's shapes must not get wrong:
//   - shapes computed from values: Shape(u) -> Gather -> (i64 arithmetic) -> Concat with
//     constants -> the shape operand of Expand, Reshape or ConstantOfShape, or a Slice's ends;
//   - twin chains: one short chain of ops built twice from the same value, with the same shapes
//     but other constants (pads, slice parameters, gather indices, reduction axes, constant
//     tensors; a MatMul's B is a constant in one twin and may be a value computed per call in the
//     other). Twins start at a graph input or at an op the JIT does not compile (an identity
//     Einsum, ReduceLogSumExp, CastLike), so each is a region of its own;
//   - convs of the kind Winograd's F(2,3) takes, over symbolic batches, heights and widths (one
//     graph in two has Winograd wherever it fits, ForcedPaths).
// One graph in five is served per signature (CompileMode::per_signature) instead. Three in ten
// run every region as a parallel kernel (ForcedThreads, fuzz_util.h); one in ten is served twice,
// the second time by a Session whose kernels come from the first one's disk cache.
// Each graph comes from its own seed (kSeed + graph index, see fuzz_util.h for the environment
// overrides); a failure names the seed and prints the sizes, the calls, the graph and the report.
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "jit/serving_gen.h"
#include "test_util.h"

using namespace sgraph;
using namespace sgraph::fuzz;
using namespace sgraph::fuzz::serving;

namespace test_jit_fuzz_serving {  // this file's own names (the tests build as unity sources)

namespace {
constexpr uint32_t kSeed = 20250301;
constexpr int kGraphs = 200;  // by default (SGRAPH_FUZZ_GRAPHS)

std::string sizes_str(const ServeGen& gen) {
  std::string s;
  for (int sym = 0; sym < 2; ++sym) {
    s += std::string(sym ? ", " : "") + kSymbols[sym] + " =";
    for (int64_t v : gen.sizes[sym]) s += " " + std::to_string(v);
  }
  std::string order;
  for (int k = 0; k < kScenarios; ++k) order += " " + std::to_string(k);
  return s + " (scenarios" + order + ")";
}

}  // namespace

TEST_CASE("JIT fuzz: symbolic dims served at other sizes, compiled vs interpreted") {
  const auto start = std::chrono::steady_clock::now();
  const int graphs = fuzz_graphs(kGraphs);
  const uint32_t first_seed = fuzz_seed(kSeed);
  int failed = 0, failed_shape = 0, failed_with_cache_hits = 0, twins = 0, computed = 0;
  int forced_graphs = 0, disk_graphs = 0, folded_graphs = 0, cumsum_graphs = 0, conv_graphs = 0;
  int64_t disk_hits = 0;
  int64_t calls = 0, kernel_calls = 0, guard_misses = 0, replans = 0, compiled = 0, hits = 0;
  int64_t dynamic = 0, dynamic_calls = 0, merged = 0;
  for (int gi = 0; gi < graphs; ++gi) {
    const uint32_t seed = first_seed + static_cast<uint32_t>(gi);
    ServeGen gen(seed);
    const std::string bad = test::error_of([&] { gen.make(); });
    CHECK_MESSAGE(bad.empty(),
                  "FAILED seed " << seed << ": the generator made an invalid graph: " << bad << "\n"
                                 << gen.partial());
    if (!bad.empty()) {
      ++failed;
      continue;
    }
    twins += gen.twins;
    computed += gen.computed_shapes;
    cumsum_graphs += gen.cumsums > 0;
    conv_graphs += gen.convs > 0;
    const ForcedThreads forced(seed);
    const ForcedPaths paths(seed);
    forced_graphs += forced.threads() > 0;
    // Warm-up at scenario 0 (maybe twice, or once more at 1: what changes is then in dynamic
    // regions or none), then serving: another size, the warm-up's again, then any. One graph in
    // five is served per signature instead (compiled whole for each new set of input shapes). Or
    // warm-up at 0, 1 and 2: the changing dims are symbols, the changed ops compiled into dynamic
    // regions, and every later call binds new values of them (3 is a size the warm-up never saw).
    std::vector<int> order = {0};
    if (gen.chance(0.35))
      order = {0, 1, 2};
    else if (gen.chance(0.4))
      order.push_back(gen.chance(0.5) ? 0 : 1);
    const int warmup = static_cast<int>(order.size());
    order.insert(order.end(), {1, 0});
    if (warmup == 3) order.push_back(3);
    for (int i = 0; i < 4; ++i) order.push_back(gen.uniform(0, kScenarios - 1));
    SessionOptions opt{.warmup_runs = warmup,
                       .min_region_ops = gen.uniform(1, 2),
                       .max_guard_misses = gen.uniform(1, 4)};
    if (gen.chance(0.2)) opt.mode = CompileMode::per_signature;
    opt.merge_tiers = gen.chance(0.5);  // static regions joining the dynamic ones next to them
    const bool per_signature = opt.mode == CompileMode::per_signature;
    // One graph in four compiles in the background, its kernels installed whenever they are done
    // or, before half of its calls, once wait_compiled() has them all.
    opt.background_compile = !per_signature && gen.chance(0.25);
    std::string calls_str;
    for (size_t c = 0; c < order.size(); ++c)
      calls_str += (c == 0                                  ? ""
                    : c == size_t(warmup) && !per_signature ? " | "
                                                            : " ") +
                   std::to_string(order[c]);
    // One graph in ten (drawn apart from the graph) keeps its kernels in a disk cache of its
    // own, and a second Session, with a runtime of its own (no kernel in memory), serves the same
    // calls again: its kernels are loaded from the disk (object code linked anew) where the code
    // is the same.
    std::optional<test::TempDir> disk;
    if (std::mt19937(seed ^ 0x2545f491u)() % 10 == 0) {
      disk.emplace();
      opt.cache_dir = disk->path.string();
      opt.runtime = Runtime::create();
      disk_graphs += 1;
    }
    Session ref(gen.graph, SessionOptions{.interpret_only = true});
    for (int pass = 0; pass < (disk ? 2 : 1); ++pass) {
      if (pass == 1) opt.runtime = Runtime::create();
      Session jit(gen.graph, opt);
      bool failed_here = false;
      for (size_t c = 0; c < order.size(); ++c) {
        const std::vector<Tensor> feeds = gen.feeds(order[c]);
        std::vector<Tensor> want, got;
        const std::string ref_error = test::error_of([&] { want = ref.run(feeds); });
        REQUIRE_MESSAGE(ref_error.empty(), "FAILED seed " << seed << ": the generator made a graph "
                                                          << "the interpreter rejects at scenario "
                                                          << order[c] << ": " << ref_error << "\n"
                                                          << sizes_str(gen) << "\n"
                                                          << gen.graph.to_string());
        if (opt.background_compile && gen.chance(0.5)) jit.wait_compiled();
        const std::string error = test::error_of([&] { got = jit.run(feeds); });
        Mismatch m;
        if (error.empty()) {
          REQUIRE(got.size() == want.size());
          for (size_t o = 0; o < got.size(); ++o) compare(got[o], want[o], o, m);
        } else {
          m.first = "the JIT Session throws: " + error;
        }
        ++calls;
        if (m.first.empty()) continue;
        const Report rep = jit.report();
        int cache_hits = 0;
        for (const RegionReport& r : rep.regions) cache_hits += r.cache_hit;
        ++failed;
        failed_shape += m.shape;
        failed_with_cache_hits += cache_hits > 0;
        const std::string phase = per_signature        ? "per signature"
                                  : c < size_t(warmup) ? "warm-up"
                                                       : "serving";
        CHECK_MESSAGE(false, "FAILED seed "
                                 << seed << " (graph " << gi << "), call " << c << " (" << phase
                                 << ") at scenario " << order[c] << ": " << m.first << "\n"
                                 << sizes_str(gen) << "; calls " << calls_str
                                 << (opt.merge_tiers ? "; tiers merged" : "")
                                 << (opt.background_compile ? "; compiled in the background" : "")
                                 << forced.str() << paths.str()
                                 << "; regions from the kernel cache: " << cache_hits
                                 << (pass == 1 ? "; served again, kernels from the disk cache" : "")
                                 << "\n"
                                 << gen.graph.to_string() << rep.to_text());
        failed_here = true;
        break;
      }
      const Report rep = jit.report();
      if (pass == 1) {
        for (const RegionReport& r : rep.regions) disk_hits += r.disk_hit;
        break;
      }
      kernel_calls += rep.kernel_calls;
      folded_graphs += rep.folded_ops > 0;
      guard_misses += rep.guard_misses;
      replans += rep.replans;
      compiled += rep.compilations;
      for (const RegionReport& r : rep.regions) {
        hits += r.cache_hit;
        dynamic += r.dynamic && r.compiled;
        dynamic_calls += r.dynamic ? r.kernel_calls : 0;
        merged += r.dynamic && r.compiled && r.stable_ops > 0;
      }
      if (failed_here) break;
    }
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE(graphs << " graphs from seed " << first_seed << " (" << twins << " twin chains, "
                 << computed << " computed shapes, " << cumsum_graphs << " with CumSum, "
                 << conv_graphs << " with convs, " << forced_graphs << " on forced threads, "
                 << folded_graphs << " with ops folded into constants), " << calls << " calls: "
                 << compiled << " kernels compiled, " << hits << " regions from the cache, "
                 << dynamic << " dynamic regions compiled (" << dynamic_calls << " calls; "
                 << merged << " with stable ops merged in), " << kernel_calls << " kernel calls, "
                 << guard_misses << " guard misses, " << replans << " re-plans, " << disk_graphs
                 << " graphs served again from a disk cache (" << disk_hits << " regions loaded); "
                 << failed << " failed (" << failed_shape << " on a shape, "
                 << failed_with_cache_hits << " with cached kernels); " << secs << " s");
}

}  // namespace test_jit_fuzz_serving
