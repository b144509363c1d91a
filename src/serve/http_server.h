// The HTTP(S) server: Boost.Beast on Asio, asynchronous (a few I/O threads serve every
// connection; no thread per connection). Two listeners: the inference port (SageMaker,
// TorchServe inference, TEI, /metrics) and the management port (TorchServe management
// API, loopback by default). Slow or idle clients are bounded by a read timeout and a
// connection cap; bodies by a size limit. shutdown() drains: stop accepting, close idle
// connections, answer what is in flight, then stop.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "serve/auth.h"
#include "serve/backend.h"
#include "serve/batcher.h"
#include "serve/http_checks.h"  // is_loopback_host
#include "serve/model_registry.h"

namespace rc::serve {

struct ServerConfig {
  std::string host = "0.0.0.0";
  int port = 8080;  // 0: an ephemeral port (tests)
  std::string management_host = "127.0.0.1";
  int management_port = 8081;                        // -1: no management listener
  std::string tls_cert, tls_key;                     // both set: HTTPS on every listener
  std::string auth_token;                            // bearer token for the management API (= auth.management)
  AuthConfig auth;                                   // inference / management keys (serve/auth.h)
  bool sagemaker_multi_model = false;                // model admin on the inference port (serve/auth.h)
  size_t max_body_bytes = 6 * 1024 * 1024;           // SageMaker's payload limit
  std::chrono::milliseconds request_timeout{60000};  // queue + inference, -> 504
  std::chrono::milliseconds read_timeout{30000};     // one request's head+body, and keep-alive idle
  int max_connections = 4096;
  int http_threads = 1;     // I/O only: parse, route, send
  int handler_threads = 2;  // request work off the I/O threads: JSON, tokenizing, answers
  int inference_threads = 1;
  int compute_threads = 0;         // OpenMP pool per inference thread; 0 = physical cores
  bool truncate = true;            // long texts: truncate, or 413 when false
  int max_client_batch_size = 32;  // TEI's: inputs per /predict, /tokenize, /decode request
  // One answer (/tokenize, /decode, fill-mask): past it 413. And the answer bytes all
  // connections hold at once while their clients read them: past it an answer is replaced
  // by a 503 (40 clients that never read held 2 GB of /decode answers, issue 27 finding 4).
  size_t max_answer_bytes = size_t(64) << 20;
  size_t max_held_answer_bytes = size_t(512) << 20;
  std::chrono::milliseconds drain_timeout{25000};  // SIGTERM: in-flight requests get this long
  RegistryDefaults registry;
};

class Server {
 public:
  Server(ServerConfig config, BackendLoader loader);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listeners and starts the I/O and inference threads. Throws rc::Error when a
  // port cannot be bound, the TLS files cannot be read, or the management API would be
  // exposed beyond loopback without a token.
  void start();
  int port() const;             // the bound inference port
  int management_port() const;  // -1 when disabled

  ModelRegistry& registry();
  Metrics& metrics();
  // Loads models in the background; /ping answers 503 until all are loaded. A model that
  // fails to load is logged and, with exit_on_failure, stops the server.
  void load_startup_models(std::vector<ModelSpec> specs, bool exit_on_failure);
  bool startup_failed() const;

  void shutdown();  // graceful; any thread, also from a signal handler's strand; idempotent
  void wait();      // until the server stopped
  // start(); serve until SIGTERM/SIGINT; drain; return (the CLI's `roberta serve`).
  // From the signal on, the process has drain_timeout + 10 s to finish: past that hard
  // deadline (a load stuck on a dead file system, a wedged thread) it exits at once, rc 1.
  void run_until_signal();

  struct Impl;  // public only so the connection classes in http_server.cpp can name it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rc::serve
