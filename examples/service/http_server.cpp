#include "http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace sgraph::examples {

// The library listens with a backlog of 5 (fixed when Debian built it): 16 clients connecting at
// once then lose SYNs and wait a second to retry. Listening again on the bound socket (Linux
// updates the backlog) takes a deep queue.
struct Server : httplib::Server {
  void deepen_backlog() { ::listen(svr_sock_, SOMAXCONN); }
};

struct HttpServer::Impl {
  Service& service;
  HttpOptions options;
  Server server;
  int port = -1;

  Impl(Service& s, HttpOptions o) : service(s), options(std::move(o)) {}

  static void answer(httplib::Response& res, const ServiceResponse& r) {
    res.status = r.status;
    res.set_content(r.body, r.content_type.c_str());
  }

  void routes() {
    const size_t limit = service.options().max_body_bytes;
    int threads = options.threads;
    server.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
    server.set_keep_alive_max_count(size_t(1) << 30);  // clients keep their connection
    server.set_tcp_nodelay(true);  // a response is sent at once, not held for an ACK
    // Bodies over the limit: read and discarded (so the client, still sending, gets the 400
    // rather than a reset connection), up to 4x the limit; a body declared larger than that is
    // refused unread and the connection closed. Memory per request stays within the limit.
    const size_t drain = limit > (SIZE_MAX / 4) ? SIZE_MAX : 4 * limit;
    server.set_payload_max_length(drain);
    server.set_pre_routing_handler([this, drain](const httplib::Request& req,
                                                 httplib::Response& res) {
      if (!req.has_header("Content-Length")) return httplib::Server::HandlerResponse::Unhandled;
      const std::string& text = req.get_header_value("Content-Length");
      size_t n = 0;
      try {
        n = std::stoull(text);
      } catch (...) {
        n = SIZE_MAX;
      }
      if (n <= drain) return httplib::Server::HandlerResponse::Unhandled;
      answer(res,
             service.reject(400, "request body of " + text + " bytes exceeds the limit of " +
                                     std::to_string(service.options().max_body_bytes) + " bytes"));
      res.set_header("Connection", "close");  // its body is not read
      return httplib::Server::HandlerResponse::Handled;
    });

    server.Post(R"(/v1/models/([^/]+):predict)", [this, limit](const httplib::Request& req,
                                                               httplib::Response& res,
                                                               const httplib::ContentReader& read) {
      std::string body;
      size_t total = 0;
      read([&](const char* data, size_t n) {
        total += n;
        if (total <= limit) body.append(data, n);
        return true;
      });
      if (req.matches[1] != service.name()) {
        answer(res, service.reject(404, "no model '" + std::string(req.matches[1]) +
                                            "'; this server serves '" + service.name() + "'"));
      } else if (total > limit) {
        answer(res, service.reject(400, "request body of " + std::to_string(total) +
                                            " bytes exceeds the limit of " + std::to_string(limit) +
                                            " bytes"));
      } else {
        answer(res, service.predict(body));
      }
    });
    server.Get(
        R"(/v1/models/([^/:]+))", [this](const httplib::Request& req, httplib::Response& res) {
          if (req.matches[1] != service.name()) {
            answer(res, service.reject(404, "no model '" + std::string(req.matches[1]) +
                                                "'; this server serves '" + service.name() + "'"));
            return;
          }
          answer(res, service.describe());
        });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      answer(res, service.metrics());
    });
    server.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      answer(res, service.health());
    });
    // Unknown paths and methods, and the library's own refusals, get a JSON error too.
    server.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      int status = res.status;
      std::string what = status == 404 ? "no such endpoint: " + req.method + " " + req.path
                         : status == 413
                             ? "request body exceeds the limit of " +
                                   std::to_string(service.options().max_body_bytes) + " bytes"
                             : "bad request: " + req.method + " " + req.path;
      answer(res, service.reject(status, what));
    });
    server.set_exception_handler(
        [this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "internal error";
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what += std::string(": ") + e.what();
          } catch (...) {
          }
          answer(res, service.reject(500, what));
        });
  }
};

HttpServer::HttpServer(Service& service, HttpOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {
  impl_->routes();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  Impl& m = *impl_;
  if (m.options.port == 0) {
    m.port = m.server.bind_to_any_port(m.options.host);
  } else {
    m.port = m.server.bind_to_port(m.options.host, m.options.port) ? m.options.port : -1;
  }
  SG_CHECK(m.port > 0) << "cannot listen on " << m.options.host << ":" << m.options.port;
  m.server.deepen_backlog();
  return m.port;
}

void HttpServer::listen() {
  SG_CHECK(impl_->port > 0) << "HttpServer::listen before bind";
  impl_->server.listen_after_bind();
}

void HttpServer::stop() {
  if (impl_ && impl_->server.is_running()) impl_->server.stop();
}

bool HttpServer::running() const { return impl_->server.is_running(); }

}  // namespace sgraph::examples
