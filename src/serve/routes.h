// The HTTP routes: SageMaker (/ping, /invocations, multi-model /models), TorchServe
// (inference /predictions, management API on its own port), TEI (/predict, /tokenize) and
// /metrics. The router runs on an HTTP thread: it parses, tokenizes and enqueues; answers
// come back through the Exchange from the inference thread. error_response() is the one
// place that maps errors to HTTP statuses.
#pragma once

// Boost 1.74 asio/beast miss <utility> under GCC 12 in C++20 (std::exchange).
#include <utility>
#include <boost/beast/http.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "serve/batcher.h"
#include "serve/metrics.h"
#include "serve/model_registry.h"

namespace rc::serve {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

// One request and the way back to its connection. reply() may be called from any thread;
// the connection sends the first answer and drops later ones (a 504 sent on timeout makes
// the late inference result a no-op).
class Exchange {
 public:
  using Clock = std::chrono::steady_clock;
  Request request;
  bool management = false;   // arrived on the management port
  std::string route = "unmatched";  // route pattern, for metrics
  Clock::time_point start = Clock::now();
  std::shared_ptr<Job> job;  // set when inference is queued (cancelled on timeout)

  // Set by the connection: runs make() on the connection's thread and sends the result,
  // unless an answer was sent already.
  std::function<void(std::function<Response()> make)> deliver;
  void reply(Response res);
  void reply_later(std::function<Response()> make) { deliver(std::move(make)); }
};

struct RouterConfig {
  std::string auth_token;       // bearer token; empty = none
  bool require_auth_inference_admin = false;  // token on the inference port's POST/DELETE /models
  bool truncate = true;         // long texts: truncate (true) or 413
  std::function<bool()> ready;  // /ping: startup models loaded
};

class Router {
 public:
  Router(RouterConfig config, ModelRegistry& registry, Scheduler& scheduler, Metrics& metrics);
  // Never throws: every failure becomes an error answer.
  void handle(const std::shared_ptr<Exchange>& exchange);

 private:
  void dispatch(const std::shared_ptr<Exchange>& ex);
  void dispatch_management(const std::shared_ptr<Exchange>& ex);
  void invoke(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model, bool tei);
  void tokenize(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model);
  void register_model(const std::shared_ptr<Exchange>& ex, ModelSpec spec, bool torchserve);
  void check_auth(const Exchange& ex) const;

  RouterConfig config_;
  ModelRegistry& registry_;
  Scheduler& scheduler_;
  Metrics& metrics_;
};

// Builds a response with the JSON body and the request's HTTP version / keep-alive.
Response make_response(const Request& req, int status, std::string body,
                       const char* content_type = "application/json");
// The one mapping from an error to {"code","type","message"} and its status.
Response error_response(const Request& req, std::exception_ptr error);

}  // namespace rc::serve
