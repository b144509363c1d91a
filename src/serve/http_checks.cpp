// See http_checks.h.
#include "serve/http_checks.h"

#include <utility>  // Boost 1.74 asio misses it under GCC 12 in C++20
#include <boost/asio/ip/address.hpp>
#include <cctype>

namespace rc::serve {

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(host, ec);
  return !ec && addr.is_loopback();
}

std::optional<std::string> unsupported_transfer_coding(std::string_view rest) {
  auto iequals = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
    return true;
  };
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view token = rest.substr(0, comma);
    while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    if (!iequals(token, "chunked") && !iequals(token, "identity"))
      return "Transfer-Encoding '" + std::string(token) +
             "' is not supported; send the body as is (Content-Length or chunked)";
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return std::nullopt;
}

}  // namespace rc::serve
