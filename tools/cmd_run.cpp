// `sgraph run MODEL [--input NAME=FILE.pb | --input NAME=SHAPE]... [--iters N]
//              [--warmup N] [--threads N] [--shapes "x=1x8;x=1x17"] [--report] [--json FILE]
//              [--dot FILE] [--bench-json FILE] [--compile-horizon N]`:
// runs a model on inputs read from .pb files or made up at random, prints the outputs and how
// long runs took. An input given C times makes a cycle of C input sets (every input given once
// or C times; run k uses set k mod C), the steady state of a service whose inputs vary.
// --shapes gives per-run random shapes that cycle the same way (run k uses the k-th entry of
// each input, modulo its count), so warm-up runs can see shapes change; --report prints what the
// warm-up decided (stable and changed ops, regions), --json and --dot write it to files.
// --bench-json writes steady-state serving figures (runs after the warm-up, planning and the
// first served run; with a cycle, whole cycles once re-plans are done), peak resident
// memory and where the last run's interpreted time went, for bench/compare. --compile-horizon
// sets SessionOptions::compile_horizon.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "cli.h"
#include "sgraph/sgraph.h"

namespace sgraph::cli {

namespace {

std::string input_names(const Graph& g) {
  std::string s;
  for (ValueId id : g.inputs) s += (s.empty() ? "" : ", ") + g.value(id).name;
  return s.empty() ? "none" : s;
}

// The declared shape with symbolic dims replaced by 1: a suggestion for --input NAME=SHAPE.
std::string example_shape(const ValueInfo& v) {
  std::string s;
  if (v.shape)
    for (const Dim& d : *v.shape)
      s += (s.empty() ? "" : "x") + std::to_string(d.is_static() ? d.size : 1);
  return s.empty() ? "2x3" : s;
}

// One input tensor: from --input NAME=FILE.pb, --input NAME=SHAPE, or the declared static shape.
// `from` says which.
Tensor make_input(const ValueInfo& v, const std::string* given, std::mt19937& rng,
                  std::string& from) {
  if (given && (given->ends_with(".pb") || std::filesystem::is_regular_file(*given))) {
    from = "from " + *given;
    return load_tensor_pb(*given);
  }
  Shape shape;
  if (given) {
    shape = parse_shape(*given, "--input " + v.name + "=" + *given);
  } else {
    const bool fixed = v.shape && std::all_of(v.shape->begin(), v.shape->end(),
                                              [](const Dim& d) { return d.is_static(); });
    SG_CHECK(fixed) << "input '" << v.name << "' has shape "
                    << (v.shape ? dims_str(*v.shape) : "[?] (unknown rank)")
                    << ", which is not fully static: pass --input " << v.name << "=SHAPE, e.g. "
                    << "--input " << v.name << "=" << example_shape(v);
    for (const Dim& d : *v.shape) shape.push_back(d.size);
  }
  from = "random";
  return random_tensor(v.dtype, std::move(shape), rng);
}

// --shapes "x=1x8;x=1x17;mask=1x8" (or with commas): per input, the shapes of successive runs.
std::map<std::string, std::vector<Shape>> parse_shape_schedule(const std::string& text) {
  std::map<std::string, std::vector<Shape>> schedule;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find_first_of(";,", start), text.size());
    const std::string item = text.substr(start, end - start);
    if (!item.empty()) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UsageError("run: --shapes wants NAME=SHAPE;NAME=SHAPE;..., got '" + item + "'");
      schedule[item.substr(0, eq)].push_back(parse_shape(item.substr(eq + 1), "--shapes " + item));
    }
    start = end + 1;
  }
  if (schedule.empty()) throw UsageError("run: --shapes is empty");
  return schedule;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  SG_CHECK(out) << path << ": cannot write file";
  out << text;
  SG_CHECK(out.good()) << path << ": write failed";
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// --bench-json: `steady` are the run times (ms) after the warm-up and the first served run (with
// a cycle of input sets, each timed cycle's mean run time, and `by_set` each set's run times in
// those cycles); `untimed`: the runs before the first timed one. The rest comes from the session
// after its last run.
std::string bench_json(std::vector<double> steady, const Session& session, double first_ms,
                       std::vector<std::vector<double>> by_set, int64_t untimed) {
  const double last_ms = steady.back();
  std::sort(steady.begin(), steady.end());
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);  // ru_maxrss is in KiB on Linux
  // Counts over the graph and the subgraphs (If branches) it ran, each with its own regions.
  size_t ops = 0, regions = 0, ops_compiled = 0, regions_compiled = 0;
  double compile_ms = 0;
  std::function<void(const Report&)> count = [&](const Report& rep) {
    ops += rep.ops.size();
    regions += rep.regions.size();
    for (const RegionReport& r : rep.regions) {
      compile_ms += r.compile_ms;
      if (!r.compiled) continue;
      ++regions_compiled;
      ops_compiled += r.nodes.size();
    }
    for (const Report& sub : rep.subgraphs) count(sub);
  };
  count(session.report());
  std::map<std::string, double> interpreted_ms;  // op -> time in the last run, outside kernels
  double last_interpreted_ms = 0;
  for (const OpTime& t : session.last_op_times()) {
    interpreted_ms[std::string(op_name(t.op))] += t.ns * 1e-6;
    last_interpreted_ms += t.ns * 1e-6;
  }
  std::string j = "{\"threads\": " + std::to_string(session.options().threads);
  j += ", \"untimed_runs\": " + std::to_string(untimed);
  j += ", \"timed_runs\": " + std::to_string(steady.size() * by_set.size());
  j += ", \"first_ms\": " + fmt("%.4f", first_ms);
  j += ", \"median_ms\": " + fmt("%.4f", steady[steady.size() / 2]);
  j += ", \"min_ms\": " + fmt("%.4f", steady.front());
  j += ", \"max_rss_kb\": " + std::to_string(usage.ru_maxrss);
  j += ", \"ops\": " + std::to_string(ops);
  j += ", \"ops_compiled\": " + std::to_string(ops_compiled);
  j += ", \"regions\": " + std::to_string(regions);
  j += ", \"regions_compiled\": " + std::to_string(regions_compiled);
  j += ", \"compile_ms\": " + fmt("%.3f", compile_ms);
  if (by_set.size() > 1) {
    j += ", \"cycle\": " + std::to_string(by_set.size()) + ", \"cycle_set_median_ms\": [";
    for (size_t c = 0; c < by_set.size(); ++c) {
      std::sort(by_set[c].begin(), by_set[c].end());
      j += (c ? ", " : "") + fmt("%.4f", by_set[c][by_set[c].size() / 2]);
    }
    j += "]";
  }
  j += ", \"last_run_ms\": " + fmt("%.4f", last_ms);
  j += ", \"last_run_interpreted_ms\": " + fmt("%.4f", last_interpreted_ms);
  j += ", \"last_run_interpreted_ms_by_op\": {";
  bool first = true;
  for (const auto& [op, ms] : interpreted_ms) {
    j += (first ? "\"" : ", \"") + op + "\": " + fmt("%.4f", ms);
    first = false;
  }
  return j + "}}\n";
}

}  // namespace

int cmd_run(const Args& args) {
  if (args.positional.size() != 1) throw UsageError("run: expected one MODEL");
  SessionOptions options;
  options.warmup_runs = static_cast<int>(args.integer("--warmup", options.warmup_runs, 1));
  options.threads = static_cast<int>(args.integer("--threads", options.threads, 1));
  options.cache_dir = tool_cache_dir(args);
  options.compile_horizon = args.integer("--compile-horizon", 0, 0);
  const bool report = !args.all("--report").empty();
  const std::vector<std::string> json = args.all("--json"), dot = args.all("--dot");
  const std::vector<std::string> bench = args.all("--bench-json");
  const bool wants_plan = report || !json.empty() || !dot.empty() || !args.all("--warmup").empty();
  std::map<std::string, std::vector<std::string>> given;  // input name -> FILE.pb or SHAPE, per set
  for (const std::string& spec : args.all("--input")) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("run: --input wants NAME=FILE.pb or NAME=SHAPE, got '" + spec + "'");
    given[spec.substr(0, eq)].push_back(spec.substr(eq + 1));
  }
  // An input given C times makes a cycle of C input sets; the others are the same in every set.
  size_t cycle = 1;
  for (const auto& [name, specs] : given) cycle = std::max(cycle, specs.size());
  for (const auto& [name, specs] : given)
    if (specs.size() != 1 && specs.size() != cycle)
      throw UsageError("run: input '" + name + "' is given " + std::to_string(specs.size()) +
                       " times and another input " + std::to_string(cycle) +
                       " times: give each input once or as often as the others (a cycle of " +
                       "input sets)");
  std::map<std::string, std::vector<Shape>> schedule;
  for (const std::string& text : args.all("--shapes")) schedule = parse_shape_schedule(text);
  if (cycle > 1 && !schedule.empty())
    throw UsageError("run: --shapes and an input given several times both make a cycle; use one");
  // With a report asked for, run at least until the warm-up is done; with --bench-json, two more
  // runs (the first served run is not timed). With a cycle, the timed runs start at `timed_from`:
  // the warm-up rounded up to whole cycles, then max_guard_misses + 1 cycles served untimed (a
  // set whose shapes the warm-up did not see misses a guard once per cycle, and its region
  // re-plans after max_guard_misses misses); they are whole cycles.
  const int64_t c = static_cast<int64_t>(cycle);
  const int64_t timed_from =
      cycle > 1 ? (options.warmup_runs + c - 1) / c * c + (options.max_guard_misses + 1) * c
                : options.warmup_runs + 1;
  const int64_t min_iters =
      !bench.empty() ? timed_from + c : (wants_plan ? options.warmup_runs : 1);
  int64_t iters = std::max(args.integer("--iters", 1, 1), min_iters);
  if (cycle > 1 && !bench.empty()) iters = timed_from + (iters - timed_from + c - 1) / c * c;

  Session session(load_model(args.positional[0]), options);
  const Graph& g = session.graph();
  auto check_name = [&](const std::string& name, const std::string& flag) {
    const ValueId id = g.find_value(name);
    SG_CHECK(id != kNoValue && std::find(g.inputs.begin(), g.inputs.end(), id) != g.inputs.end())
        << flag << ": the model has no input named '" << name << "' (its inputs: " << input_names(g)
        << ")";
  };
  for (const auto& [name, specs] : given) check_name(name, "--input " + name + "=" + specs[0]);
  for (const auto& [name, shapes] : schedule) check_name(name, "--shapes");
  std::mt19937 rng(0);
  std::vector<std::vector<Tensor>> sets(cycle);  // the input sets; run k uses sets[k % cycle]
  std::vector<std::vector<std::string>> from(cycle, std::vector<std::string>(g.inputs.size()));
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ValueInfo& v = g.value(g.inputs[i]);
    auto it = given.find(v.name);
    for (size_t s = 0; s < cycle; ++s) {
      if (schedule.count(v.name)) {  // made for each run below
        sets[s].emplace_back();
        from[s][i] = "random, shapes from --shapes";
      } else if (s > 0 && (it == given.end() || it->second.size() == 1)) {
        sets[s].push_back(sets[0][i]);  // the same in every set
        from[s][i] = from[0][i];
      } else {
        sets[s].push_back(
            make_input(v, it == given.end() ? nullptr : &it->second[s], rng, from[s][i]));
      }
    }
  }
  std::printf(cycle > 1 ? "inputs (a cycle of %zu sets; run k uses set k mod %zu):\n" : "inputs:\n",
              cycle, cycle);
  for (size_t s = 0; s < cycle; ++s) {
    if (cycle > 1) std::printf(" set %zu:\n", s);
    for (size_t i = 0; i < g.inputs.size(); ++i)
      std::printf("  %-20s %s (%s)\n", g.value(g.inputs[i]).name.c_str(),
                  sets[s][i].defined() ? to_string(sets[s][i], 4).c_str() : "", from[s][i].c_str());
  }
  std::fflush(stdout);  // before any error the run reports on stderr

  std::vector<double> ms, steady;  // all runs; timed runs (with a cycle: timed cycles' means)
  std::vector<std::vector<double>> by_set(cycle);  // with a cycle: each set's timed run times
  std::vector<Tensor> outputs;
  bool served_before = false;
  int64_t untimed = -1;                 // the runs before the first timed one
  std::vector<double> cycle_ms(cycle);  // the current cycle's run times
  int64_t cycle_runs = 0;               // served runs of the current cycle so far
  for (int64_t k = 0; k < iters; ++k) {
    std::vector<Tensor>& inputs = sets[k % c];
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      const ValueInfo& v = g.value(g.inputs[i]);
      if (auto it = schedule.find(v.name); it != schedule.end())
        inputs[i] = random_tensor(v.dtype, it->second[k % it->second.size()], rng);
    }
    const bool served = session.planned();
    // The last run's op times for --bench-json (collected in that run only: they cost time).
    if (k == iters - 1) session.set_op_times(true);
    const auto start = std::chrono::steady_clock::now();
    outputs = session.run(inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
    if (cycle == 1) {
      if (served && served_before) {
        if (steady.empty()) untimed = k;
        steady.push_back(ms.back());
      }
      served_before = served_before || served;
    } else if (k >= timed_from) {
      // A cycle is timed when every run of it was served (planning may come late with a
      // compile horizon).
      if (k % c == 0) cycle_runs = 0;
      if (served) ++cycle_runs;
      cycle_ms[k % c] = ms.back();
      if (k % c == c - 1 && cycle_runs == c) {
        if (steady.empty()) untimed = k + 1 - c;
        steady.push_back(std::accumulate(cycle_ms.begin(), cycle_ms.end(), 0.0) / c);
        for (size_t set = 0; set < cycle; ++set) by_set[set].push_back(cycle_ms[set]);
      }
    }
  }
  std::printf("outputs:\n");
  for (size_t j = 0; j < outputs.size(); ++j)
    std::printf("  %-20s %s\n", g.value(g.outputs[j]).name.c_str(),
                to_string(outputs[j], 8).c_str());

  std::printf("timing: first run %.3f ms", ms[0]);
  if (ms.size() > 1) {
    std::vector<double> rest(ms.begin() + 1, ms.end());
    std::sort(rest.begin(), rest.end());
    std::printf(", then median %.3f ms, min %.3f ms over %zu runs\n", rest[rest.size() / 2],
                rest[0], rest.size());
  } else {
    std::printf(" (--iters N for the median and min of later runs)\n");
  }
  const Report rep = session.report();
  if (report) std::printf("\n%s", rep.to_text().c_str());
  for (const std::string& path : json) write_file(path, rep.to_json());
  for (const std::string& path : dot) write_file(path, rep.to_dot());
  if (!bench.empty()) {
    SG_CHECK(!steady.empty()) << "run: no whole cycle of the input sets was served after the "
                              << "warm-up; give a larger --iters";
    for (const std::string& path : bench)
      write_file(path, bench_json(steady, session, ms[0], by_set, untimed));
  }
  return 0;
}

}  // namespace sgraph::cli
