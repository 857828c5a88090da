// Helpers for JIT tests: compile a whole graph as one region, run the kernel on the inputs, and
// compare with the interpreter.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/parallel.h"
#include "jit/region_compiler.h"
#include "runtime/interpreter.h"
#include "runtime/shape_tracker.h"
#include "test_util.h"

namespace sgraph::test::region {

using namespace sgraph::jit;

// Each value's shape as the interpreter runs (what the Session takes from its ShapeTracker).
class ShapeRecorder : public OpObserver {
 public:
  explicit ShapeRecorder(const Graph& g) : shapes(g.values.size()) {}
  void on_op(const OpEvent& e) override {
    for (size_t i = 0; i < e.inputs.size(); ++i)
      if (e.inputs[i].defined()) shapes[e.node.inputs[i]] = e.inputs[i].shape();
    for (size_t i = 0; i < e.outputs.size(); ++i) shapes[e.node.outputs[i]] = e.outputs[i].shape();
  }
  std::vector<Shape> shapes;
};

// The region of all of g's nodes.
inline Region whole_graph(const Graph& g) {
  Region r;
  std::vector<bool> made(g.values.size(), false);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    r.nodes.push_back(static_cast<int32_t>(n));
    for (ValueId v : g.nodes[n].inputs)
      if (v != kNoValue && !made[v]) r.inputs.push_back(v);
    for (ValueId v : g.nodes[n].outputs) made[v] = true;
  }
  r.outputs = g.outputs;
  for (auto* list : {&r.inputs, &r.outputs}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  return r;
}

inline Jit& shared_jit() {
  static std::unique_ptr<Jit> jit = Jit::create();
  return *jit;
}

inline bool compiled(const CompiledRegion& c) { return c.kernel.fn != nullptr; }

// A JIT of its own (its code compiled, not reused from another's cache) that writes each module
// it compiles, as emitted (before LLVM's passes), into a fresh directory (SGRAPH_DUMP_IR), for
// tests about the code a lowering emits.
class IrDumpingJit {
 public:
  IrDumpingJit()
      : dir_(std::filesystem::temp_directory_path() /
             ("sgraph_ir_" + std::to_string(getpid()) + "_" + std::to_string(counter()++))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    setenv("SGRAPH_DUMP_IR", dir_.c_str(), 1);
    jit_ = Jit::create();
    unsetenv("SGRAPH_DUMP_IR");
  }
  ~IrDumpingJit() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  IrDumpingJit(const IrDumpingJit&) = delete;
  IrDumpingJit& operator=(const IrDumpingJit&) = delete;
  Jit& jit() { return *jit_; }
  // The modules compiled so far, one string each.
  std::vector<std::string> emitted() const {
    std::vector<std::string> modules;
    for (const auto& f : std::filesystem::directory_iterator(dir_)) {
      std::ifstream in(f.path());
      modules.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return modules;
  }

 private:
  static std::atomic<int>& counter() {
    static std::atomic<int> n{0};
    return n;
  }
  std::filesystem::path dir_;
  std::unique_ptr<Jit> jit_;
};

// How many times `needle` occurs in `text`.
inline int64_t occurrences(const std::string& text, const std::string& needle) {
  int64_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

inline std::string fresh_name() {
  static std::atomic<int> counter{0};
  return "test_region_" + std::to_string(counter++);
}

struct RegionRun {
  std::vector<Tensor> got, want;  // in graph-output order
  CompiledRegion compiled;
  bool packed_b = false;  // the kernel packed a constant GEMM operand (KernelContext::gemm_cache)
};

// Runs g's nodes as one compiled region and through the interpreter.
inline RegionRun run_region(const Graph& g, const std::vector<Tensor>& feeds,
                            Jit& jit = shared_jit(), int threads = 1,
                            const std::string& name = fresh_name(), bool serial = false) {
  ShapeRecorder shapes(g);
  OpObserver* observers[] = {&shapes};
  RegionRun run;
  run.want = Interpreter(g).run(feeds, observers);
  const Region r = whole_graph(g);
  run.compiled = compile_region(jit, g, r, shapes.shapes, name, Jit::Reuse::same_code, serial);
  REQUIRE_MESSAGE(compiled(run.compiled), run.compiled.why_not);
  std::vector<void*> buffers;
  for (ValueId v : r.inputs) {
    const Tensor* t = &g.value(v).initializer;
    if (!t->defined()) {
      const auto at = std::find(g.inputs.begin(), g.inputs.end(), v) - g.inputs.begin();
      t = &feeds.at(at);
    }
    buffers.push_back(const_cast<void*>(t->raw_data()));
  }
  std::vector<Tensor> outs;
  for (ValueId v : r.outputs) {
    outs.emplace_back(g.value(v).dtype, shapes.shapes[v]);
    buffers.push_back(outs.back().raw_data());
  }
  // (0xff bytes, NaN as floats: a kernel must not read what it did not write there)
  std::vector<std::byte> scratch_storage(static_cast<size_t>(run.compiled.scratch_bytes) + 64,
                                         std::byte{0xff});
  if (run.compiled.scratch_bytes > 0) {  // the scratch block, 64-byte aligned
    void* p = scratch_storage.data();
    size_t room = scratch_storage.size();
    buffers.push_back(std::align(64, static_cast<size_t>(run.compiled.scratch_bytes), p, room));
  }
  KernelContext ctx(threads);  // as a Session passes one to every kernel
  run.compiled.kernel.fn(buffers.data(), nullptr, &ctx);
  run.packed_b = ctx.gemm_cache != nullptr;
  jit.remove(run.compiled.kernel.handle);
  for (ValueId v : g.outputs)
    run.got.push_back(outs[std::find(r.outputs.begin(), r.outputs.end(), v) - r.outputs.begin()]);
  return run;
}

inline void check_region(const Graph& g, const std::vector<Tensor>& feeds, double rtol = 1e-5,
                         double atol = 1e-6, int threads = 1) {
  const RegionRun run = run_region(g, feeds, shared_jit(), threads);
  REQUIRE(run.got.size() == run.want.size());
  for (size_t i = 0; i < run.got.size(); ++i)
    test::check_tensors_close(run.got[i], run.want[i], rtol, atol);
}

// Checks that got and want are the same tensor: dtype, shape and every element (floats equal or
// both NaN; other dtypes bit for bit).
inline void check_same(const Tensor& got, const Tensor& want) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE_MESSAGE(got.shape() == want.shape(), shape_str(got.shape())
                                                   << " != " << shape_str(want.shape()));
  if (!is_float(got.dtype())) {
    CHECK(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()) == 0);
    return;
  }
  int64_t bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.at_double(i), w = want.at_double(i);
    if (!(g == w || (std::isnan(g) && std::isnan(w))) && bad++ == 0)
      CHECK_MESSAGE(false, "element " << i << ": got " << g << ", want " << w);
  }
  CHECK_MESSAGE(bad == 0, bad << " elements differ");
}

// Compiles g as one region and checks that every output equals the interpreter's exactly.
inline void check_region_same(const Graph& g, const std::vector<Tensor>& feeds) {
  const RegionRun run = run_region(g, feeds);
  REQUIRE(run.got.size() == run.want.size());
  for (size_t i = 0; i < run.got.size(); ++i) check_same(run.got[i], run.want[i]);
}

// Uniform random values in [lo, hi] as dtype t: integers rounded, bools x > (lo + hi) / 2.

inline Tensor random_of(DType t, const Shape& s, uint32_t seed, float lo, float hi) {
  const Tensor f = test::random_f32(s, seed, lo, hi);
  if (t == DType::f32) return f;
  Tensor out(t, s);
  visit_dtype(t, [&]<class T>() {
    for (int64_t i = 0; i < f.numel(); ++i) {
      const float v = f.data<float>()[i];
      if constexpr (std::is_same_v<T, bool>)
        out.data<T>()[i] = v > 0.5f * (lo + hi);
      else if constexpr (std::is_integral_v<T>)
        out.data<T>()[i] = static_cast<T>(std::lround(v));
      else
        out.data<T>()[i] = static_cast<T>(v);
    }
  });
  return out;
}

// One warm-up run of g per feed, observed by `st`.
inline void warm_up(const Graph& g, ShapeTracker& st,
                    const std::vector<std::vector<Tensor>>& feeds) {
  Interpreter interp(g);
  OpObserver* obs[] = {&st};
  for (const auto& feed : feeds) {
    st.begin_run();
    interp.run(feed, obs);
    st.end_run();
  }
}

// The symbolic dims a ShapeTracker finds over warm-up runs of g on `feeds`.
inline ShapeTracker::SymbolicDims symbolic_dims_of(const Graph& g,
                                                   const std::vector<std::vector<Tensor>>& feeds) {
  ShapeTracker st(g);
  warm_up(g, st, feeds);
  return st.symbolic_dims();
}

// g compiled once as one dynamic region from the symbolic dims of a warm-up over `warmup`.
struct Dynamic {
  const Graph& g;
  Region r;
  ShapeTracker::SymbolicDims sd;
  CompiledRegion c;

  Jit& jit;

  // `serial`: compiled for one thread (as a plan of 1 thread does; nests run in the kernel).
  Dynamic(const Graph& graph, const std::vector<std::vector<Tensor>>& warmup, bool serial = false,
          Jit& with = shared_jit())
      : g(graph), sd(symbolic_dims_of(g, warmup)), jit(with) {
    r = whole_graph(g);
    r.dynamic = true;
    c = compile_dynamic_region(jit, g, r, sd.values, sd.symbols.size(), fresh_name(),
                               Jit::Reuse::same_code, serial);
  }
  ~Dynamic() {
    if (c.kernel.fn) jit.remove(c.kernel.handle);
  }
  Dynamic(const Dynamic&) = delete;
  Dynamic& operator=(const Dynamic&) = delete;

  // Runs the kernel on `feeds` (binding the symbols from the inputs' shapes, passing the scratch
  // block the runtime would) and returns its outputs in graph-output order; nullopt when the
  // guard does not hold.
  // Region input i's tensor: a constant, or its feed.
  const Tensor& input(const std::vector<Tensor>& feeds, ValueId v) const {
    const Tensor& t = g.value(v).initializer;
    return t.defined()
               ? t
               : feeds.at(std::find(g.inputs.begin(), g.inputs.end(), v) - g.inputs.begin());
  }

  // The symbols bound from the inputs' shapes as the guard binds them; nullopt where it does not
  // hold.
  std::optional<std::vector<int64_t>> bind(const std::vector<Tensor>& feeds) const {
    std::vector<int64_t> syms(sd.symbols.size(), 0);
    std::vector<bool> bound(sd.symbols.size(), false);
    std::vector<const SymShape*> patterns;
    std::vector<const Shape*> actual;
    for (ValueId v : r.inputs) {
      if (!sd.values[v]) return std::nullopt;
      patterns.push_back(&*sd.values[v]);
      actual.push_back(&input(feeds, v).shape());
    }
    if (!bind_all(patterns, actual, syms, bound)) return std::nullopt;
    return syms;
  }

  // Whether what the kernels need beyond the guard (dynamic_needs) holds for `syms`, as the
  // runtime checks it.
  bool needs_hold(const std::vector<int64_t>& syms) const {
    for (int32_t node : r.nodes)
      for (const auto& [d, least] : dynamic_needs(g, g.nodes[node], sd.values))
        if (d.value(syms) < least) return false;
    return true;
  }

  std::optional<std::vector<Tensor>> run(const std::vector<Tensor>& feeds, int threads = 1) {
    REQUIRE_MESSAGE(compiled(c), c.why_not);
    const std::optional<std::vector<int64_t>> bound = bind(feeds);
    if (!bound || !needs_hold(*bound)) return std::nullopt;
    std::vector<int64_t> syms = *bound;
    std::vector<void*> buffers;
    for (ValueId v : r.inputs) buffers.push_back(const_cast<void*>(input(feeds, v).raw_data()));
    std::vector<Tensor> outs;
    for (ValueId v : r.outputs) {
      outs.emplace_back(g.value(v).dtype, eval_shape(*sd.values[v], syms));
      buffers.push_back(outs.back().raw_data());
    }
    // The scratch block, sized as the runtime sizes it.
    const int64_t scratch = jit::scratch_need(c.scratch_bytes, c.scratch_sym, syms).value();
    std::vector<std::byte> block(static_cast<size_t>(scratch) + 64, std::byte{0xff});
    if (scratch > 0)
      buffers.push_back(
          reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(block.data()) + 63) / 64 * 64));
    KernelContext ctx(threads);
    c.kernel.fn(buffers.data(), syms.data(), &ctx);
    std::vector<Tensor> got;
    for (ValueId v : g.outputs)
      got.push_back(outs[std::find(r.outputs.begin(), r.outputs.end(), v) - r.outputs.begin()]);
    return got;
  }

  // run, then checks every output against the interpreter's: floats to rounding (vector math; a
  // region with contractions or row statistics sums in another order than the interpreter and
  // passes a looser rtol/atol), other dtypes exactly. False when the guard does not hold.
  bool run_and_check(const std::vector<Tensor>& feeds, int threads = 1, double rtol = 1e-6,
                     double atol = 1e-7) {
    const std::optional<std::vector<Tensor>> got = run(feeds, threads);
    if (!got) return false;
    const std::vector<Tensor> want = Interpreter(g).run(feeds);
    for (size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      REQUIRE((*got)[i].shape() == want[i].shape());
      if (is_float(want[i].dtype()))
        check_tensors_close((*got)[i], want[i], rtol, atol);
      else
        check_same((*got)[i], want[i]);
    }
    return true;
  }
};

}  // namespace sgraph::test::region
