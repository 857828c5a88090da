// sgraph_serve: the HTTP inference server (service.h, http_server.h) on one ONNX model.
//
//   sgraph_serve MODEL.onnx [--name NAME] [--warmup DIR] [--host H] [--port P] [--threads N]
//                [--kernel-threads K] [--max-body BYTES] [--sync-compile] [--cache-dir DIR]
//
// Warms up from DIR's data sets when given (else the first requests are the warm-up), prints the
// plan, then serves until SIGINT or SIGTERM.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "http_server.h"
#include "service.h"

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "sgraph_serve: %s\n"
               "usage: sgraph_serve MODEL.onnx [--name NAME] [--warmup DIR] [--host H] [--port P]\n"
               "                    [--threads N] [--kernel-threads K] [--max-body BYTES]\n"
               "                    [--sync-compile] [--cache-dir DIR]\n",
               why);
  std::exit(2);
}

long parse_number(const char* flag, const char* text) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v < 0) {
    std::fprintf(stderr, "sgraph_serve: %s needs a non-negative number, got '%s'\n", flag, text);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sgraph::examples;
  ServiceOptions so;
  HttpOptions ho;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--name")
      so.name = value();
    else if (a == "--warmup")
      so.warmup_dir = value();
    else if (a == "--host")
      ho.host = value();
    else if (a == "--port")
      ho.port = int(parse_number("--port", value()));
    else if (a == "--threads")
      ho.threads = int(parse_number("--threads", value()));
    else if (a == "--kernel-threads")
      so.session.threads = int(parse_number("--kernel-threads", value()));
    else if (a == "--max-body")
      so.max_body_bytes = size_t(parse_number("--max-body", value()));
    else if (a == "--sync-compile")
      so.session.background_compile = false;
    else if (a == "--cache-dir")
      so.session.cache_dir = value();
    else if (a == "-h" || a == "--help")
      usage("serves an ONNX model over HTTP");
    else if (a.rfind("--", 0) == 0)
      usage(("unknown option " + a).c_str());
    else if (so.model.empty())
      so.model = a;
    else
      usage(("a second model " + a).c_str());
  }
  if (so.model.empty()) usage("no model given");
  if (ho.threads < 1) usage("--threads must be at least 1");

  // SIGINT/SIGTERM are waited for on a thread of their own (stop() is not for signal handlers).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  try {
    Service service(so);
    const sgraph::Graph& g = service.session().graph();
    std::printf("sgraph_serve: model '%s' (%s, %zu ops)\n", service.name().c_str(),
                so.model.c_str(), g.nodes.size());
    if (service.warmup_sets()) {
      service.session().wait_compiled();
      sgraph::Report r = service.session().report();
      int compiled = 0;
      for (const auto& reg : r.regions) compiled += reg.compiled;
      std::printf("  warmed up on %d data sets from %s: %zu regions, %d compiled (%.1f ms)\n",
                  service.warmup_sets(), so.warmup_dir.c_str(), r.regions.size(), compiled,
                  r.compile_ms_total);
    } else {
      std::printf("  the first %d requests are the warm-up\n", so.session.warmup_runs);
    }
    HttpServer http(service, ho);
    int port = http.bind();
    std::printf("  listening on http://%s:%d/v1/models/%s:predict (%d connection threads)\n",
                ho.host.c_str(), port, service.name().c_str(), ho.threads);
    std::fflush(stdout);
    std::atomic<bool> done{false};
    std::thread waiter([&] {
      int sig = 0;
      sigwait(&signals, &sig);
      // The server may not be running yet (a signal right at start): stop until it has returned.
      while (!done) {
        http.stop();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
    http.listen();
    done = true;
    pthread_kill(waiter.native_handle(), SIGTERM);  // releases the waiter if no signal came
    waiter.join();
    std::printf("sgraph_serve: stopped\n");
  } catch (const std::exception& e) {  // sgraph::Error, or a system or library failure
    std::fprintf(stderr, "sgraph_serve: %s\n", e.what());
    return 1;
  }
  return 0;
}
