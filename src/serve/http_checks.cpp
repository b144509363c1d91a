// See http_checks.h.
#include "serve/http_checks.h"

#include <cctype>

namespace rc::serve {

// is_loopback_host() is defined in http_server.cpp, the transport, which has Asio's
// address parser.

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
