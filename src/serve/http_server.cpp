// Beast/Asio listeners and connections (see http_server.h). One Session per connection,
// on its own strand; the router's answers come back to the strand via Exchange::deliver.
#include "serve/http_server.h"

#include <sys/resource.h>

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
#include "serve/routes.h"

namespace rc::serve {

namespace beast = boost::beast;
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
        // Model admin on the inference port is allowed keyless only on loopback, or in
        // SageMaker's multi-model mode (its platform is the container's only client).
        auth(effective_auth(config.auth, config.auth_token,
                            is_loopback_host(config.host) || config.sagemaker_multi_model)),
        scheduler(config.inference_threads, config.compute_threads, &metrics),
        registry(scheduler, metrics, std::move(loader), config.registry),
        router(RouterConfig{auth.management.key, !auth.management.empty(), config.truncate,
                            [this] { return startup_pending.load() == 0 && !startup_failed.load(); },
                            config.max_client_batch_size, config.max_connections},
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
};

// ---------------------------------------------------------------------------------------
template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool is_tls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  Session(Server::Impl& srv, Stream stream, bool management)
      : srv_(srv), stream_(std::move(stream)), timer_(stream_.get_executor()), management_(management) {
    srv_.connections.fetch_add(1);
    srv_.metrics.add_connections(1);
  }
  template <class... Args>
  Session(Server::Impl& srv, bool management, tcp::socket socket, ssl::context& ctx)
      : srv_(srv), stream_(std::move(socket), ctx), timer_(stream_.get_executor()), management_(management) {
    srv_.connections.fetch_add(1);
    srv_.metrics.add_connections(1);
  }
  ~Session() override {
    if (counted_) srv_.in_flight.fetch_sub(1);
    srv_.connections.fetch_sub(1);
    srv_.metrics.add_connections(-1);
    std::lock_guard lock(srv_.sessions_mu);
    srv_.sessions.erase(id_);
  }

  void start() {
    {
      std::lock_guard lock(srv_.sessions_mu);
      id_ = srv_.next_session++;
      srv_.sessions[id_] = this->weak_from_this();
    }
    auto self = this->shared_from_this();
    asio::dispatch(stream_.get_executor(), [self] {
      if constexpr (is_tls) {
        beast::get_lowest_layer(self->stream_).expires_after(self->srv_.config.read_timeout);
        self->stream_.async_handshake(ssl::stream_base::server, [self](beast::error_code ec) {
          if (!ec) self->do_read();
        });
      } else {
        self->do_read();
      }
    });
  }

  void close_if_idle() override {
    auto self = this->shared_from_this();
    asio::post(stream_.get_executor(), [self] {
      // Waiting for a next request that has not started: nobody loses anything.
      if (self->reading_ && self->parser_ && !self->parser_->got_some()) beast::get_lowest_layer(self->stream_).close();
    });
  }

 private:
  void do_read() {
    if (srv_.draining.load()) return do_close();
    parser_.emplace();
    parser_->body_limit(srv_.config.max_body_bytes);
    parser_->header_limit(64 * 1024);
    // One deadline for the whole request (head and body), so a client trickling bytes
    // (slowloris) cannot hold the connection longer than read_timeout.
    beast::get_lowest_layer(stream_).expires_after(srv_.config.read_timeout);
    reading_ = true;
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::on_header, this->shared_from_this()));
  }

  // The head is in: refuse what we cannot read before the body comes, and tell a client
  // that waits ("Expect: 100-continue", as curl does for bodies over 1 KB) to send it.
  void on_header(beast::error_code ec, size_t) {
    if (ec) return on_read(ec, 0);
    const auto& req = parser_->get();
    // Only chunked (and identity, its no-op) can be read: gzip and the like would be
    // taken for an empty or garbled body.
    if (auto te = req.find(http::field::transfer_encoding); te != req.end()) {
      if (auto bad = unsupported_transfer_coding(std::string_view(te->value().data(), te->value().size()))) {
        Request head;
        head.version(11);
        return reject(make_response(head, 501, error_body(501, "NotImplemented", *bad)));
      }
    }
    if (parser_->is_done()) return on_read({}, 0);
    if (beast::iequals(req[http::field::expect], "100-continue") && req.version() >= 11) {
      continue_ = std::make_shared<http::response<http::empty_body>>(http::status::continue_, req.version());
      return http::async_write(stream_, *continue_, [self = this->shared_from_this()](beast::error_code wec, size_t) {
        self->continue_.reset();
        if (wec) return;
        http::async_read(self->stream_, self->buffer_, *self->parser_,
                         beast::bind_front_handler(&Session::on_read, self));
      });
    }
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, this->shared_from_this()));
  }

  void on_read(beast::error_code ec, size_t) {
    reading_ = false;
    if (ec == http::error::end_of_stream) return do_close();
    if (ec) {
      const bool http_error = ec.category() == http::make_error_code(http::error::bad_method).category();
      if (ec == http::error::body_limit || ec == http::error::header_limit) {
        Request head;
        head.version(11);
        const int status = ec == http::error::body_limit ? 413 : 431;
        const std::string msg = ec == http::error::body_limit
                                    ? "request body exceeds " + std::to_string(srv_.config.max_body_bytes) + " bytes"
                                    : "request header too large";
        return reject(
            make_response(head, status, error_body(status, status == 413 ? "PayloadTooLarge" : "HeaderTooLarge", msg)));
      }
      if (http_error && parser_ && parser_->got_some()) {
        Request head;
        head.version(11);
        return reject(
            make_response(head, 400, error_body(400, "BadRequest", "malformed HTTP request: " + ec.message())));
      }
      return;  // timeout, reset, aborted: the connection just goes away
    }
    auto ex = std::make_shared<Exchange>();
    ex->request = parser_->release();
    ex->management = management_;
    ex->start = Clock::now();
    beast::get_lowest_layer(stream_).expires_never();  // the request timer below takes over
    current_ = ex;
    counted_ = true;
    srv_.in_flight.fetch_add(1);

    // Answers are matched to the request by sequence number, not by pointer: a late answer
    // for a request that timed out must never go to the next request on this connection.
    auto self = this->shared_from_this();
    const uint64_t seq = ++seq_;
    // Answers are built (serialised) on the handler pool, then sent from this connection's
    // strand: an I/O thread never formats a large answer.
    auto head = std::make_shared<Request>();
    head->version(ex->request.version());
    head->keep_alive(ex->request.keep_alive());
    ex->deliver = [self, seq, head](std::function<Response()> make) {
      asio::post(self->srv_.handlers, [self, seq, head, make = std::move(make)] {
        auto res = std::make_shared<Response>();
        try {
          *res = make();
        } catch (...) {
          *res = error_response(*head, std::current_exception());
        }
        asio::post(self->stream_.get_executor(), [self, seq, res] {
          if (self->seq_ != seq || !self->current_) return;  // answered already (timeout)
          self->send(std::move(*res));
        });
      });
    };
    timer_.expires_after(srv_.config.request_timeout);
    timer_.async_wait([self, seq](beast::error_code tec) {
      if (tec || self->seq_ != seq || !self->current_) return;
      if (self->current_->job) self->current_->job->cancelled.store(true);  // rows not yet run are skipped
      self->send(error_response(
          self->current_->request,
          std::make_exception_ptr(HttpError(504, "GatewayTimeout",
                                            "the request did not finish within " +
                                                std::to_string(self->srv_.config.request_timeout.count()) + " ms")),
          self->current_->style));
    });
    auto view = [](beast::string_view v) { return std::string_view(v.data(), v.size()); };
    const std::string_view target = view(ex->request.target());
    // One check for every route (serve/auth.h): a route added later is protected by default.
    const auto auth = ex->request.find(http::field::authorization);
    const AuthDecision decision = authorize(srv_.auth, management_, view(ex->request.method_string()), target,
                                            auth == ex->request.end() ? std::string_view() : view(auth->value()));
    if (decision.status != 0) {
      const char* type = decision.status == 401 ? "Unauthorized" : "Forbidden";
      Response res =
          error_response(ex->request, std::make_exception_ptr(HttpError(decision.status, type, decision.message)));
      if (decision.status == 401) res.set(http::field::www_authenticate, "Bearer");
      return ex->reply(std::move(res));
    }
    // Health probes answer at once on this thread; everything else (JSON, tokenizing,
    // registering) runs on the handler pool, so /ping stays prompt under any request.
    if (is_public_route(target)) return srv_.router.handle(ex);
    asio::post(srv_.handlers, [&srv = srv_, ex] { srv.router.handle(ex); });
  }

  void send(Response res) {
    // Later answers are dropped; resetting current_ also breaks the session <-> exchange
    // cycle (the exchange's deliver holds the session).
    std::shared_ptr<Exchange> ex = std::move(current_);
    current_.reset();
    timer_.cancel();
    if (ex) {
      const double seconds = std::chrono::duration<double>(Clock::now() - ex->start).count();
      srv_.metrics.observe_request(ex->route, int(res.result_int()), seconds);
      log::debug("serve", ex->request.method_string(), ' ', ex->request.target(), " -> ", res.result_int(), " in ",
                 seconds * 1000, " ms");
    }
    const bool keep = res.keep_alive() && !srv_.draining.load();
    res.keep_alive(keep);
    res_ = std::make_shared<Response>(std::move(res));
    beast::get_lowest_layer(stream_).expires_after(srv_.config.read_timeout);
    http::async_write(stream_, *res_, [self = this->shared_from_this(), keep](beast::error_code ec, size_t) {
      if (self->counted_) {
        self->counted_ = false;
        self->srv_.in_flight.fetch_sub(1);
      }
      self->res_.reset();
      if (ec) return;
      if (keep)
        self->do_read();
      else
        self->do_close();
    });
  }

  // An answer to a request we stop reading (too large, malformed): send it, then read and
  // discard what the client is still sending for a moment, so it sees our answer rather
  // than a reset.
  void reject(Response res) {
    res.keep_alive(false);
    res_ = std::make_shared<Response>(std::move(res));
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
    http::async_write(stream_, *res_, [self = this->shared_from_this()](beast::error_code ec, size_t) {
      self->res_.reset();
      if (ec) return;
      if constexpr (is_tls) {
        self->do_close();
      } else {
        beast::error_code ignored;
        beast::get_lowest_layer(self->stream_).socket().shutdown(tcp::socket::shutdown_send, ignored);
        self->drain_.resize(64 * 1024);
        beast::get_lowest_layer(self->stream_).expires_after(std::chrono::seconds(2));
        self->discard();
      }
    });
  }
  void discard() {
    beast::get_lowest_layer(stream_).async_read_some(asio::buffer(drain_),
                                                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                                                       if (!ec) self->discard();
                                                     });
  }

  void do_close() {
    if constexpr (is_tls) {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
    } else {
      beast::error_code ec;
      beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_send, ec);
    }
  }

  Server::Impl& srv_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<Exchange> current_;
  std::shared_ptr<Response> res_;
  std::shared_ptr<http::response<http::empty_body>> continue_;
  std::vector<char> drain_;
  asio::steady_timer timer_;
  bool management_ = false;
  bool reading_ = false;
  bool counted_ = false;
  uint64_t id_ = 0;
  uint64_t seq_ = 0;  // requests read on this connection
};

// ---------------------------------------------------------------------------------------
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
  void on_accept(beast::error_code ec, tcp::socket socket) {
    if (!acceptor_.is_open()) return;
    if (ec) {
      // Out of descriptors and the like: back off a little instead of spinning.
      log::warn("serve", "accept failed: ", ec.message());
      retry_.expires_after(std::chrono::milliseconds(50));
      retry_.async_wait([self = shared_from_this()](beast::error_code rec) {
        if (!rec && self->acceptor_.is_open()) self->do_accept();
      });
      return;
    }
    if (srv_.draining.load() || srv_.connections.load() >= srv_.config.max_connections) {
      boost::system::error_code ignored;
      socket.close(ignored);  // over the cap: refuse rather than starve the others
    } else if (srv_.tls) {
      std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(srv_, management_, std::move(socket), *srv_.tls)
          ->start();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(srv_, beast::tcp_stream(std::move(socket)), management_)->start();
    }
    do_accept();
  }

  Server::Impl& srv_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_;
  bool management_;
  int port_ = 0;
};

// ---------------------------------------------------------------------------------------
void Server::Impl::begin_drain() {
  for (auto& l : listeners) l->stop();
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard lock(sessions_mu);
    for (auto& [id, weak] : sessions)
      if (auto s = weak.lock()) live.push_back(std::move(s));
  }
  for (auto& s : live) s->close_if_idle();
  drain_deadline = Clock::now() + config.drain_timeout;
  drain_timer.emplace(ioc);
  poll_drain();
}

void Server::Impl::poll_drain() {
  if (in_flight.load() == 0 || Clock::now() >= drain_deadline) {
    if (in_flight.load() != 0)
      log::warn("serve", "drain timeout: ", in_flight.load(), " requests still in flight are dropped");
    std::lock_guard lock(state_mu);
    drained = true;
    state_cv.notify_all();
    return;
  }
  drain_timer->expires_after(std::chrono::milliseconds(20));
  drain_timer->async_wait([this](beast::error_code ec) {
    if (!ec) poll_drain();
  });
}

Server::Server(ServerConfig config, BackendLoader loader)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(loader))) {}

Server::~Server() {
  bool started;
  {
    std::lock_guard lock(impl_->state_mu);
    started = impl_->started;
  }
  if (started) {
    shutdown();
    wait();
  } else {
    impl_->scheduler.stop();
    impl_->registry.stop();
  }
}

ModelRegistry& Server::registry() { return impl_->registry; }
Metrics& Server::metrics() { return impl_->metrics; }
int Server::port() const { return impl_->bound_port; }
int Server::management_port() const { return impl_->bound_management_port; }
bool Server::startup_failed() const { return impl_->startup_failed.load(); }

void Server::start() {
  Impl& s = *impl_;
  const ServerConfig& c = s.config;
  if (c.management_port >= 0 && !is_loopback_host(c.management_host))
    RC_CHECK(!s.auth.management.empty(), Errc::invalid_argument, "the management API on ", c.management_host,
             " would be reachable beyond this machine without a token",
             "\nHINT: pass --auth-token (or set RC_AUTH_TOKEN), or keep --management-host 127.0.0.1");
  RC_CHECK(c.tls_cert.empty() == c.tls_key.empty(), Errc::invalid_argument,
           "HTTPS needs both --tls-cert and --tls-key");
  if (!c.tls_cert.empty()) {
    try {
      s.tls.emplace(ssl::context::tls_server);
      s.tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                         ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
      s.tls->use_certificate_chain_file(c.tls_cert);
      s.tls->use_private_key_file(c.tls_key, ssl::context::pem);
    } catch (const boost::system::system_error& e) {
      RC_THROW(Errc::invalid_argument, "cannot use TLS certificate '", c.tls_cert, "' / key '", c.tls_key,
               "': ", e.what(), "\nHINT: both must be PEM files; the key must match the certificate");
    }
  }
  // Many idle keep-alive connections need descriptors: take what the hard limit allows.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  auto inference = std::make_shared<Listener>(s, c.host, c.port, false);
  s.listeners.push_back(inference);
  s.bound_port = inference->port();
  if (c.management_port >= 0) {
    auto management = std::make_shared<Listener>(s, c.management_host, c.management_port, true);
    s.listeners.push_back(management);
    s.bound_management_port = management->port();
  }
  for (auto& l : s.listeners) l->run();
  for (int i = 0; i < std::max(1, c.http_threads); ++i)
    s.io_threads.emplace_back([&s] {
      try {
        s.ioc.run();
      } catch (const std::exception& e) {
        log::error("serve", "I/O thread stopped: ", e.what());
      }
    });
  {
    std::lock_guard lock(s.state_mu);
    s.started = true;
  }
  log::info("serve", "listening on ", c.host, ":", s.bound_port, s.tls ? " (https)" : " (http)",
            s.bound_management_port >= 0
                ? ", management on " + c.management_host + ":" + std::to_string(s.bound_management_port)
                : "",
            "; batch ", c.registry.limits.max_batch_size, " rows / ", c.registry.limits.max_batch_tokens, " tokens / ",
            c.registry.limits.max_batch_delay_ms, " ms, queue ", c.registry.limits.queue_size, ", inference threads ",
            c.inference_threads, ", http threads ", c.http_threads);
}

void Server::load_startup_models(std::vector<ModelSpec> specs, bool exit_on_failure) {
  Impl& s = *impl_;
  s.startup_pending.fetch_add(int(specs.size()));
  for (auto& spec : specs) {
    const std::string name = spec.name;
    s.registry.load_async(std::move(spec),
                          [this, &s, name, exit_on_failure](std::shared_ptr<LoadedModel>, std::exception_ptr error) {
                            if (error) {
                              try {
                                std::rethrow_exception(error);
                              } catch (const Error& e) {
                                log::error("serve", "cannot load model '", name, "': ", e.what(),
                                           e.hint().empty() ? "" : " (hint: " + e.hint() + ")");
                              } catch (const std::exception& e) {
                                log::error("serve", "cannot load model '", name, "': ", e.what());
                              }
                              s.startup_failed.store(true);
                              if (exit_on_failure) shutdown();
                            }
                            s.startup_pending.fetch_sub(1);
                          });
  }
}

void Server::shutdown() {
  Impl& s = *impl_;
  if (s.draining.exchange(true)) return;
  log::info("serve", "shutting down: no new connections, finishing ", s.in_flight.load(), " requests in flight");
  asio::post(s.ioc, [&s] { s.begin_drain(); });
}

void Server::wait() {
  Impl& s = *impl_;
  {
    std::unique_lock lock(s.state_mu);
    if (!s.started || s.finished) return;
    s.state_cv.wait(lock, [&] { return s.drained || s.finished; });
    if (s.finished) return;
    s.finished = true;
  }
  s.handlers.join();   // request work already queued finishes (bounded: drained, I/O still running)
  s.scheduler.stop();  // runs any rows still queued (their answers are already moot)
  // A load stuck on a dead file system must not hold the exit (finding 5): loads get what
  // is left of the drain time, at most 2 s (a model loaded at exit is of no use anyway),
  // then are abandoned.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(s.drain_deadline - Clock::now());
  s.registry.stop(std::clamp(left, std::chrono::milliseconds(100), std::chrono::milliseconds(2000)));
  s.work.reset();
  s.ioc.stop();
  for (auto& t : s.io_threads)
    if (t.joinable()) t.join();
  log::info("serve", "stopped");
}

void Server::run_until_signal() {
  Impl& s = *impl_;
  asio::signal_set signals(s.ioc, SIGINT, SIGTERM);
  const auto hard_deadline = s.config.drain_timeout + std::chrono::seconds(10);
  signals.async_wait([this, hard_deadline](beast::error_code ec, int sig) {
    if (!ec) {
      log::info("serve", "received ", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      // The hard deadline: whatever is stuck, the process is gone this long after the
      // signal (SageMaker and Kubernetes SIGKILL a little later anyway).
      std::thread([hard_deadline] {
        std::this_thread::sleep_for(hard_deadline);
        log::error("serve", "still not stopped ", hard_deadline.count(), " ms after the signal; exiting now");
        std::_Exit(1);
      }).detach();
      shutdown();
    }
  });
  std::signal(SIGPIPE, SIG_IGN);
  start();
  wait();
}

}  // namespace rc::serve
