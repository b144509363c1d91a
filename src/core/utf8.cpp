// UTF-8 validation and repair (Python errors="replace" semantics): the one copy, used by
// the tokenizer, the server's request parsers and the text-file reader.
#include "core/utf8.h"

#include <cstring>

namespace rc {

int utf8_sequence_length(const unsigned char* s, size_t n, int* consumed) noexcept {
  const unsigned char b = s[0];
  *consumed = 1;
  if (b < 0x80) return 1;
  int need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Table 3-7)
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
    need = 2;
  } else if (b == 0xED) {
    need = 2, hi = 0x9F;  // no surrogates
  } else if (b == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b >= 0xF1 && b <= 0xF3) {
    need = 3;
  } else if (b == 0xF4) {
    need = 3, hi = 0x8F;  // <= U+10FFFF
  } else {
    return 0;  // 80..C1, F5..FF never start a sequence
  }
  int got = 0;
  for (int k = 1; k <= need; ++k) {
    if (size_t(k) >= n) break;
    const unsigned char c = s[k];
    const bool ok = k == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
    if (!ok) break;
    ++got;
  }
  if (got == need) return need + 1;
  *consumed = 1 + got;  // the maximal subpart: lead + the valid continuation bytes seen
  return 0;
}

bool is_valid_utf8(std::string_view text) noexcept {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    // Skip ASCII 8 bytes at a time: most text is mostly ASCII.
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, s + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    int consumed;
    const int len = utf8_sequence_length(s + i, n - i, &consumed);
    if (len == 0) return false;
    i += size_t(len);
  }
  return true;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

std::string repair_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  std::string out;
  out.reserve(n + 8);
  size_t i = 0;
  while (i < n) {
    int consumed;
    const int len = utf8_sequence_length(s + i, n - i, &consumed);
    if (len > 0) {
      out.append(text.data() + i, size_t(len));
      i += size_t(len);
    } else {
      out.append("\xEF\xBF\xBD");
      i += size_t(consumed);
    }
  }
  return out;
}

}  // namespace rc
