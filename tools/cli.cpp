#include "cli.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>

#include "sgraph/onnx.h"

namespace sgraph::cli {

namespace {
template <class T>
bool parse_whole(std::string_view text, T& out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && p == end && !text.empty();
}
}  // namespace

std::vector<std::string> Args::all(std::string_view name) const {
  std::vector<std::string> values;
  for (const auto& [k, v] : options)
    if (k == name) values.push_back(v);
  return values;
}

double Args::number(std::string_view name, double dflt) const {
  const std::vector<std::string> values = all(name);
  if (values.empty()) return dflt;
  double v = 0;
  if (!parse_whole(values.back(), v) || !(v >= 0))
    throw UsageError(std::string(name) + " wants a non-negative number, got '" + values.back() +
                     "'");
  return v;
}

int64_t Args::integer(std::string_view name, int64_t dflt, int64_t min) const {
  const std::vector<std::string> values = all(name);
  if (values.empty()) return dflt;
  int64_t v = 0;
  if (!parse_whole(values.back(), v) || v < min)
    throw UsageError(std::string(name) + " wants an integer >= " + std::to_string(min) + ", got '" +
                     values.back() + "'");
  return v;
}

Args parse_args(std::string command, const std::vector<std::string>& argv,
                const std::vector<std::string_view>& accepted,
                const std::vector<std::string_view>& flags) {
  Args args;
  args.command = std::move(command);
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() < 2 || a[0] != '-') {
      args.positional.push_back(a);
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    if (std::find(flags.begin(), flags.end(), name) != flags.end()) {
      if (eq != std::string::npos) throw UsageError(args.command + ": " + name + " takes no value");
      args.options.emplace_back(name, "");
      continue;
    }
    if (std::find(accepted.begin(), accepted.end(), name) == accepted.end())
      throw UsageError(args.command + ": unknown option '" + name + "'");
    if (eq != std::string::npos) {
      args.options.emplace_back(name, a.substr(eq + 1));
    } else {
      if (i + 1 == argv.size()) throw UsageError(args.command + ": " + name + " needs a value");
      args.options.emplace_back(name, argv[++i]);
    }
  }
  return args;
}

Shape parse_shape(const std::string& text, const std::string& what) {
  Shape shape;
  if (text.empty()) return shape;
  int64_t elements = 1;
  for (size_t start = 0;;) {
    const size_t x = std::min(text.find('x', start), text.size());
    int64_t d = -1;
    if (!parse_whole(std::string_view(text).substr(start, x - start), d) || d < 0)
      throw UsageError(what + ": malformed shape '" + text +
                       "' (expected sizes separated by 'x', e.g. 2x3x224x224)");
    if (d > 0 && elements > (int64_t{1} << 40) / d)
      throw UsageError(what + ": shape '" + text + "' has too many elements");
    elements *= d;
    shape.push_back(d);
    if (x == text.size()) return shape;
    start = x + 1;
  }
}

std::string tool_cache_dir(const Args& args) {
  if (!args.all("--no-cache").empty()) return "";
  if (std::vector<std::string> dir = args.all("--cache-dir"); !dir.empty()) return dir.back();
  if (const char* env = std::getenv("SGRAPH_CACHE_DIR")) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/sgraph";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/sgraph";
  return "";
}

Graph load_model(const std::string& path) {
  if (!std::filesystem::is_directory(path)) return load_onnx(path);
  SG_CHECK(std::filesystem::exists(path + "/model.onnx"))
      << path << ": is a folder without a model.onnx (expected an ONNX model file)";
  return load_onnx(path + "/model.onnx");
}

Tensor random_tensor(DType dtype, Shape shape, std::mt19937& rng, float scale) {
  Tensor t(dtype, std::move(shape));
  visit_dtype(dtype, [&]<class T>() {
    T* p = t.data<T>();
    if constexpr (std::is_same_v<T, bool>) {
      std::bernoulli_distribution dist(0.5);
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
    } else if constexpr (std::is_floating_point_v<T>) {
      std::normal_distribution<T> dist(0, static_cast<T>(scale));
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
    } else {
      std::uniform_int_distribution<int> dist(0, 3);
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(dist(rng));
    }
  });
  return t;
}

}  // namespace sgraph::cli
