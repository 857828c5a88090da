// The `sgraph` command-line program: dispatch and usage. Each command is in cmd_<name>.cpp.
//   sgraph check DIR... [--rtol R] [--atol A] [--warmup N] [--passes P] [--threads N] [--each]
//                [--report] [--require-kernels] [--no-jit]
//                                               run ONNX backend-test folders against references
//   sgraph run MODEL [--input NAME=FILE.pb|NAME=SHAPE]... [--iters N] [--warmup N] [--threads N]
//              [--shapes "x=1x8;x=1x17"] [--report] [--json FILE] [--dot FILE] [--bench-json FILE]
//              [--compile-horizon N]
//   sgraph info MODEL                           inputs, outputs, constants, op histogram
//   sgraph export MODEL [--warmup DIR] -o OUT   the planned model (regions as ONNX functions)
//   sgraph demo [MODEL_DIR] [--warmup N]        warm-up, stable/changed ops, regions, serving
//   sgraph train [--model mlp|cnn] [--epochs N] [--batch N] [--lr X] [--no-jit] ...
//                                               the digits training demo
//   sgraph version                              versions of sgraph and LLVM, and the host CPU
// check and run take --cache-dir DIR / --no-cache (the disk kernel cache; see kUsage).
#include <cstdio>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "cli.h"
#include "jit/host.h"
#include "sgraph/error.h"

namespace {

using namespace sgraph::cli;

const char kUsage[] = R"(usage: sgraph <command> [arguments]

commands:
  check DIR... [--rtol R] [--atol A] [--warmup N] [--passes P] [--threads N] [--each]
               [--require-kernels] [--no-jit] [--report]
      Run folders in the ONNX backend-test layout (model.onnx + test_data_set_<k>/input_<i>.pb,
      output_<j>.pb), or folders holding such folders, and compare every data set's outputs
      with its references (defaults: rtol 1e-3, atol 1e-4). The data sets run in order through
      one session: the first N (default 3) warm up, later ones run through the compiled regions
      (falling back when their shapes differ); --passes P runs them all P times over (default
      1), so a second pass serves the warm-up's own data sets; --threads N: at most N threads
      per compiled kernel (default: the machine's cores); --each gives every data set a
      session of its own, warmed up on it, so every shape is served compiled;
      --require-kernels fails a served data set that called no region kernel; --report prints
      each model's session report after its last run. Exits 1 if any fails.
  run MODEL [--input NAME=FILE.pb | --input NAME=SHAPE]... [--iters N]
            [--warmup N] [--threads N] [--shapes "x=1x8;x=1x17"] [--report] [--json FILE]
            [--dot FILE] [--bench-json FILE] [--compile-horizon N]
      Run an ONNX model on inputs from .pb files or random ones of a SHAPE such as 2x3x224x224
      (inputs not given need a fully static declared shape); print outputs and run times.
      --warmup N: profiled warm-up runs before planning (default 3); --threads N: at most N
      threads per compiled kernel (default: the machine's cores); --shapes: per-run input
      shapes, cycling, so warm-up sees shapes change; --report: print stable/changed ops and
      regions; --json/--dot FILE: write that report as JSON / Graphviz DOT; --bench-json FILE:
      write steady-state timing (median/min of the runs after warm-up and the first served run),
      peak resident memory and the last run's interpreted time per op, as JSON;
      --compile-horizon N: the compile budget, the calls the session is expected to serve: a
      region whose predicted saving over N calls cannot repay its compile runs interpreted and
      is compiled once it would have repaid it (default 0: every region compiled at once).
  info MODEL
      Graph name, opset, producer, inputs and outputs, node and constant counts, op histogram;
      for a planned model (written by export), its plan: regions, and nodes before and after.
  export MODEL [--warmup DIR] -o OUT.onnx [--threads N] [--no-compile]
      Warm a session up on DIR's data sets (test_data_set_<k>/input_<i>.pb; default: MODEL's own
      when MODEL is a test folder) and write the planned model: each region one node calling a
      model-local ONNX function that holds its ops, the warm-up record (stable/changed ops,
      shapes, symbols, profile) in the metadata. sgraph loads it planned, with no warm-up run;
      other ONNX tools run it as any model. Its kernels go into the disk cache too (a deploy step
      ships both), unless --no-compile.
  demo [MODEL_DIR] [--warmup N]
      The pipeline on the bundled example model (or a backend-test folder): warm-up runs, which
      ops stayed stable or changed, the regions planned, then every data set served and checked.
  train [--model mlp|cnn] [--epochs N] [--batch N] [--hidden N] [--lr X]
        [--optimizer adam|sgd] [--seed N] [--data FILE.csv.gz] [--no-jit]
      Train an MLP (64 hidden units by default) or, with --model cnn, a small CNN (two 3x3 convs
      with ReLU and 2x2 max pooling, then a linear layer) on the bundled 8x8 handwritten digits
      (80/20 split, batch 64 so each epoch ends with a smaller batch; defaults: 30 epochs, Adam
      lr 0.01): loss and test accuracy per epoch, then which ops of the training step stayed
      compiled, which fell back to the interpreter, how often, and compile counts.
  version
      Versions of sgraph and LLVM, and the host CPU.

check, run and export keep compiled kernels in a disk cache, so a second run of a model loads its
kernels instead of compiling them: --cache-dir DIR, or $SGRAPH_CACHE_DIR, or by default
$XDG_CACHE_HOME/sgraph (~/.cache/sgraph); --no-cache (or SGRAPH_CACHE_DIR="") turns it off.
  help
      This message.
)";

int version(const Args& args) {
  if (!args.positional.empty()) throw UsageError("version: takes no arguments");
  std::cout << "sgraph 0.1.0, LLVM " << sgraph::jit::llvm_version() << ", host CPU "
            << sgraph::jit::host_cpu() << "\n";
  return 0;
}

int help(const Args&) {
  std::cout << kUsage;
  return 0;
}

struct Command {
  const char* name;
  int (*run)(const Args&);
  std::vector<std::string_view> options;  // take a value
  std::vector<std::string_view> flags = {};
};

const Command kCommands[] = {
    {"check",
     cmd_check,
     {"--rtol", "--atol", "--warmup", "--passes", "--threads", "--cache-dir"},
     {"--no-jit", "--each", "--require-kernels", "--report", "--no-cache"}},
    {"run",
     cmd_run,
     {"--input", "--iters", "--warmup", "--threads", "--shapes", "--json", "--dot", "--bench-json",
      "--cache-dir", "--compile-horizon"},
     {"--report", "--no-cache"}},
    {"info", cmd_info, {}},
    {"export",
     cmd_export,
     {"--warmup", "-o", "--threads", "--cache-dir"},
     {"--no-compile", "--no-cache"}},
    {"demo", cmd_demo, {"--warmup"}},
    {"train",
     cmd_train,
     {"--model", "--epochs", "--batch", "--hidden", "--lr", "--optimizer", "--seed", "--data"},
     {"--no-jit"}},
    {"version", version, {}},
    {"help", help, {}},
};

int dispatch(const std::vector<std::string>& argv) {
  if (argv.empty()) throw UsageError("no command given");
  for (const Command& c : kCommands) {
    if (argv[0] != c.name) continue;
    const std::vector<std::string> rest(argv.begin() + 1, argv.end());
    return c.run(parse_args(c.name, rest, c.options, c.flags));
  }
  if (argv[0] == "--help" || argv[0] == "-h") return help(Args{});
  throw UsageError("unknown command '" + argv[0] + "'");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    std::cerr << "sgraph: " << e.what() << "\n\n" << kUsage;
    return 2;
  } catch (const sgraph::Error& e) {
    std::cerr << "sgraph: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "sgraph: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "sgraph: error: " << e.what() << "\n";
    return 1;
  }
}
