// The server's life (see http_server.h): start the listeners and I/O threads, load the
// startup models, drain and stop. Connections are in http_session.cpp.
#include <sys/resource.h>

#include "serve/http_server.h"
#include "serve/http_server_impl.h"

namespace rc::serve {

// Declared in http_checks.h; here, where Asio is, so that no other serve file needs Boost.
bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(host, ec);
  return !ec && addr.is_loopback();
}

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

void Server::Impl::close_idle_connections() {
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard lock(sessions_mu);
    live.reserve(sessions.size());
    for (auto& [id, weak] : sessions)
      if (auto s = weak.lock()) live.push_back(std::move(s));
  }
  for (auto& s : live) s->close_if_idle();
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
