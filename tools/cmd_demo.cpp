// `sgraph demo [MODEL_DIR] [--warmup N]`: the profile-guided pipeline on the bundled example (a
// transformer encoder block with symbolic batch and sequence dims, five data sets of different
// shapes). Two services warm up: one whose traffic keeps its shape (every op stays stable; its
// fusible ops form regions the JIT compiles) and one whose sequence length changes during warm-up
// (the ops that see it are marked changed and stay interpreted). Then every data set is served
// through the first, timed against the interpreter alone and checked against its reference.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"
#include "onnx/backend_test.h"
#include "sgraph/sgraph.h"

namespace sgraph::cli {

namespace {

std::string shapes_of(const std::vector<Tensor>& ts) {
  std::string s;
  for (const Tensor& t : ts) s += (s.empty() ? "" : " ") + shape_str(t.shape());
  return s;
}

// Warms a session up on the given data sets and prints what it decided.
Session warm_up(const std::string& dir, const std::vector<std::string>& sets,
                const std::vector<int>& schedule, const char* title) {
  Session s(load_onnx(dir + "/model.onnx"),
            SessionOptions{.warmup_runs = static_cast<int>(schedule.size())});
  std::printf("\n== %s\n", title);
  for (size_t r = 0; r < schedule.size(); ++r) {
    const std::vector<Tensor> in = load_inputs(sets[schedule[r]]);
    s.run(in);
    std::printf("warm-up run %zu: test_data_set_%d, inputs %s\n", r + 1, schedule[r],
                shapes_of(in).c_str());
  }
  const Report rep = s.report();
  const std::string text = rep.to_text();
  std::printf("%s", text.substr(0, text.find('\n') + 1).c_str());  // the summary line
  int shown = 0;
  for (const OpReport& o : rep.ops)
    if (!o.stable && shown++ < 4)
      std::printf("  changed: %-16s %-10s at run %d: %s\n", o.node.c_str(),
                  std::string(op_name(o.op)).c_str(), o.changed_at_run, o.change.c_str());
  if (shown > 4) std::printf("  ... and %d more changed ops (sgraph run --report)\n", shown - 4);
  for (const RegionReport& r : rep.regions) {
    char how[160];
    if (r.cache_hit)
      std::snprintf(how, sizeof how, "kernel shared with a region of the same code");
    else if (r.compiled)
      std::snprintf(how, sizeof how, "compiled in %.1f ms", r.compile_ms);
    else
      std::snprintf(how, sizeof how, "interpreted: %s", r.why_interpreted.c_str());
    std::string sym;
    for (const std::string& x : r.symbols) sym += (sym.empty() ? "" : ",") + x;
    std::printf("  region %d%s: %zu ops (%s ... %s), %.1f us interpreted; %s\n", r.id,
                r.dynamic ? (" (dynamic over " + sym + ")").c_str() : "", r.nodes.size(),
                r.nodes.front().c_str(), r.nodes.back().c_str(),
                static_cast<double>(r.profiled_ns) / 1e3, how);
  }
  return s;
}

}  // namespace

// Serves every data set through `service` (the first warm-up's data set first, then the others,
// then it again), each timed against the interpreter alone and checked against its reference
// output; returns how many failed.
int serve(Session& service, Session& interp, const std::vector<std::string>& sets,
          const char* title) {
  std::printf("\n== serving through %s vs the interpreter alone\n", title);
  std::printf("%-16s %-16s %-6s %10s %10s %7s  %s\n", "data set", "inputs", "check", "service ms",
              "interp ms", "ratio", "kernel calls / guard misses");
  std::vector<size_t> order{1};
  for (size_t k = 0; k < sets.size(); ++k)
    if (k != 1) order.push_back(k);
  order.push_back(1);
  int failed = 0;
  auto totals = [&] {
    const Report r = service.report();
    return std::pair{r.kernel_calls, r.guard_misses};
  };
  for (size_t k : order) {
    const std::vector<Tensor> in = load_inputs(sets[k]);
    const auto [calls0, misses0] = totals();
    auto median_ms = [&](Session& s, std::vector<Tensor>& out) {
      std::vector<double> ms;
      for (int rep = 0; rep < 5; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        out = s.run(in);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
      std::sort(ms.begin(), ms.end());
      return ms[ms.size() / 2];
    };
    std::vector<Tensor> out, ref_out;
    const double fused_ms = median_ms(service, out);
    const auto [calls1, misses1] = totals();
    const double interp_ms = median_ms(interp, ref_out);
    const Comparison c = compare_tensors(out[0], load_tensor_pb(sets[k] + "/output_0.pb"), {});
    failed += !c.ok;
    std::printf("test_data_set_%-2zu %-16s %-6s %10.3f %10.3f %6.2fx  %lld / %lld\n", k,
                shapes_of(in).c_str(), c.ok ? "PASS" : "FAIL", fused_ms, interp_ms,
                fused_ms / interp_ms, static_cast<long long>(calls1 - calls0),
                static_cast<long long>(misses1 - misses0));
  }
  const Report rep = service.report();
  int dynamic = 0;
  for (const RegionReport& r : rep.regions) dynamic += r.dynamic;
  std::printf(
      "%s: re-planned %d time(s) after repeated guard misses; now %zu regions (%d dynamic), "
      "%zu steps for %zu ops, %d kernels compiled in all\n",
      title, rep.replans, rep.regions.size(), dynamic, rep.steps, rep.ops.size(), rep.compilations);
  return failed;
}

int cmd_demo(const Args& args) {
  if (args.positional.size() > 1) throw UsageError("demo: expected at most one MODEL_DIR");
  const std::string dir = args.positional.empty() ? SGRAPH_EXAMPLE_DIR : args.positional[0];
  const int warmup = static_cast<int>(args.integer("--warmup", 3, 2));
  const std::vector<std::string> sets = data_sets(dir);
  SG_CHECK(sets.size() >= 3) << dir << ": the demo needs a model folder with 3 or more data sets";

  const Graph g = load_onnx(dir + "/model.onnx");
  std::printf("model %s: graph '%s', %zu ops, inputs", dir.c_str(), g.name.c_str(), g.nodes.size());
  for (ValueId v : g.inputs)
    std::printf(" %s%s", g.value(v).name.c_str(), dims_str(*g.value(v).shape).c_str());
  std::printf("\n");

  // Steady traffic: the same data set on every warm-up run.
  Session steady = warm_up(dir, sets, std::vector<int>(warmup, 1),
                           "service A: traffic keeps its shape during warm-up");
  // Varying traffic: the sequence length changes on the last warm-up run; the changed ops go to
  // dynamic regions (the second tier), whose kernels serve every sequence length.
  std::vector<int> varying(warmup, 1);
  varying.back() = 2;
  Session changing =
      warm_up(dir, sets, varying, "service B: the sequence length changes during warm-up");

  // Serve: service A's static kernels run for its warm-up shapes; the other shapes miss their
  // guards and fall back (repeated misses re-plan). Service B's dynamic kernels run for all.
  Session interp(load_onnx(dir + "/model.onnx"), SessionOptions{.interpret_only = true});
  int failed = serve(steady, interp, sets, "service A");
  failed += serve(changing, interp, sets, "service B");
  return failed ? 1 : 0;
}

}  // namespace sgraph::cli
