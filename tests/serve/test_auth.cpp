// Authentication on every route but the health probes (serve/auth.h): API keys as TEI's
// --api-key / $API_KEY, TorchServe's key_file.json, case-insensitive scheme, constant-time
// comparison, keys never logged.
#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>

#include "roberta/log.h"
#include "serve/auth.h"
#include "serve/http_error.h"
#include "serve/routes.h"
#include "serve/serve_fixture.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;
Headers bearer(const std::string& key, const std::string& scheme = "Bearer") {
  return {{"Authorization", scheme + " " + key}};
}

}  // namespace

TEST(AuthUnit, BearerMatching) {
  const AuthKey k{"k3y-with-32-bytes-of-entropy-xyz", std::nullopt};
  EXPECT_TRUE(bearer_matches("Bearer k3y-with-32-bytes-of-entropy-xyz", k));
  EXPECT_TRUE(bearer_matches("bearer k3y-with-32-bytes-of-entropy-xyz", k));  // RFC 7235: any case
  EXPECT_TRUE(bearer_matches("BEARER   k3y-with-32-bytes-of-entropy-xyz ", k));
  EXPECT_FALSE(bearer_matches("Bearer k3y-with-32-bytes-of-entropy-xy", k));    // shorter
  EXPECT_FALSE(bearer_matches("Bearer k3y-with-32-bytes-of-entropy-xyzz", k));  // longer
  EXPECT_FALSE(bearer_matches("Bearer K3y-with-32-bytes-of-entropy-xyz", k));   // keys are case-sensitive
  EXPECT_FALSE(bearer_matches("Basic k3y-with-32-bytes-of-entropy-xyz", k));
  EXPECT_FALSE(bearer_matches("Bearerk3y-with-32-bytes-of-entropy-xyz", k));
  EXPECT_FALSE(bearer_matches("", k));
  EXPECT_FALSE(bearer_matches("Bearer ", AuthKey{}));  // no key configured matches nothing
  const AuthKey expired{"k", std::chrono::system_clock::now() - 1h};
  EXPECT_FALSE(bearer_matches("Bearer k", expired));
  EXPECT_TRUE(bearer_matches("Bearer k", AuthKey{"k", std::chrono::system_clock::now() + 1h}));
}

TEST(AuthUnit, PublicAndAdminRoutes) {
  for (const char* p : {"/ping", "/health", "/v2/health/live", "/v2/health/ready", "/ping?x=1", "/health/"})
    EXPECT_TRUE(is_public_route(p)) << p;
  for (const char* p :
       {"/metrics", "/predict", "/invocations", "/v2/health", "/pingx", "/", "/info", "/api-doc/openapi.json"})
    EXPECT_FALSE(is_public_route(p)) << p;
  EXPECT_TRUE(is_model_admin_route("POST", "/models"));
  EXPECT_TRUE(is_model_admin_route("DELETE", "/models/m"));
  EXPECT_TRUE(is_model_admin_route("PUT", "/models/m?min_worker=2"));
  EXPECT_TRUE(is_model_admin_route("PUT", "/models/m/1.0/set-default"));
  EXPECT_FALSE(is_model_admin_route("POST", "/models/m/invoke"));
  EXPECT_FALSE(is_model_admin_route("GET", "/models"));
  EXPECT_FALSE(is_model_admin_route("POST", "/predictions/m"));
}

// Authorisation sees the path the router matches (routes.h route_path), however it is spelled.
TEST(AuthUnit, RoutePathIsWhatTheRouterMatches) {
  EXPECT_EQ(route_path("/models"), "/models");
  EXPECT_EQ(route_path("//models/"), "/models");
  EXPECT_EQ(route_path("/%6dodels?x=1"), "/models");
  EXPECT_EQ(route_path("http://host:8080/models/a?b"), "/models/a");
  EXPECT_EQ(route_path("HTTPS://host"), "/");
  EXPECT_EQ(route_path("/"), "/");
  EXPECT_EQ(route_path("/models/a%2Finvoke"), "/models/a%2Finvoke");  // one segment, as the router sees it
  EXPECT_EQ(route_path("/models/100%25"), "/models/100%25");
  EXPECT_TRUE(is_model_admin_route("DELETE", route_path("/models/a%2Finvoke")));
  EXPECT_TRUE(is_model_admin_route("POST", route_path("/%6Dodels/")));
  EXPECT_TRUE(is_public_route(route_path("//ping")));
  EXPECT_THROW(route_path("/models/%zz"), HttpError);
  EXPECT_THROW(route_path("/models/a%00b"), HttpError);
}

TEST(AuthUnit, TorchServeKeyFile) {
  const KeyFile k = parse_key_file(R"({
    "management": {"key": "B-E5KSRM", "expiration time": "2999-02-16T21:12:24.801167Z"},
    "inference": {"key": "gNRuA7dS", "expiration time": "2999-02-16T21:12:24.801148Z"},
    "API": {"key": "yv9uQajP"}})",
                                   "key_file.json");
  EXPECT_EQ(k.inference.key, "gNRuA7dS");
  EXPECT_EQ(k.management.key, "B-E5KSRM");
  ASSERT_TRUE(k.inference.expires.has_value());
  EXPECT_TRUE(bearer_matches("Bearer gNRuA7dS", k.inference));
  const KeyFile old = parse_key_file(R"({"inference": {"key": "a", "expiration time": "2024-02-16T21:12:24Z"}})", "k");
  EXPECT_FALSE(bearer_matches("Bearer a", old.inference));
  EXPECT_THROW(parse_key_file("[]", "k"), rc::Error);
  EXPECT_THROW(parse_key_file(R"({"inference": {"key": 5}})", "k"), rc::Error);
  EXPECT_THROW(parse_key_file(R"({"API": {"key": "x"}})", "k"), rc::Error);
  EXPECT_THROW(parse_key_file(R"({"inference": {"key": "a", "expiration time": "soon"}})", "k"), rc::Error);
}

TEST(AuthLive, ApiKeyGuardsEveryInferenceRouteButHealth) {
  LiveServer s([](ServerConfig& c) { c.auth.inference = AuthKey{"inference-key-1", std::nullopt}; });
  EXPECT_EQ(call("GET", s.url("/ping"), "", "").status, 200);
  EXPECT_EQ(call("GET", s.url("/health"), "", "").status, 200);
  const std::string body = R"({"inputs": "good"})";
  for (const char* route : {"/invocations", "/predict", "/predictions/sentiment", "/tokenize"}) {
    const auto r = call("POST", s.url(route), body);
    expect_error(r, 401);
    EXPECT_EQ(r.headers.count("www-authenticate"), 1u) << route;
    expect_error(call("POST", s.url(route), body, "application/json", bearer("wrong")), 401);
    EXPECT_EQ(call("POST", s.url(route), body, "application/json", bearer("inference-key-1")).status, 200) << route;
    EXPECT_EQ(call("POST", s.url(route), body, "application/json", bearer("inference-key-1", "bearer")).status, 200);
  }
  // Protected by default: metrics, listings, and routes that do not even exist.
  expect_error(call("GET", s.url("/metrics"), "", ""), 401);
  expect_error(call("GET", s.url("/models"), "", ""), 401);
  expect_error(call("GET", s.url("/no/such/route"), "", ""), 401);
  EXPECT_EQ(call("GET", s.url("/no/such/route"), "", "", bearer("inference-key-1")).status, 404);
  // The 401 never echoes a key.
  const auto r = call("POST", s.url("/invocations"), body, "application/json", bearer("guess-123"));
  EXPECT_EQ(r.body.find("guess-123"), std::string::npos);
  EXPECT_EQ(r.body.find("inference-key-1"), std::string::npos);
}

TEST(AuthLive, KeyFileGuardsBothPorts) {
  LiveServer s([](ServerConfig& c) {
    c.sagemaker_multi_model = true;  // model admin on the inference port, below
    const KeyFile k = parse_key_file(R"({"management": {"key": "mgmt-k"}, "inference": {"key": "inf-k"}})", "k");
    c.auth.inference = k.inference;
    c.auth.management = k.management;
  });
  expect_error(call("GET", s.mgmt("/models"), "", ""), 401);
  expect_error(call("GET", s.mgmt("/models"), "", "", bearer("inf-k")), 401);  // keys are per port
  EXPECT_EQ(call("GET", s.mgmt("/models"), "", "", bearer("mgmt-k")).status, 200);
  EXPECT_EQ(call("GET", s.mgmt("/ping"), "", "").status, 200);
  EXPECT_EQ(call("POST", s.url("/invocations"), R"({"inputs": "x"})", "application/json", bearer("inf-k")).status, 200);
  // Model admin on the inference port (multi-model mode) takes the management key.
  expect_error(
      call("POST", s.url("/models"), R"({"model_name": "x", "url": "sentiment"})", "application/json", bearer("inf-k")),
      401);
  EXPECT_EQ(
      call("POST", s.url("/models"), R"({"model_name": "x", "url": "sentiment"})", "application/json", bearer("mgmt-k"))
          .status,
      200);
}

TEST(AuthLive, ExpiredKeyIsRefusedAndSaysSo) {
  LiveServer s([](ServerConfig& c) { c.auth.inference = AuthKey{"old-k", std::chrono::system_clock::now() - 1h}; });
  const json err =
      expect_error(call("POST", s.url("/invocations"), R"({"inputs": "x"})", "application/json", bearer("old-k")), 401);
  EXPECT_NE(err.value("message", "").find("expired"), std::string::npos) << err;
}

TEST(AuthLive, KeysAreNeverLogged) {
  std::mutex mu;
  std::string logged;
  const auto level = rc::log::level();
  rc::log::set_level(rc::log::Level::trace);
  rc::log::set_sink([&](rc::log::Level, std::string_view c, std::string_view m) {
    std::lock_guard lock(mu);
    logged.append(c).append(": ").append(m).append("\n");
  });
  {
    LiveServer s([](ServerConfig& c) {
      c.auth.inference = AuthKey{"secret-inference-key", std::nullopt};
      c.auth_token = "secret-management-key";
    });
    call("POST", s.url("/invocations"), R"({"inputs": "x"})", "application/json", bearer("secret-inference-key"));
    call("POST", s.url("/invocations"), R"({"inputs": "x"})", "application/json", bearer("wrong-guess"));
    call("GET", s.mgmt("/models"), "", "", bearer("secret-management-key"));
    call("GET", s.mgmt("/models"), "", "", bearer("another-guess"));
  }
  rc::log::set_sink({});
  rc::log::set_level(level);
  std::lock_guard lock(mu);
  EXPECT_FALSE(logged.empty());
  for (const char* secret : {"secret-inference-key", "secret-management-key", "wrong-guess", "another-guess"})
    EXPECT_EQ(logged.find(secret), std::string::npos) << secret << " in:\n" << logged;
}
