// sgraph_load: the checking load generator (load.h) against a running sgraph_serve.
//
//   sgraph_load MODEL.onnx --shapes "batch=2,seq=8;batch=1,seq=5" [--then SHAPES]...
//               [--host H] [--port P] [--name NAME] [--connections N] [--seconds S]
//               [--per-shape K] [--seed S] [--weights W1,W2,...] [--write-wrk FILE]
//
// Each --then adds a phase; the time is split evenly between phases, or by --weights. Exits 1 when
// any request failed or any response differed from the interpreter's. --write-wrk only writes the
// requests and expected outputs for wrk_check.lua and exits.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "load.h"

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "sgraph_load: %s\n"
               "usage: sgraph_load MODEL.onnx --shapes SHAPES [--then SHAPES]... [--host H]\n"
               "                   [--port P] [--name NAME] [--connections N] [--seconds S]\n"
               "                   [--per-shape K] [--seed S] [--weights W1,W2,...]\n"
               "                   [--write-wrk FILE]\n"
               "  SHAPES: symbol=size,... per shape, shapes separated by ';'\n",
               why.c_str());
  std::exit(2);
}

double number(const std::string& flag, const char* text) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (*text == '\0' || *end != '\0' || !(v >= 0)) usage(flag + " needs a non-negative number");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sgraph::examples;
  LoadOptions o;
  std::string wrk_file;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> const char* {
        if (i + 1 >= argc) usage("missing value after " + a);
        return argv[++i];
      };
      if (a == "--shapes" || a == "--then")
        o.phases.push_back(parse_shape_list(value()));
      else if (a == "--weights") {
        std::string text = value();
        o.phase_weights.clear();
        for (size_t at = 0; at <= text.size();) {
          size_t comma = std::min(text.find(',', at), text.size());
          o.phase_weights.push_back(number(a, text.substr(at, comma - at).c_str()));
          at = comma + 1;
        }
      } else if (a == "--host")
        o.host = value();
      else if (a == "--port")
        o.port = int(number(a, value()));
      else if (a == "--name")
        o.name = value();
      else if (a == "--connections")
        o.connections = int(number(a, value()));
      else if (a == "--seconds")
        o.seconds = number(a, value());
      else if (a == "--per-shape")
        o.requests_per_shape = int(number(a, value()));
      else if (a == "--seed")
        o.seed = uint64_t(number(a, value()));
      else if (a == "--write-wrk")
        wrk_file = value();
      else if (a.rfind("--", 0) == 0)
        usage("unknown option " + a);
      else if (o.model.empty())
        o.model = a;
      else
        usage("a second model " + a);
    }
    if (o.model.empty()) usage("no model given");
    if (o.phases.empty()) usage("no --shapes given");
    if (o.connections < 1 || o.requests_per_shape < 1) usage("counts must be at least 1");
    auto requests = prepare_requests(o);
    if (!wrk_file.empty()) {
      write_wrk_data(wrk_file, o, requests);
      std::printf("sgraph_load: wrote %s\n", wrk_file.c_str());
      return 0;
    }
    LoadResult r = run_load(o, requests);
    std::fputs(r.to_text(o).c_str(), stdout);
    return r.errors == 0 && r.mismatches == 0 && r.requests > 0 ? 0 : 1;
  } catch (const std::exception& e) {  // sgraph::Error, or a system or library failure
    std::fprintf(stderr, "sgraph_load: %s\n", e.what());
    return 1;
  }
}
