#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/check.h"

namespace rc {

// A switch with no default, like every enum -> name in the tree: -Wswitch proves each value is
// named (alike in shape to the others on purpose; docs/architecture.md).
const char* errc_name(Errc errc) noexcept {
  switch (errc) {
    case Errc::invalid_argument:
      return "invalid_argument";
    case Errc::not_found:
      return "not_found";
    case Errc::io:
      return "io";
    case Errc::format:
      return "format";
    case Errc::unsupported:
      return "unsupported";
    case Errc::resource_exhausted:
      return "resource_exhausted";
    case Errc::device:
      return "device";
    case Errc::internal:
      return "internal";
  }
  return "unknown";
}

namespace detail {

// Only the base name of the source file: messages stay one readable line.
static const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

void throw_error(Errc errc, const std::string& message, const char* file, int line) {
  // A message may carry a hint after "\nHINT: "; keep it out of what().
  std::string text = message, hint;
  if (auto pos = text.find("\nHINT: "); pos != std::string::npos) {
    hint = text.substr(pos + 7);
    text.resize(pos);
  }
  // what() is a C string: a NUL quoted from a file would cut the message there (and the
  // place it was thrown from with it), so it is spelled out, as the CLI spells other
  // control bytes (cli/main.cpp).
  for (size_t at = 0; (at = text.find('\0', at)) != std::string::npos; at += 4) text.replace(at, 1, "\\x00");
  throw Error(errc, text + " (" + base_name(file) + ":" + std::to_string(line) + ")", hint);
}

void assert_fail(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "roberta: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace detail
}  // namespace rc
