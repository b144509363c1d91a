// Small checks on what a client sends, kept apart from the connection code.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rc::serve {

// Loopback addresses: 127.0.0.0/8, ::1, "localhost".
bool is_loopback_host(const std::string& host);

// A Transfer-Encoding header value: nullopt when every coding is chunked or identity (what
// Beast reads), else the message for a 501 naming the first other coding (gzip, ...).
std::optional<std::string> unsupported_transfer_coding(std::string_view value);

}  // namespace rc::serve
