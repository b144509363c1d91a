// GPT-2's pre-tokenization, written out by hand instead of with a regex engine:
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// (HF tokenizers' ByteLevel pre-tokenizer, use_regex=true; Oniguruma semantics: at each
// position the first alternative that matches wins, quantifiers are greedy.) Every
// character is covered by some alternative, so the pieces tile the text. Contractions are
// case-sensitive ("'S" is not one). The optional prefix is only U+0020; other whitespace
// stays a piece of its own. `\s+(?!\S)` leaves the last whitespace character of a run
// that is followed by a non-space, so that " word" keeps its space.
#pragma once

#include <cstddef>
#include <string_view>

#include "tokenizer/utf8.h"

namespace rc::tokenizer {

namespace detail {
// Classes of the 128 ASCII characters (\t\n\v\f\r and space are whitespace).
inline constexpr auto kAsciiClass = [] {
  struct Table {
    CharClass c[128];
  } t{};
  for (int i = 0; i < 128; ++i) {
    CharClass c = CharClass::other;
    if ((i >= 'a' && i <= 'z') || (i >= 'A' && i <= 'Z'))
      c = CharClass::letter;
    else if (i >= '0' && i <= '9')
      c = CharClass::number;
    else if (i == ' ' || (i >= 9 && i <= 13))
      c = CharClass::whitespace;
    t.c[i] = c;
  }
  return t;
}();

struct CharAt {
  CharClass cls;
  int len;
};

// Text must be valid UTF-8 (the tokenizer repairs it first).
inline CharAt char_at(const unsigned char* s) noexcept {
  if (s[0] < 0x80) return {kAsciiClass.c[s[0]], 1};
  const int len = utf8_lead_length(s[0]);
  return {char_class(utf8_decode(s, len)), len};
}

// Length of a contraction ('s 't 're 've 'm 'll 'd) at s[0] == '\'', or 0.
inline int contraction_length(const unsigned char* s, size_t n) noexcept {
  if (n < 2) return 0;
  switch (s[1]) {
    case 's':
    case 't':
    case 'm':
    case 'd':
      return 2;
    case 'r':
      return n >= 3 && s[2] == 'e' ? 3 : 0;
    case 'v':
      return n >= 3 && s[2] == 'e' ? 3 : 0;
    case 'l':
      return n >= 3 && s[2] == 'l' ? 3 : 0;
    default:
      return 0;
  }
}
}  // namespace detail

// Calls emit(begin, end) (byte offsets) for each piece of text, in order. Text must be
// valid UTF-8.
template <class Emit>
void gpt2_split(std::string_view text, Emit&& emit) {
  using detail::char_at;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    if (s[i] == '\'') {
      if (const int c = detail::contraction_length(s + i, n - i)) {
        emit(i, i + size_t(c));
        i += size_t(c);
        continue;
      }
    }
    const detail::CharAt first = char_at(s + i);
    size_t j = i;  // where the run of letters / numbers / others starts
    detail::CharAt run = first;
    if (s[i] == ' ' && i + 1 < n) {
      const detail::CharAt next = char_at(s + i + 1);
      if (next.cls != CharClass::whitespace) j = i + 1, run = next;
    }
    if (run.cls != CharClass::whitespace) {
      size_t k = j + size_t(run.len);
      while (k < n) {
        const detail::CharAt c = char_at(s + k);
        if (c.cls != run.cls) break;
        k += size_t(c.len);
      }
      emit(i, k);
      i = k;
      continue;
    }
    // A whitespace run [i, k); `last` is where its last character starts.
    size_t k = i + size_t(first.len), last = i;
    while (k < n) {
      const detail::CharAt c = char_at(s + k);
      if (c.cls != CharClass::whitespace) break;
      last = k;
      k += size_t(c.len);
    }
    // \s+(?!\S): all of it at the end of the text, else all but the last character;
    // a single character followed by a non-space is taken by the final \s+.
    const size_t end = (k == n || last == i) ? k : last;
    emit(i, end);
    i = end;
  }
}

}  // namespace rc::tokenizer
