// Beast client (see http_client.h). Asynchronous operations on a private io_context, so the
// stream's deadline covers connect, handshake, write and read alike.
#include "serve/http_client.h"

// Boost 1.74 asio/beast miss <utility> under GCC 12 in C++20 (std::exchange).
#include <utility>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>

#include "core/check.h"

namespace rc::serve {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

Url parse_url(const std::string& url) {
  Url u;
  std::string rest;
  if (url.rfind("http://", 0) == 0)
    rest = url.substr(7);
  else if (url.rfind("https://", 0) == 0)
    rest = url.substr(8), u.tls = true;
  else
    RC_THROW(Errc::invalid_argument, "URL '", url, "' must start with http:// or https://");
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  u.target = slash == std::string::npos ? "/" : rest.substr(slash);
  if (!authority.empty() && authority[0] == '[') {  // [::1]:8080
    const size_t close = authority.find(']');
    RC_CHECK(close != std::string::npos, Errc::invalid_argument, "URL '", url, "': unclosed '['");
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') u.port = authority.substr(close + 2);
  } else {
    const size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) u.port = authority.substr(colon + 1);
  }
  RC_CHECK(!u.host.empty(), Errc::invalid_argument, "URL '", url, "' has no host");
  if (u.port.empty()) u.port = u.tls ? "443" : "80";
  return u;
}

namespace {

template <class Stream>
HttpResult exchange(asio::io_context& ioc, Stream& stream, const Url& u, const HttpCall& call) {
  http::request<http::string_body> req{http::string_to_verb(call.method), u.target, 11};
  if (req.method() == http::verb::unknown) req.method_string(call.method);
  req.set(http::field::host, u.host + ":" + u.port);
  req.set(http::field::user_agent, "roberta-invoke");
  for (const auto& [k, v] : call.headers) req.set(k, v);
  req.body() = call.body;
  req.keep_alive(false);
  req.prepare_payload();

  beast::error_code ec;
  http::async_write(stream, req, [&](beast::error_code e, size_t) { ec = e; });
  ioc.run();
  ioc.restart();
  RC_CHECK(!ec, Errc::io, "sending to ", u.host, ":", u.port, " failed: ", ec.message());
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256ull << 20);
  http::async_read(stream, buffer, parser, [&](beast::error_code e, size_t) { ec = e; });
  ioc.run();
  ioc.restart();
  RC_CHECK(!ec, Errc::io, "reading the answer from ", u.host, ":", u.port, " failed: ", ec.message());
  auto res = parser.release();
  HttpResult out;
  out.status = int(res.result_int());
  out.body = std::move(res.body());
  for (const auto& field : res) {
    std::string name(field.name_string());
    for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = std::string(field.value());
  }
  return out;
}

}  // namespace

HttpResult http_call(const HttpCall& call) {
  const Url u = parse_url(call.url);
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto endpoints = resolver.resolve(u.host, u.port, ec);
  RC_CHECK(!ec, Errc::io, "cannot resolve ", u.host, ":", u.port, ": ", ec.message());
  beast::tcp_stream tcp_stream(ioc);
  tcp_stream.expires_after(call.timeout);
  tcp_stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
  ioc.run();
  ioc.restart();
  RC_CHECK(!ec, Errc::io, "cannot connect to ", u.host, ":", u.port, ": ", ec.message(),
           "\nHINT: is `roberta serve` running there?");
  if (!u.tls) return exchange(ioc, tcp_stream, u, call);

  ssl::context ctx(ssl::context::tls_client);
  if (call.insecure) {
    ctx.set_verify_mode(ssl::verify_none);
  } else {
    ctx.set_default_verify_paths();
    ctx.set_verify_mode(ssl::verify_peer);
  }
  beast::ssl_stream<beast::tcp_stream> stream(std::move(tcp_stream), ctx);
  if (!call.insecure) stream.set_verify_callback(ssl::host_name_verification(u.host));
  SSL_set_tlsext_host_name(stream.native_handle(), u.host.c_str());
  stream.async_handshake(ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
  ioc.run();
  ioc.restart();
  RC_CHECK(!ec, Errc::io, "TLS handshake with ", u.host, ":", u.port, " failed: ", ec.message(),
           "\nHINT: for a self-signed certificate pass --insecure");
  return exchange(ioc, stream, u, call);
}

}  // namespace rc::serve
