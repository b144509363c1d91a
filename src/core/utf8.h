// UTF-8 validation and repair, the one copy for every layer (tokenizer, serve, io).
//
// Invalid UTF-8 is repaired exactly as Python's bytes.decode("utf-8", errors="replace")
// does (and WHATWG's TextDecoder, and Rust's String::from_utf8_lossy): each *maximal
// subpart* of an ill-formed sequence (Unicode 15, §3.9 "U+FFFD Substitution of Maximal
// Subparts") becomes one U+FFFD. Examples: "\xE2\x82" (truncated 3-byte) -> one U+FFFD;
// "\xC0\xAF" (overlong) -> two; "\xED\xA0\x80" (surrogate) -> three; "\xF4\x90\x80\x80"
// (> U+10FFFF) -> four. Well-formed sequences follow Table 3-7 of the standard.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rc {

// Length of the well-formed UTF-8 sequence starting at s[0] (1-4), or 0 when it is
// ill-formed. `consumed` receives the length of the maximal subpart to replace on error
// (>= 1). n >= 1.
int utf8_sequence_length(const unsigned char* s, size_t n, int* consumed) noexcept;

// True when every byte sequence in text is well-formed UTF-8.
bool is_valid_utf8(std::string_view text) noexcept;

// text with each maximal ill-formed subpart replaced by U+FFFD (EF BF BD).
std::string repair_utf8(std::string_view text);

// Decodes the well-formed sequence at s (len from utf8_sequence_length).
inline uint32_t utf8_decode(const unsigned char* s, int len) noexcept {
  switch (len) {
    case 1:
      return s[0];
    case 2:
      return (uint32_t(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    case 3:
      return (uint32_t(s[0] & 0x0F) << 12) | (uint32_t(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    default:
      return (uint32_t(s[0] & 0x07) << 18) | (uint32_t(s[1] & 0x3F) << 12) | (uint32_t(s[2] & 0x3F) << 6) |
             (s[3] & 0x3F);
  }
}

// Length of a sequence from its lead byte, for text already known to be valid.
inline int utf8_lead_length(unsigned char lead) noexcept {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

void utf8_append(std::string& out, uint32_t cp);

}  // namespace rc
