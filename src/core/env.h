// env.h: an environment variable as a string, "" when unset, and a positive whole-number
// setting. The one copy of the helpers that the Hub cache, the S3 client, AWS credentials and
// `roberta serve` each used to define.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/check.h"

namespace rc {

inline std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A positive integer setting from the environment, else `fallback`; garbage, 0, a sign or a
// value past T is a usage error whose hint is `hint` (e.g. "see docs/hub.md").
template <typename T>
T positive_env(const char* name, T fallback, const char* hint) {
  const std::string v = env_or_empty(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  RC_CHECK(errno == 0 && end && *end == 0 && n > 0 && v[0] != '-' && n <= uint64_t(std::numeric_limits<T>::max()),
           Errc::invalid_argument, name, "='", v, "' is not a positive whole number\nHINT: ", hint);
  return T(n);
}

}  // namespace rc
