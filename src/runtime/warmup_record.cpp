#include "runtime/warmup_record.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "ops/op.h"

namespace sgraph {

namespace {

using Json = nlohmann::ordered_json;
constexpr const char* kFormat = "sgraph.warmup_record/1";

// FNV-1a, 64-bit: a fingerprint, not a defence against a crafted file.
struct Hasher {
  uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  void str(std::string_view s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  void u64(uint64_t x) { bytes(&x, sizeof x); }
  void tensor(const Tensor& t) {
    u64(t.defined() ? static_cast<uint64_t>(onnx_dtype_code(t.dtype())) : 0);
    if (!t.defined()) return;
    u64(t.shape().size());
    for (int64_t d : t.shape()) u64(static_cast<uint64_t>(d));
    bytes(t.raw_data(), t.nbytes());
  }
};

void hash_graph(Hasher& h, const Graph& g, const std::vector<std::string>& node_names,
                const std::vector<std::string>& value_names);

void hash_attr(Hasher& h, const AttrValue& v) {
  h.u64(v.index());
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
          h.bytes(&x, sizeof x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          h.str(x);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          h.tensor(x);
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Graph>>) {
          if (!x) return h.u64(0);
          std::vector<std::string> nodes, values;
          for (const Node& n : x->nodes) nodes.push_back(n.name);
          for (const ValueInfo& vi : x->values) values.push_back(vi.name);
          hash_graph(h, *x, nodes, values);
        } else if constexpr (std::is_same_v<T, Strings>) {
          h.u64(x.size());
          for (const std::string& s : x) h.str(s);
        } else {
          h.u64(x.size());
          for (const auto& e : x) h.bytes(&e, sizeof e);
        }
      },
      v);
}

void hash_graph(Hasher& h, const Graph& g, const std::vector<std::string>& node_names,
                const std::vector<std::string>& value_names) {
  const auto name = [&](ValueId v) -> std::string_view {
    return v == kNoValue ? std::string_view("<absent>") : value_names[v];
  };
  h.u64(g.inputs.size());
  for (ValueId v : g.inputs) {
    h.str(name(v));
    h.u64(static_cast<uint64_t>(g.values[v].dtype));
  }
  h.u64(g.outputs.size());
  for (ValueId v : g.outputs) h.str(name(v));
  std::vector<size_t> order(g.nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return node_names[a] < node_names[b]; });
  h.u64(order.size());
  for (size_t i : order) {
    const Node& n = g.nodes[i];
    h.str(node_names[i]);
    h.str(op_name(n.op));
    h.u64(n.inputs.size());
    for (ValueId v : n.inputs) h.str(name(v));
    h.u64(n.outputs.size());
    for (ValueId v : n.outputs) h.str(name(v));
    for (const auto& [key, value] : n.attrs) {
      h.str(key);
      hash_attr(h, value);
    }
  }
  std::vector<size_t> constants;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].initializer.defined()) constants.push_back(v);
  std::sort(constants.begin(), constants.end(),
            [&](size_t a, size_t b) { return value_names[a] < value_names[b]; });
  h.u64(constants.size());
  for (size_t v : constants) {
    h.str(value_names[v]);
    h.tensor(g.values[v].initializer);
  }
}

std::string hex(uint64_t x) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

Json shape_json(const Shape& s) { return Json(s); }

Shape shape_of(const Json& j) {
  SG_CHECK(j.is_array()) << "a shape is not a list";
  Shape s;
  for (const Json& d : j) {
    SG_CHECK(d.is_number_integer() && d.get<int64_t>() >= 0) << "a dim is not a size";
    s.push_back(d.get<int64_t>());
  }
  return s;
}

std::string to_hex(const void* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s(2 * n, '0');
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[b[i] >> 4];
    s[2 * i + 1] = digits[b[i] & 15];
  }
  return s;
}

void from_hex(std::string_view s, void* p, size_t n) {
  SG_CHECK(s.size() == 2 * n) << "a kept value's data has " << s.size() / 2 << " bytes, not " << n;
  auto* b = static_cast<unsigned char*>(p);
  const auto digit = [](char c) {
    const bool dec = c >= '0' && c <= '9', hexa = c >= 'a' && c <= 'f';
    SG_CHECK(dec || hexa) << "a kept value's data is not hexadecimal";
    return dec ? c - '0' : c - 'a' + 10;
  };
  for (size_t i = 0; i < n; ++i)
    b[i] = static_cast<unsigned char>(digit(s[2 * i]) * 16 + digit(s[2 * i + 1]));
}

// The record's checksum: of its content with "checksum" empty.
std::string checksum(Json j) {
  j["checksum"] = "";
  Hasher h;
  h.str(j.dump());
  return hex(h.h);
}

}  // namespace

uint64_t graph_fingerprint(const Graph& g, const std::vector<std::string>& node_names,
                           const std::vector<std::string>& value_names) {
  SG_CHECK(node_names.size() == g.nodes.size() && value_names.size() == g.values.size())
      << "names for " << node_names.size() << " nodes and " << value_names.size()
      << " values, for a graph of " << g.nodes.size() << " and " << g.values.size();
  Hasher h;
  hash_graph(h, g, node_names, value_names);
  return h.h;
}

std::string save_warmup_record(const Graph& g, const ShapeTracker& tracker,
                               const OpProfiler& profiler,
                               const std::vector<std::string>& node_names,
                               const std::vector<std::string>& value_names, bool planned) {
  const ShapeTracker::State st = tracker.state();
  Json j;
  j["format"] = kFormat;
  j["graph"] = hex(graph_fingerprint(g, node_names, value_names));
  j["runs"] = st.runs;
  if (!planned) j["warming_up"] = true;
  Json nodes = Json::array();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ShapeTracker::OpRecord& r = st.ops[i];
    const OpProfile& p = profiler.profile(static_cast<int32_t>(i));
    Json n;
    n["name"] = node_names[i];
    n["op"] = op_name(g.nodes[i].op);
    Json in = Json::array();
    for (size_t k = 0; k < r.in.size(); ++k)
      in.push_back(r.in_present[k] ? shape_json(r.in[k]) : Json());
    n["in"] = std::move(in);
    Json out = Json::array();
    for (const Shape& s : r.out) out.push_back(shape_json(s));
    n["out"] = std::move(out);
    n["last_run"] = r.last_run;
    if (r.change) n["change"] = Json::array({r.change->run, r.change->what});
    n["ns"] = profiler.samples()[i];
    n["bytes"] = Json::array({p.bytes_read, p.bytes_written, p.allocations});
    nodes.push_back(std::move(n));
  }
  j["nodes"] = std::move(nodes);
  Json values = Json::array();
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (st.seen[v].empty() && !st.values[v].defined()) continue;
    Json x;
    x["name"] = value_names[v];
    Json seen = Json::array();
    for (const ShapeTracker::Seen& s : st.seen[v]) {
      Json one = Json::array({s.run, shape_json(s.shape)});
      if (s.ints) one.push_back(Json(*s.ints));
      seen.push_back(std::move(one));
    }
    x["seen"] = std::move(seen);
    if (const Tensor& t = st.values[v]; t.defined())
      x["kept"] = Json::array(
          {onnx_dtype_code(t.dtype()), shape_json(t.shape()), to_hex(t.raw_data(), t.nbytes())});
    values.push_back(std::move(x));
  }
  j["values"] = std::move(values);
  j["checksum"] = checksum(j);
  return j.dump();
}

bool load_warmup_record(const Graph& g, std::string_view text, ShapeTracker& tracker,
                        OpProfiler& profiler) {
  try {
    const Json j = Json::parse(text);  // throws on malformed JSON
    SG_CHECK(j.is_object() && j.value("format", "") == kFormat)
        << "not a warm-up record of this format (" << kFormat << ")";
    SG_CHECK(j.value("checksum", "") == checksum(j)) << "its checksum does not match: damaged";
    std::vector<std::string> node_names, value_names;
    std::map<std::string_view, size_t> node_of, value_of;
    for (const Node& n : g.nodes) node_names.push_back(n.name);
    for (const ValueInfo& v : g.values) value_names.push_back(v.name);
    for (size_t i = 0; i < node_names.size(); ++i)
      SG_CHECK(node_of.emplace(node_names[i], i).second)
          << "the graph has two nodes named '" << node_names[i] << "'";
    for (size_t v = 0; v < value_names.size(); ++v)
      SG_CHECK(value_of.emplace(value_names[v], v).second)
          << "the graph has two values named '" << value_names[v] << "'";
    SG_CHECK(j.value("graph", "") == hex(graph_fingerprint(g, node_names, value_names)))
        << "made for another graph (the model was changed after the record was made)";

    ShapeTracker::State st;
    st.runs = j.at("runs").get<int>();
    st.ops.resize(g.nodes.size());
    st.values.resize(g.values.size());
    st.seen.resize(g.values.size());
    std::vector<std::vector<int64_t>> samples(g.nodes.size());
    std::vector<OpProfile> figures(g.nodes.size());
    std::vector<bool> done(g.nodes.size(), false);
    for (const Json& n : j.at("nodes")) {
      const std::string name = n.at("name").get<std::string>();
      const auto it = node_of.find(name);
      SG_CHECK(it != node_of.end()) << "node '" << name << "' is not in the graph";
      const size_t i = it->second;
      SG_CHECK(!done[i]) << "node '" << name << "' is recorded twice";
      done[i] = true;
      SG_CHECK(n.at("op").get<std::string>() == op_name(g.nodes[i].op))
          << "node '" << name << "' is a " << op_name(g.nodes[i].op) << " in the graph";
      ShapeTracker::OpRecord& r = st.ops[i];
      for (const Json& s : n.at("in")) {
        r.in_present.push_back(!s.is_null());
        r.in.push_back(s.is_null() ? Shape{} : shape_of(s));
      }
      for (const Json& s : n.at("out")) r.out.push_back(shape_of(s));
      r.last_run = n.at("last_run").get<int>();
      if (n.contains("change"))
        r.change = ShapeTracker::Change{n.at("change").at(0).get<int>(),
                                        n.at("change").at(1).get<std::string>()};
      samples[i] = n.at("ns").get<std::vector<int64_t>>();
      SG_CHECK(std::all_of(samples[i].begin(), samples[i].end(), [](int64_t t) { return t >= 0; }))
          << "node '" << name << "': a negative time";
      const Json& b = n.at("bytes");
      figures[i].bytes_read = b.at(0).get<int64_t>();
      figures[i].bytes_written = b.at(1).get<int64_t>();
      figures[i].allocations = b.at(2).get<int>();
      SG_CHECK(figures[i].bytes_read >= 0 && figures[i].bytes_written >= 0 &&
               figures[i].allocations >= 0)
          << "node '" << name << "': a negative byte or allocation count";
    }
    for (size_t i = 0; i < done.size(); ++i)
      SG_CHECK(done[i]) << "node '" << node_names[i] << "' is not recorded";
    for (const Json& x : j.at("values")) {
      const std::string name = x.at("name").get<std::string>();
      const auto it = value_of.find(name);
      SG_CHECK(it != value_of.end()) << "value '" << name << "' is not in the graph";
      const size_t v = it->second;
      for (const Json& s : x.at("seen")) {
        std::optional<Ints> ints;
        if (s.size() > 2) {
          ints = s.at(2).get<Ints>();
          SG_CHECK(static_cast<int64_t>(ints->size()) <= ShapeTracker::kMaxKeptElements)
              << "value '" << name << "': a recorded value of " << ints->size() << " elements";
        }
        st.seen[v].push_back({s.at(0).get<int>(), shape_of(s.at(1)), std::move(ints)});
      }
      if (x.contains("kept")) {
        const Json& k = x.at("kept");
        const DType dt = dtype_from_onnx_code(k.at(0).get<int64_t>());
        const Shape shape = shape_of(k.at(1));
        int64_t numel = 1;
        for (int64_t d : shape) {
          SG_CHECK(d <= ShapeTracker::kMaxKeptElements) << "value '" << name << "' is too large";
          numel *= d;
          SG_CHECK(numel <= ShapeTracker::kMaxKeptElements)
              << "value '" << name << "' is too large";
        }
        Tensor t(dt, shape);
        from_hex(k.at(2).get<std::string>(), t.raw_data(), t.nbytes());
        st.values[v] = std::move(t);
      }
    }
    const bool planned = !j.value("warming_up", false);
    tracker.restore(std::move(st));
    profiler.restore(std::move(samples), figures);
    return planned;
  } catch (const nlohmann::json::exception& e) {
    SG_FAIL() << "warm-up record of graph '" << g.name << "': malformed (" << e.what() << ")";
  } catch (const Error& e) {
    SG_FAIL() << "warm-up record of graph '" << g.name << "': " << e.what();
  }
}

}  // namespace sgraph
