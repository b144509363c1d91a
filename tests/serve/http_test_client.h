// The server tests' HTTP client: the project's one client (net/http.h, libcurl) with the
// shape the tests read. One request per call; redirects are answers (a test sees the 3xx);
// a transport failure (refused, reset, timed out, TLS refused) throws rc::Error(io), any HTTP
// status is a result.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "net/http.h"

namespace rc::serve::testing {

struct HttpResult {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

struct HttpCall {
  std::string method = "GET";
  std::string url;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds timeout{60000};
  bool insecure = false;  // https without certificate verification (self-signed test certs)
};

inline HttpResult http_call(const HttpCall& c) {
  net::Request req;
  req.method = c.method;
  req.url = c.url;
  req.body = c.body;
  req.headers = c.headers;
  req.total_timeout_ms = long(c.timeout.count());
  req.follow_redirects = false;
  req.verify_tls = !c.insecure;
  const net::Response r = net::perform(req, {}, size_t(256) << 20);
  RC_CHECK(r.status != 0, Errc::io, c.method, " ", c.url, ": ", r.error);
  RC_CHECK(!r.body_truncated, Errc::io, c.method, " ", c.url, ": answer over 256 MiB");
  return HttpResult{int(r.status), r.body, r.headers};
}

}  // namespace rc::serve::testing
