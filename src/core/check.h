// RC_CHECK for conditions that depend on input (files, flags, requests): throws rc::Error
// with file:line appended. RC_ASSERT for internal invariants only: logs and aborts.
#pragma once

#include <sstream>
#include <string>

#include "roberta/error.h"

namespace rc::detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
[[noreturn]] void throw_error(Errc errc, const std::string& message, const char* file, int line);
[[noreturn]] void assert_fail(const char* expr, const char* file, int line);
}  // namespace rc::detail

// RC_CHECK(cond, Errc::format, "tensor '", name, "': got ", got, ", expected ", want);
#define RC_CHECK(cond, errc, ...)                                                               \
  do {                                                                                          \
    if (!(cond)) [[unlikely]]                                                                   \
      ::rc::detail::throw_error((errc), ::rc::detail::concat(__VA_ARGS__), __FILE__, __LINE__); \
  } while (0)

#define RC_THROW(errc, ...) ::rc::detail::throw_error((errc), ::rc::detail::concat(__VA_ARGS__), __FILE__, __LINE__)

#define RC_ASSERT(cond)                                     \
  do {                                                      \
    if (!(cond)) [[unlikely]]                               \
      ::rc::detail::assert_fail(#cond, __FILE__, __LINE__); \
  } while (0)
