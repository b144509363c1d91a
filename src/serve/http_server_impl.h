// Internal to serve/http_server*.cpp: the server's state (Server::Impl), the connection
// interface the drain walks (SessionBase) and the Listener. Split from http_server.cpp by
// responsibility: http_session.cpp holds a connection's life (read, route, write, keep
// alive, idle and drain closes), http_server.cpp the server's (start, load, drain, stop).
// These two files and this header are the transport, the only serve code that includes
// Boost (Asio, Beast): the routes see serve/http_message.h's plain types, and
// tools/check_layers.py fails the build's layering test on a Boost include anywhere else.
#pragma once

#include <algorithm>
#include <atomic>
// Boost 1.74 asio/beast miss <utility> under GCC 12 in C++20 (std::exchange).
#include <utility>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "core/check.h"
#include "roberta/log.h"
#include "serve/http_checks.h"
#include "serve/http_error.h"
#include "serve/request.h"
#include "serve/http_server.h"
#include "serve/routes.h"

namespace rc::serve {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void close_if_idle() = 0;
};

struct Server::Impl {
  Impl(ServerConfig c, BackendLoader loader)
      : config(std::move(c)),
        // Model admin on the inference port only in SageMaker's multi-model mode (its
        // contract puts it there); everywhere else it is the management port's.
        auth(effective_auth(config.auth, config.auth_token, config.sagemaker_multi_model)),
        scheduler(config.inference_threads, config.compute_threads, &metrics),
        registry(scheduler, metrics, std::move(loader), config.registry),
        router(RouterConfig{auth, config.truncate,
                            [this] { return startup_pending.load() == 0 && !startup_failed.load(); },
                            config.max_client_batch_size, config.max_connections, config.max_answer_bytes},
               registry, scheduler, metrics),
        handlers(size_t(std::max(1, config.handler_threads))),
        work(asio::make_work_guard(ioc)) {}

  ServerConfig config;
  AuthConfig auth;
  // Declared before the io_context and the handler pool, so they outlive them: handlers
  // those destroy unrun (at shutdown) may hold the last reference to a session, whose
  // destructor updates these.
  std::atomic<int> connections{0};
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> held_answer_bytes{0};  // answers being written (config.max_held_answer_bytes)
  std::atomic<bool> draining{false};
  std::atomic<int> startup_pending{0};
  std::atomic<bool> startup_failed{false};

  std::mutex sessions_mu;
  std::unordered_map<uint64_t, std::weak_ptr<SessionBase>> sessions;
  uint64_t next_session = 0;

  Metrics metrics;
  Scheduler scheduler;
  ModelRegistry registry;
  Router router;
  asio::thread_pool handlers;  // request work, off the I/O threads (finding 1)
  asio::io_context ioc;
  std::optional<ssl::context> tls;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::vector<std::shared_ptr<class Listener>> listeners;
  std::vector<std::thread> io_threads;
  int bound_port = -1, bound_management_port = -1;

  std::mutex state_mu;
  std::condition_variable state_cv;
  bool started = false, drained = false, finished = false;
  std::optional<asio::steady_timer> drain_timer;
  Clock::time_point drain_deadline;

  void begin_drain();
  void poll_drain();
  // At the connection cap: asks every connection waiting for a request that has not begun
  // to close (as nginx drops keep-alive connections when it runs out), so idle ones cannot
  // keep new clients and health probes out until the read timeout.
  void close_idle_connections();
  // Connections taken past the cap while idle ones close (they close asynchronously).
  static constexpr int kOverCapSlack = 64;
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(Server::Impl& srv, const std::string& host, int port, bool management)
      : srv_(srv), acceptor_(srv.ioc), retry_(srv.ioc), management_(management) {
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
    RC_CHECK(!ec, Errc::invalid_argument, "--host '", host, "' is not an IP address (", ec.message(), ")");
    RC_CHECK(port >= 0 && port <= 65535, Errc::invalid_argument, "port ", port, " is out of range 0-65535");
    const tcp::endpoint endpoint(addr, static_cast<unsigned short>(port));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    RC_CHECK(!ec, Errc::io, "cannot listen on ", host, ":", port, ": ", ec.message(),
             "\nHINT: is another server on that port? pick one with --port / --management-port");
    port_ = acceptor_.local_endpoint().port();
  }
  int port() const { return port_; }
  void run() { do_accept(); }
  void stop() {
    asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
      boost::system::error_code ec;
      self->acceptor_.close(ec);
      self->retry_.cancel();
    });
  }

 private:
  void do_accept() {
    acceptor_.async_accept(asio::make_strand(srv_.ioc),
                           beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
  }
  // Starts a Session on the accepted socket (http_session.cpp, where Session is defined).
  void on_accept(beast::error_code ec, tcp::socket socket);

  Server::Impl& srv_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_;
  bool management_;
  int port_ = 0;
};

}  // namespace rc::serve
