// Compile economics under shape change: workloads whose input shapes change, each run through
// three modes of one Session — plain interpretation, sgraph's profile-guided mode and the
// per-signature baseline (the whole graph compiled for each new set of input shapes, as
// XLA-style compilers do) — printing per mode the total time, the time spent compiling, the
// number of compilations and the steady-state time per iteration, as a Markdown table.
//   build/release/bench/sgraph_economics [--rounds N] [--threads N] [--models [--passes P]]
// --models: instead, every model of ../shared/testdata serving its data sets in a cycle.
// Every mode's outputs are checked against the interpreter's, and for the profile-guided mode that
// each region (by its ops) was compiled at most once; the tool exits 1 when either fails.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "data_sets.h"
#include "sgraph/sgraph.h"

namespace {
using namespace sgraph;
using Feed = std::vector<Tensor>;

Tensor random_f32(Shape shape, std::mt19937& rng) {
  Tensor t(DType::f32, std::move(shape));
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

struct Workload {
  std::string name, shapes;  // shapes: what changes, for the table
  Graph graph;
  std::vector<Feed> feeds;  // one per iteration
  size_t steady = 0;        // the steady state: the median of the last `steady` iterations
  // Each region (by its ops) compiled at most once, else the tool fails; a model of
  // ../shared/testdata may re-plan a region when a data set changes a dim its warm-up held
  // static (compiled once more, dynamic in that dim too): its table shows the most per region.
  bool once = true;
};

// (d) --models: every model folder of ../shared/testdata, its data sets served in a cycle
// (`passes` times over, at least 24 calls), the steady state over the last cycle (all its shapes).
std::vector<Workload> model_workloads(int passes) {
  std::vector<Workload> out;
  for (const char* kind : {"real", "synthetic"}) {
    const std::filesystem::path root = std::filesystem::path(SGRAPH_TESTDATA_DIR) / kind;
    if (!std::filesystem::is_directory(root)) continue;
    std::vector<std::filesystem::path> dirs;
    for (const auto& d : std::filesystem::directory_iterator(root))
      if (std::filesystem::exists(d.path() / "model.onnx")) dirs.push_back(d.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& dir : dirs) {
      const std::vector<Feed> sets = sgraph::bench::load_data_sets(dir);
      if (sets.empty()) continue;
      std::string shapes;
      for (const Feed& f : sets) shapes += (shapes.empty() ? "" : " ") + shape_str(f[0].shape());
      Workload w{dir.filename().string(),
                 std::to_string(sets.size()) + " data sets cycling, input 0 " + shapes,
                 load_onnx((dir / "model.onnx").string()),
                 {},
                 sets.size()};
      const size_t calls = std::max<size_t>(24, sets.size() * static_cast<size_t>(passes));
      for (size_t i = 0; i < calls; ++i) w.feeds.push_back(sets[i % sets.size()]);
      w.once = false;
      out.push_back(std::move(w));
    }
  }
  return out;
}

// (a) The encoder block, batch 2, the sequence length cycling over 10 values for 200 iterations.
Workload encoder(const std::string& path) {
  Workload w{
      "tiny_encoder_block", "x [2,seq,32], seq cycles over 10 values", load_onnx(path), {}, 50};
  std::mt19937 rng(1);
  const int64_t seqs[] = {5, 8, 11, 16, 17, 23, 32, 40, 48, 64};
  for (int i = 0; i < 200; ++i) {
    const int64_t seq = seqs[i % 10];
    Tensor mask(DType::i64, {2, seq});
    for (int64_t k = 0; k < mask.numel(); ++k) mask.data<int64_t>()[k] = 1;
    w.feeds.push_back({random_f32({2, seq, 32}, rng), mask});
  }
  return w;
}

// (a') The 4-layer d=256 text encoder of ../shared/testdata (token ids, positions from
// Shape -> Range, a padding mask), batch 1, the sequence length cycling over 8 values in
// [7, 128] for 120 iterations: a text service. Token ids are drawn below the largest id of its
// first data set (so they are in the vocabulary).
Workload text_encoder(const std::string& dir) {
  Workload w{"text_encoder",
             "ids [1,seq], seq cycles over 8 values in 7..128",
             load_onnx(dir + "/model.onnx"),
             {},
             40};
  const Tensor ids0 = load_tensor_pb(dir + "/test_data_set_0/input_0.pb");
  int64_t vocab = 1;
  for (int64_t k = 0; k < ids0.numel(); ++k) vocab = std::max(vocab, ids0.data<int64_t>()[k] + 1);
  std::mt19937 rng(4);
  std::uniform_int_distribution<int64_t> id(0, vocab - 1);
  const int64_t seqs[] = {7, 16, 23, 32, 50, 64, 100, 128};
  for (int i = 0; i < 120; ++i) {
    const int64_t seq = seqs[i % 8];
    Tensor ids(DType::i64, {1, seq}), mask(DType::i64, {1, seq});
    for (int64_t k = 0; k < seq; ++k) {
      ids.data<int64_t>()[k] = id(rng);
      mask.data<int64_t>()[k] = k < seq - seq / 4 ? 1 : 0;  // the last quarter is padding
    }
    w.feeds.push_back({ids, mask});
  }
  return w;
}

// (b) Training-style: 5 epochs of 10 batches of 64 and a last batch of 17.
Workload mlp_epochs(const std::string& path) {
  Workload w{"mlp3", "x [batch,64], 5 epochs of 10x64 + 1x17", load_onnx(path), {}, 11};
  std::mt19937 rng(2);
  for (int epoch = 0; epoch < 5; ++epoch)
    for (int b = 0; b < 11; ++b) {
      const int64_t batch = b < 10 ? 64 : 17;
      w.feeds.push_back({random_f32({batch, 64}, rng), random_f32({batch, 10}, rng)});
    }
  return w;
}

// (c) A fixed-shape branch, z[16,256] -> tanh -> MatMul -> relu -> MatMul -> sigmoid ->
// mean over rows, joined by a broadcast Add to a variable branch, x[batch,256] -> elementwise;
// the batch cycles over 10 values for 200 iterations.
Workload two_branches() {
  std::mt19937 rng(3);
  GraphBuilder b("two_branches");
  ValueId z = b.input("z", DType::f32, {16, 256});
  ValueId x = b.input("x", DType::f32, {Dim("batch"), 256});
  ValueId h = b.relu(b.matmul(b.tanh(z), b.constant("w1", random_f32({256, 256}, rng))));
  h = b.sigmoid(b.matmul(b.mul(h, b.scalar(0.5f)), b.constant("w2", random_f32({256, 256}, rng))));
  ValueId context =
      b.reduce_mean(h, Attributes{{"axes", Ints{0}}, {"keepdims", int64_t{1}}});  // [1,256]
  ValueId v = b.tanh(b.add(b.mul(x, b.scalar(0.5f)), b.scalar(0.1f)));
  b.output(b.mul(b.relu(b.add(v, context)), x), "y");
  Workload w{"two_branches",
             "z [16,256] fixed; x [batch,256], batch cycles over 10 values",
             b.build(),
             {},
             50};
  const int64_t batches[] = {1, 3, 7, 12, 16, 25, 32, 50, 64, 100};
  for (int i = 0; i < 200; ++i)
    w.feeds.push_back({random_f32({16, 256}, rng), random_f32({batches[i % 10], 256}, rng)});
  return w;
}

struct Mode {
  std::string name;
  SessionOptions options;
};

struct Totals {
  double total_ms = 0, compile_ms = 0, steady_ms = 0;
  int compilations = 0, signatures = 0, replans = 0;
  int regions = 0, max_compiles = 0;  // profile-guided: distinct regions compiled, most per region
  double max_diff = 0;                // against the interpreter's outputs
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Runs every feed of `w` through one Session in `mode`, timing each call. `ref` holds the
// interpreter's outputs (empty: this run makes them, into `out`).
Totals measure(const Workload& w, const Mode& mode, const std::vector<Feed>& ref,
               std::vector<Feed>* out) {
  using clock = std::chrono::steady_clock;
  Session s(w.graph, mode.options);
  const bool guided =
      !mode.options.interpret_only && mode.options.mode == CompileMode::profile_guided;
  std::map<std::vector<std::string>, int> compiles;  // per region (its ops): times compiled
  std::vector<double> ms;
  Totals t;
  for (size_t i = 0; i < w.feeds.size(); ++i) {
    const auto start = clock::now();
    Feed y = s.run(w.feeds[i]);
    ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - start).count());
    for (size_t k = 0; k < y.size() && !ref.empty(); ++k)
      for (int64_t e = 0; e < y[k].numel(); ++e) {
        const double want = ref[i][k].at_double(e), diff = std::abs(y[k].at_double(e) - want);
        t.max_diff = std::max(t.max_diff, diff);
        if (!(diff <= 1e-4 + 1e-3 * std::abs(want))) {
          std::fprintf(stderr, "%s, %s, iteration %zu: output %zu element %lld is %g, want %g\n",
                       w.name.c_str(), mode.name.c_str(), i, k, static_cast<long long>(e),
                       y[k].at_double(e), want);
          std::exit(1);
        }
      }
    if (out) out->push_back(std::move(y));
    if (guided)
      for (const RegionReport& r : s.report().regions)
        compiles[r.nodes] = std::max(compiles[r.nodes], r.compiles);
  }
  const Report r = s.report();
  for (double x : ms) t.total_ms += x;
  t.steady_ms = median(std::vector<double>(ms.end() - static_cast<ptrdiff_t>(w.steady), ms.end()));
  t.compile_ms = r.compile_ms_total;
  t.compilations = r.compilations;
  t.signatures = r.signatures;
  t.replans = r.replans;
  int sum = 0;
  for (const auto& [nodes, n] : compiles) {
    t.regions += n > 0;
    t.max_compiles = std::max(t.max_compiles, n);
    sum += n;
  }
  if (guided && w.once && (t.max_compiles > 1 || sum != t.compilations)) {
    std::fprintf(stderr, "%s: a region was compiled twice (%d compilations, %d regions)\n",
                 w.name.c_str(), t.compilations, t.regions);
    std::exit(1);
  }
  return t;
}

// Over rounds: the median total and compile times, the fastest steady state (the one least
// disturbed by other processes; each round's is already a median). Counts are the same each round.
Totals over_rounds(const std::vector<Totals>& rounds) {
  Totals m = rounds.front();
  auto med = [&](double Totals::*f) {
    std::vector<double> v;
    for (const Totals& t : rounds) v.push_back(t.*f);
    m.*f = median(v);
  };
  med(&Totals::total_ms);
  med(&Totals::compile_ms);
  for (const Totals& t : rounds) m.steady_ms = std::min(m.steady_ms, t.steady_ms);
  for (const Totals& t : rounds) m.max_diff = std::max(m.max_diff, t.max_diff);
  return m;
}

// After how many more steady-state iterations (no new shape) the two totals cross: one mode
// started behind and runs each iteration faster. "-" when one is ahead on both counts, or the
// steady times differ by less than 10% (within a shared machine's noise).
std::string break_even(const Totals& m, const Totals& guided) {
  const double gap = m.total_ms - guided.total_ms, gain = guided.steady_ms - m.steady_ms;
  if (std::abs(gain) < 0.1 * guided.steady_ms || gap == 0 || (gap > 0) != (gain > 0)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", gap / gain);
  return buf;
}

std::string host_cpu() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

int int_arg(const char* flag, const char* value) {
  char* end = nullptr;
  const long v = value ? std::strtol(value, &end, 10) : 0;
  if (!value || *end != '\0' || v < 1 || v > 1000) {
    std::fprintf(stderr, "%s wants a whole number from 1 to 1000\n", flag);
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3, threads = 1, passes = 6;
  bool models = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--models") {
      models = true;
    } else if (a == "--passes") {
      passes = int_arg("--passes", i + 1 < argc ? argv[++i] : nullptr);
    } else if (a == "--rounds") {
      rounds = int_arg("--rounds", i + 1 < argc ? argv[++i] : nullptr);
    } else if (a == "--threads") {
      threads = int_arg("--threads", i + 1 < argc ? argv[++i] : nullptr);
    } else {
      std::fprintf(stderr,
                   "usage: sgraph_economics [--rounds N] [--threads N] [--models [--passes P]]\n");
      return 2;
    }
  }
  try {
    std::vector<Workload> workloads;
    if (models) {
      workloads = model_workloads(passes);
    } else {
      workloads.push_back(
          encoder(SGRAPH_SOURCE_DIR "/examples/models/tiny_encoder_block/model.onnx"));
      const std::string text = SGRAPH_TESTDATA_DIR "/synthetic/text_encoder";
      if (std::filesystem::exists(text + "/model.onnx"))
        workloads.push_back(text_encoder(text));
      else
        std::printf("skipped text_encoder: %s is missing\n", text.c_str());
      const std::string mlp3 = SGRAPH_TESTDATA_DIR "/synthetic/mlp3/model.onnx";
      if (std::filesystem::exists(mlp3))
        workloads.push_back(mlp_epochs(mlp3));
      else
        std::printf("skipped mlp3: %s is missing\n", mlp3.c_str());
      workloads.push_back(two_branches());
    }

    SessionOptions base;
    base.threads = threads;
    base.cache_dir = "";  // every kernel compiled, whatever $SGRAPH_CACHE_DIR says
    std::vector<Mode> modes{{"interpret", base}, {"profile_guided", base}, {"per_signature", base}};
    modes[0].options.interpret_only = true;
    modes[2].options.mode = CompileMode::per_signature;
    Mode no_replan{"profile_guided, no re-plan", base};  // misses never re-plan: kernels stay
    no_replan.options.max_guard_misses = INT_MAX;

    {  // LLVM's one-time set-up, outside every measurement
      GraphBuilder b("jit_warmup");
      b.output(b.exp(b.relu(b.input("x", DType::f32, {4}))), "y");
      SessionOptions o = modes[2].options;
      Session(b.build(), o).run({Tensor::zeros(DType::f32, {4})});
    }

    std::printf("host: %s, %u hardware threads; %d thread(s) per kernel; %d rounds\n\n",
                host_cpu().c_str(), std::thread::hardware_concurrency(), threads, rounds);
    std::printf(
        "| workload | mode | total ms | compiling ms | compilations | signatures | re-plans | "
        "steady ms/iter | total vs guided | steady vs guided | break-even iters | max abs diff |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    std::vector<std::string> notes;
    for (const Workload& w : workloads) {
      std::vector<Mode> ms = modes;
      if (w.name == "mlp3") ms.push_back(no_replan);
      std::vector<Feed> ref;
      std::vector<std::vector<Totals>> per_mode(ms.size());
      for (int round = 0; round < rounds; ++round)
        for (size_t m = 0; m < ms.size(); ++m) {
          static const std::vector<Feed> none;
          const bool make_ref = round == 0 && m == 0;
          per_mode[m].push_back(
              measure(w, ms[m], make_ref ? none : ref, make_ref ? &ref : nullptr));
        }
      std::vector<Totals> t;
      for (const auto& r : per_mode) t.push_back(over_rounds(r));
      const Totals& guided = t[1];
      for (size_t m = 0; m < ms.size(); ++m)
        std::printf("| %s | %s | %.1f | %.1f | %d | %d | %d | %.4f | %.2f | %.2f | %s | %.1e |\n",
                    w.name.c_str(), ms[m].name.c_str(), t[m].total_ms, t[m].compile_ms,
                    t[m].compilations, t[m].signatures, t[m].replans, t[m].steady_ms,
                    t[m].total_ms / guided.total_ms, t[m].steady_ms / guided.steady_ms,
                    break_even(t[m], guided).c_str(), t[m].max_diff);
      notes.push_back(w.name + ": " + w.shapes + "; " + std::to_string(w.feeds.size()) +
                      " iterations, steady state: the median of the last " +
                      std::to_string(w.steady) + " (fastest round); profile_guided " +
                      (guided.regions == 0
                           ? "compiled nothing (no op kept its shapes)"
                           : "compiled " + std::to_string(guided.regions) + " region(s), at most " +
                                 std::to_string(guided.max_compiles) + " time(s) each"));
    }
    std::printf("\n");
    for (const std::string& n : notes) std::printf("- %s\n", n.c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "sgraph_economics: %s\n", e.what());
    return 1;
  }
  return 0;
}
