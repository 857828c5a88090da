// Shared pieces of the `sgraph` command-line program: argument parsing, the commands' entry
// points, and random inputs. Each command lives in its own cmd_<name>.cpp.
#pragma once

#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sgraph/graph.h"

namespace sgraph::cli {

// Bad command-line usage (unknown option, missing argument, a value that does not parse): main
// prints the message and the usage, and exits with 2. Everything else is an sgraph::Error.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A command's arguments: positionals, and `--name VALUE` (or `--name=VALUE`) options in order.
struct Args {
  std::string command;
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;

  std::vector<std::string> all(std::string_view name) const;  // every value of a repeatable option
  // The last value of an option parsed as a number, or `dflt` when absent.
  double number(std::string_view name, double dflt) const;
  int64_t integer(std::string_view name, int64_t dflt, int64_t min) const;
};

// `accepted` lists the option names (e.g. "--iters") the command takes with a value, `flags`
// those it takes without one (recorded with an empty value).
Args parse_args(std::string command, const std::vector<std::string>& argv,
                const std::vector<std::string_view>& accepted,
                const std::vector<std::string_view>& flags = {});

// "2x3x224x224" -> {2, 3, 224, 224}; "" is a scalar. Throws UsageError naming `what` otherwise.
Shape parse_shape(const std::string& text, const std::string& what);

// The disk cache directory for a command's sessions: --cache-dir DIR, none with --no-cache, else
// $SGRAPH_CACHE_DIR when set ("" = none), else $XDG_CACHE_HOME/sgraph or ~/.cache/sgraph.
std::string tool_cache_dir(const Args& args);

// Loads an ONNX model: a .onnx file, or a test folder holding model.onnx.
Graph load_model(const std::string& path);

// Random values of a dtype: normal(0, scale) floats, integers in [0, 3], false/true for bool.
Tensor random_tensor(DType dtype, Shape shape, std::mt19937& rng, float scale = 1.0f);

int cmd_check(const Args& args);
int cmd_run(const Args& args);
int cmd_info(const Args& args);
int cmd_export(const Args& args);
int cmd_demo(const Args& args);
int cmd_train(const Args& args);

}  // namespace sgraph::cli
