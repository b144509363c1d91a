// GPT-2 character classes for the pre-tokenizer (UTF-8 validation and repair: core/utf8.cpp).
#include "tokenizer/utf8.h"

#include <utf8proc.h>

#include <array>
#include <cstring>
#include <iterator>

namespace rc::tokenizer {

bool is_unicode_whitespace(uint32_t cp) noexcept {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return false;
  if (cp == 0x85 || cp == 0xA0 || cp == 0x1680) return true;
  if (cp < 0x2000) return false;
  return cp <= 0x200A || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

namespace {
// Letters and numbers new in Unicode 16.0, which HF tokenizers' Oniguruma knows and
// utf8proc 2.8 (Unicode 15.0, Debian 12) does not: the difference measured over every code
// point (tests/data/tokenizer/char_classes.txt). Used only for code points utf8proc calls
// unassigned, so a newer utf8proc makes it a no-op.
struct ClassRange {
  uint32_t first, last;
  CharClass cls;
};
constexpr ClassRange kUnicode16[] = {
    {0x1C89, 0x1C8A, CharClass::letter},   {0xA7CB, 0xA7CD, CharClass::letter},   {0xA7DA, 0xA7DC, CharClass::letter},
    {0x105C0, 0x105F3, CharClass::letter}, {0x10D40, 0x10D49, CharClass::number}, {0x10D4A, 0x10D65, CharClass::letter},
    {0x10D6F, 0x10D85, CharClass::letter}, {0x10EC2, 0x10EC4, CharClass::letter}, {0x11380, 0x11389, CharClass::letter},
    {0x1138B, 0x1138B, CharClass::letter}, {0x1138E, 0x1138E, CharClass::letter}, {0x11390, 0x113B5, CharClass::letter},
    {0x113B7, 0x113B7, CharClass::letter}, {0x113D1, 0x113D1, CharClass::letter}, {0x113D3, 0x113D3, CharClass::letter},
    {0x116D0, 0x116E3, CharClass::number}, {0x11BC0, 0x11BE0, CharClass::letter}, {0x11BF0, 0x11BF9, CharClass::number},
    {0x13460, 0x143FA, CharClass::letter}, {0x16100, 0x1611D, CharClass::letter}, {0x16130, 0x16139, CharClass::number},
    {0x16D40, 0x16D6C, CharClass::letter}, {0x16D70, 0x16D79, CharClass::number}, {0x18CFF, 0x18CFF, CharClass::letter},
    {0x1CCF0, 0x1CCF9, CharClass::number}, {0x1E5D0, 0x1E5ED, CharClass::letter}, {0x1E5F0, 0x1E5F0, CharClass::letter},
    {0x1E5F1, 0x1E5FA, CharClass::number}, {0x2EBF0, 0x2EE5D, CharClass::letter}};

CharClass unicode16_class(uint32_t cp) noexcept {
  if (cp < kUnicode16[0].first) return CharClass::other;
  size_t lo = 0, hi = std::size(kUnicode16);
  while (lo < hi) {  // first range with last >= cp
    const size_t mid = (lo + hi) / 2;
    if (kUnicode16[mid].last < cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < std::size(kUnicode16) && kUnicode16[lo].first <= cp ? kUnicode16[lo].cls : CharClass::other;
}

// Unicode's L* categories: \p{L} in the GPT-2 pattern, and word characters for \w.
bool is_letter_category(utf8proc_category_t cat) noexcept {
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT ||
         cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_LO;
}

CharClass category_class(uint32_t cp) noexcept {
  const utf8proc_category_t cat = utf8proc_category(utf8proc_int32_t(cp));
  if (is_letter_category(cat)) return CharClass::letter;
  switch (cat) {
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return CharClass::number;
    case UTF8PROC_CATEGORY_CN:
      return unicode16_class(cp);
    default:
      return CharClass::other;
  }
}
}  // namespace

CharClass char_class(uint32_t cp) noexcept {
  if (is_unicode_whitespace(cp)) return CharClass::whitespace;
  return category_class(cp);
}

bool is_word_char(uint32_t cp) noexcept {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '_';
  if (cp == 0x200C || cp == 0x200D || (cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F189)) return true;
  const utf8proc_category_t cat = utf8proc_category(utf8proc_int32_t(cp));
  if (is_letter_category(cat)) return true;
  switch (cat) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

}  // namespace rc::tokenizer
