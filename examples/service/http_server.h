// The service's HTTP binding (Debian's cpp-httplib): routes the endpoints of service.h, enforces
// the body limit, and answers on a pool of threads, one per open connection, each calling the
// shared Session. cpp-httplib stays out of this header.
#pragma once

#include <memory>
#include <string>

#include "service.h"

namespace sgraph::examples {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (bind() says which)
  // Connections served at once (a keep-alive connection holds its thread while it is open): at
  // least the number of concurrent clients, or the rest wait for a free thread.
  int threads = 64;
};

class HttpServer {
 public:
  HttpServer(Service& service, HttpOptions options);
  ~HttpServer();
  // Binds the socket; returns the port. Throws sgraph::Error when it cannot.
  int bind();
  // Serves until stop() (from another thread). bind() first.
  void listen();
  void stop();
  bool running() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sgraph::examples
