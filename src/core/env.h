// env.h: an environment variable as a string, "" when unset. The one copy of the helper that
// the Hub cache, the S3 client, AWS credentials and `roberta serve` each used to define.
#pragma once

#include <cstdlib>
#include <string>

namespace rc {

inline std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace rc
