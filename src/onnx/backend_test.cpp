#include "onnx/backend_test.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "onnx/import.h"
#include "onnx/tensor_proto.h"  // onnx_pb.h

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
  const bool exact = !is_float(want.dtype()) && !is_storage(want.dtype());
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
// The .pb file at `path`; where the model's value is bf16, a UINT16 tensor is read as bf16 bits
// (ONNX's test generator writes bfloat16 data that way).
Tensor load_test_tensor(const std::string& path, DType expect) {
  if (expect != DType::bf16) return load_tensor_pb(path);
  std::ifstream in(path, std::ios::binary);
  SG_CHECK(in) << path << ": cannot open file";
  std::stringstream buf;
  buf << in.rdbuf();
  onnx::TensorProto p;
  SG_CHECK(p.ParseFromString(buf.str())) << path << ": not a serialized onnx.TensorProto";
  if (p.data_type() == onnx::TensorProto::UINT16) p.set_data_type(onnx::TensorProto::BFLOAT16);
  try {
    return onnx_import::tensor_from_proto(p);
  } catch (Error& e) {
    throw e.in_file(path);
  }
}

std::vector<Tensor> load_numbered(const std::string& dir, const char* prefix,
                                  std::span<const DType> expect) {
  std::vector<Tensor> ts;
  for (size_t i = 0;; ++i) {
    const std::string p = dir + "/" + prefix + std::to_string(i) + ".pb";
    if (!fs::exists(p)) break;
    ts.push_back(load_test_tensor(p, i < expect.size() ? expect[i] : DType::undefined));
  }
  return ts;
}

std::vector<DType> dtypes_of(const Graph& g, const std::vector<ValueId>& values) {
  std::vector<DType> d;
  for (ValueId v : values) d.push_back(g.values[v].dtype);
  return d;
}
}  // namespace

std::vector<Tensor> load_inputs(const std::string& data_set_dir, std::span<const DType> expect) {
  return load_numbered(data_set_dir, "input_", expect);
}

std::vector<Tensor> load_outputs(const std::string& data_set_dir, std::span<const DType> expect) {
  return load_numbered(data_set_dir, "output_", expect);
}

std::vector<std::vector<Tensor>> load_data_set_inputs(const std::string& dir) {
  std::vector<std::vector<Tensor>> sets;
  for (const std::string& ds : data_sets(dir)) sets.push_back(load_inputs(ds));
  if (sets.empty()) {
    std::vector<Tensor> inputs = load_inputs(dir);
    if (!inputs.empty()) sets.push_back(std::move(inputs));
  }
  return sets;
}

namespace {

// The first unknown op of `nodes` and their subgraphs; a call of one of the model's local
// functions is known when its body's ops are (each function is looked into once).
template <class Nodes>
std::string unknown_op_in(const Nodes& nodes, const onnx::ModelProto& model,
                          std::vector<const onnx::FunctionProto*>& seen) {
  for (const onnx::NodeProto& n : nodes) {
    const onnx::FunctionProto* f = nullptr;
    for (const onnx::FunctionProto& candidate : model.functions())
      if (candidate.name() == n.op_type() &&
          (candidate.domain() == n.domain() ||
           (candidate.domain() == "ai.onnx" && n.domain().empty()) ||
           (candidate.domain().empty() && n.domain() == "ai.onnx")))
        f = &candidate;
    if (f != nullptr) {
      if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
      seen.push_back(f);
      if (std::string why = unknown_op_in(f->node(), model, seen); !why.empty()) return why;
    } else if (!onnx_import::knows_op(n.domain(), n.op_type())) {
      std::string why = "unsupported op '" + n.op_type() + "'";
      if (!n.domain().empty() && n.domain() != "ai.onnx")
        why += " from domain '" + n.domain() + "'";
      return why;
    }
    for (const onnx::AttributeProto& a : n.attribute()) {
      std::string why = a.has_g() ? unknown_op_in(a.g().node(), model, seen) : "";
      for (int k = 0; why.empty() && k < a.graphs_size(); ++k)
        why = unknown_op_in(a.graphs(k).node(), model, seen);
      if (!why.empty()) return why;
    }
  }
  return "";
}

// The ops of a report (and its subgraphs') outside every region, and regions without a kernel.
void outside(const Report& rep, std::vector<std::string>& out) {
  for (const OpReport& o : rep.ops)
    if (o.region < 0) out.push_back(std::string(op_name(o.op)) + ": " + o.reason);
  for (const RegionReport& r : rep.regions)
    if (!r.compiled) out.push_back("region not compiled: " + r.why_interpreted);
  for (const Report& sub : rep.subgraphs) outside(sub, out);
}

// Kernel calls, compilations and disk loads of a report and of its subgraphs' (If branches).
struct Counts {
  int64_t kernel_calls = 0, compilations = 0, disk_loads = 0;
};
Counts all_counts(const Report& r) {
  Counts c{r.kernel_calls, r.compilations, r.disk_loads};
  for (const Report& sub : r.subgraphs) {
    const Counts s = all_counts(sub);
    c.kernel_calls += s.kernel_calls;
    c.compilations += s.compilations;
    c.disk_loads += s.disk_loads;
  }
  return c;
}

// Runs data set `ds` through `session` and compares with its references.
DataSetResult run_data_set(Session& session, const std::string& ds, Tolerance tol, int pass) {
  DataSetResult r;
  r.name = fs::path(ds).filename().string();
  r.pass = pass;
  const Counts before = all_counts(session.report());
  try {
    const Graph& g = session.graph();
    const std::vector<Tensor> want = load_outputs(ds, dtypes_of(g, g.outputs));
    const std::vector<Tensor> got = session.run(load_inputs(ds, dtypes_of(g, g.inputs)));
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
  const Counts after = all_counts(session.report());
  r.kernel_calls = after.kernel_calls - before.kernel_calls;
  r.compilations = after.compilations - before.compilations;
  r.disk_loads = after.disk_loads - before.disk_loads;
  return r;
}

}  // namespace

std::string unknown_op(const std::string& model_path) {
  std::ifstream in(model_path, std::ios::binary);
  onnx::ModelProto model;
  if (!in || !model.ParseFromIstream(&in)) return "";
  std::vector<const onnx::FunctionProto*> seen;
  return unknown_op_in(model.graph().node(), model, seen);
}

std::vector<DataSetResult> run_backend_test(const std::string& dir, Tolerance tol,
                                            const SessionOptions& options, int passes,
                                            bool session_per_data_set) {
  return run_backend_test(load_onnx(dir + "/model.onnx"), dir, tol, options, passes,
                          session_per_data_set);
}

std::vector<ReplayResult> replay_backend_test(const Graph& graph, const std::string& dir,
                                              Tolerance tol, const SessionOptions& options) {
  return run_backend_test(graph, dir, tol, options, 1, true);
}

std::vector<DataSetResult> run_backend_test(const Graph& graph, const std::string& dir,
                                            Tolerance tol, const SessionOptions& options,
                                            int passes, bool session_per_data_set, Report* report) {
  std::vector<DataSetResult> results;
  const std::vector<std::string> sets = data_sets(dir);
  if (session_per_data_set) {
    for (const std::string& ds : sets) {
      Session session(graph, options);
      bool warmed = true;  // warm-up runs must not throw; only the served runs are compared
      for (int i = 0; i < options.warmup_runs && warmed; ++i) {
        try {
          session.run(load_inputs(ds, dtypes_of(graph, graph.inputs)));
        } catch (const Error& e) {
          warmed = false;
          DataSetResult r;
          r.name = fs::path(ds).filename().string();
          r.pass = 0;
          r.error = e.what();
          results.push_back(std::move(r));
        }
      }
      const Counts warm_up = all_counts(session.report());
      for (int pass = 1; warmed && pass <= passes; ++pass) {
        results.push_back(run_data_set(session, ds, tol, pass));
        outside(session.report(), results.back().outside);
        if (pass == 1) {
          results.back().compilations += warm_up.compilations;
          results.back().disk_loads += warm_up.disk_loads;
        }
      }
      if (report) *report = session.report();
    }
    return results;
  }
  Session session(graph, options);
  for (int pass = 1; pass <= passes; ++pass)
    for (const std::string& ds : sets) results.push_back(run_data_set(session, ds, tol, pass));
  if (report) *report = session.report();
  return results;
}

}  // namespace sgraph
