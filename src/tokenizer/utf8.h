// UTF-8 for the tokenizer: the character classes that GPT-2's pre-tokenization regex uses.
// Validation and repair (Python errors="replace") live in core/utf8.h, shared with serve
// and io; they are re-exported here so tokenizer code keeps calling tokenizer::...
#pragma once

#include <cstdint>

#include "core/utf8.h"

namespace rc::tokenizer {

using rc::is_valid_utf8;
using rc::repair_utf8;
using rc::utf8_append;
using rc::utf8_decode;
using rc::utf8_lead_length;
using rc::utf8_sequence_length;

// Character classes of GPT-2's regex. whitespace is Oniguruma's \s, which for UTF-8 is
// the Unicode White_Space property (U+0009-000D, 0020, 0085, 00A0, 1680, 2000-200A, 2028,
// 2029, 202F, 205F, 3000; verified against HF tokenizers: U+001C-001F and U+180E are not
// \s). letter is \p{L} (general category L*), number is \p{N} (N*), other is the rest;
// categories come from utf8proc plus the Unicode 16.0 additions HF's Oniguruma knows.
enum class CharClass : uint8_t { whitespace, letter, number, other };

bool is_unicode_whitespace(uint32_t cp) noexcept;  // White_Space (= Rust char::is_whitespace)
CharClass char_class(uint32_t cp) noexcept;
// Regex \w in Rust's regex crate (Alphabetic, marks, Nd, Pc, Join_Control), which HF uses
// for single_word added tokens: measured on tokenizers 0.22, "²" is not a word character,
// "‿", ZWJ, U+0903, U+20DD and "Ⓐ" are. Alphabetic is approximated by L*, Nl and the
// circled/squared letters (U+24B6-24E9, U+1F130-1F189).
bool is_word_char(uint32_t cp) noexcept;

}  // namespace rc::tokenizer
