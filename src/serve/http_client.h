// A tiny HTTP(S) client on Beast for `roberta invoke` and the server's tests: one request
// per connection, a whole-exchange timeout, TLS with certificate checks unless insecure.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace rc::serve {

struct Url {
  bool tls = false;
  std::string host, port, target;  // target: path + query, at least "/"
};
// http[s]://host[:port][/path]; throws rc::Error(invalid_argument) otherwise.
Url parse_url(const std::string& url);

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

// Throws rc::Error(io) when the server cannot be reached or the exchange times out; any
// HTTP status (also 4xx/5xx) is a result, not an error.
HttpResult http_call(const HttpCall& call);

}  // namespace rc::serve
