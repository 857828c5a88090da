#include "onnx/backend_test.h"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "sgraph/onnx.h"
#include "sgraph/session.h"

namespace fs = std::filesystem;

namespace sgraph {

Comparison compare_tensors(const Tensor& got, const Tensor& want, Tolerance tol) {
  Comparison c;
  std::ostringstream why;
  if (got.dtype() != want.dtype()) {
    why << "dtype " << dtype_name(got.dtype()) << ", expected " << dtype_name(want.dtype());
  } else if (got.shape() != want.shape()) {
    why << "shape " << shape_str(got.shape()) << ", expected " << shape_str(want.shape());
  }
  if (!why.str().empty()) {
    c.ok = false;
    c.why = why.str();
    return c;
  }
  const bool exact = !is_float(want.dtype());
  int64_t worst = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.at_double(i), w = want.at_double(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    const double abs = std::isnan(g) != std::isnan(w) ? INFINITY : std::abs(g - w);
    const double rel = abs / std::max(std::abs(w), tol.atol);  // near 0, relative to atol
    if (!(abs == 0 || (std::isinf(w) && g == w))) {
      c.max_abs = std::max(c.max_abs, abs);
      c.max_rel = std::max(c.max_rel, rel);
    }
    const bool bad = exact ? g != w : !(abs <= tol.atol + tol.rtol * std::abs(w) || g == w);
    if (bad && c.ok) {
      c.ok = false;
      worst = i;
    }
  }
  if (!c.ok) {
    why << "element " << worst << " is " << got.at_double(worst) << ", expected "
        << want.at_double(worst);
    c.why = why.str();
  }
  return c;
}

std::vector<std::string> data_sets(const std::string& dir) {
  std::vector<std::string> sets;
  for (int k = 0; fs::is_directory(dir + "/test_data_set_" + std::to_string(k)); ++k)
    sets.push_back(dir + "/test_data_set_" + std::to_string(k));
  return sets;
}

namespace {
std::vector<Tensor> load_numbered(const std::string& dir, const char* prefix) {
  std::vector<Tensor> ts;
  for (int i = 0;; ++i) {
    const std::string p = dir + "/" + prefix + std::to_string(i) + ".pb";
    if (!fs::exists(p)) break;
    ts.push_back(load_tensor_pb(p));
  }
  return ts;
}
}  // namespace

std::vector<Tensor> load_inputs(const std::string& data_set_dir) {
  return load_numbered(data_set_dir, "input_");
}

namespace {

// Kernel calls of a report and of its subgraphs' (If branches) reports.
int64_t all_kernel_calls(const Report& r) {
  int64_t n = r.kernel_calls;
  for (const Report& sub : r.subgraphs) n += all_kernel_calls(sub);
  return n;
}

// Runs data set `ds` through `session` and compares with its references.
DataSetResult run_data_set(Session& session, const std::string& ds, Tolerance tol, int pass) {
  DataSetResult r;
  r.name = fs::path(ds).filename().string();
  r.pass = pass;
  const int64_t calls_before = all_kernel_calls(session.report());
  try {
    const std::vector<Tensor> want = load_numbered(ds, "output_");
    const std::vector<Tensor> got = session.run(load_inputs(ds));
    SG_CHECK(got.size() == want.size())
        << "the model has " << got.size() << " outputs, the data set " << want.size();
    r.ok = true;
    for (size_t j = 0; j < got.size(); ++j) {
      const Comparison c = compare_tensors(got[j], want[j], tol);
      r.max_abs = std::max(r.max_abs, c.max_abs);
      r.max_rel = std::max(r.max_rel, c.max_rel);
      if (!c.ok && r.ok) {
        r.ok = false;
        r.error = "output " + std::to_string(j) + ": " + c.why;
      }
    }
  } catch (const Error& e) {
    r.ok = false;
    r.error = e.what();
  }
  r.kernel_calls = all_kernel_calls(session.report()) - calls_before;
  return r;
}

}  // namespace

std::vector<DataSetResult> run_backend_test(const std::string& dir, Tolerance tol,
                                            const SessionOptions& options, int passes,
                                            bool session_per_data_set) {
  Graph graph = load_onnx(dir + "/model.onnx");
  std::vector<DataSetResult> results;
  const std::vector<std::string> sets = data_sets(dir);
  if (session_per_data_set) {
    for (const std::string& ds : sets) {
      Session session(graph, options);
      const std::vector<Tensor> in = load_inputs(ds);
      bool warmed = true;
      for (int i = 0; i < options.warmup_runs && warmed; ++i) {
        DataSetResult r = run_data_set(session, ds, tol, 0);  // warm-up: checked, not listed
        if (!r.ok) results.push_back(std::move(r));
        warmed = results.empty() || results.back().pass != 0;
      }
      for (int pass = 1; warmed && pass <= passes; ++pass)
        results.push_back(run_data_set(session, ds, tol, pass));
    }
    return results;
  }
  Session session(std::move(graph), options);
  for (int pass = 1; pass <= passes; ++pass)
    for (const std::string& ds : sets) results.push_back(run_data_set(session, ds, tol, pass));
  return results;
}

}  // namespace sgraph
