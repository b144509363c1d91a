// Shared by the serve tests that call the request parsers directly.
#pragma once

#include <functional>

#include "serve/http_error.h"

namespace rc::test {

// The HTTP status a parser's HttpError carries; 0 when it accepts the input.
inline int status_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const serve::HttpError& e) {
    return e.status();
  }
  return 0;
}

}  // namespace rc::test
