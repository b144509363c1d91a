#include "core/json_depth.h"

#include <cstring>
#include <string>

#include "core/check.h"

namespace rc {

size_t json_nesting_depth(std::string_view text, size_t stop_after) noexcept {
  const char* const s = text.data();
  const size_t n = text.size();
  size_t depth = 0, deepest = 0;
  for (size_t i = 0; i < n;) {
    const char c = s[i];
    if (c == '"') {
      // Skip the string: to the first quote after it that is not escaped, i.e. preceded by
      // an even number of backslashes. memchr keeps a 17 MB tokenizer.json (mostly strings)
      // at a few milliseconds.
      size_t from = i + 1;
      for (;;) {
        const void* q = from < n ? std::memchr(s + from, '"', n - from) : nullptr;
        if (!q) return deepest;  // unterminated: the parser says so
        const size_t at = size_t(static_cast<const char*>(q) - s);
        size_t backslashes = 0;
        while (at - backslashes > i + 1 && s[at - backslashes - 1] == '\\') ++backslashes;
        from = at + 1;
        if (backslashes % 2 == 0) break;
      }
      i = from;
      continue;
    }
    if (c == '[' || c == '{') {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > stop_after) return deepest;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
    ++i;
  }
  return deepest;
}

void check_json_depth(std::string_view text, std::string_view source, size_t max_depth) {
  RC_CHECK(json_nesting_depth(text, max_depth) <= max_depth, Errc::format, source, ": JSON nested deeper than ",
           max_depth, " levels\nHINT: real files and requests nest a few levels; this one is malformed or hostile");
}

}  // namespace rc
