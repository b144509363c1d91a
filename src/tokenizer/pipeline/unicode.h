// Character properties and normalization forms for the pipeline, from utf8proc (Debian 12:
// Unicode 15.0; HF's Rust crates carry their own tables, which may be older or newer: a character
// assigned in between can be classed differently).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/pipeline/normalized.h"

namespace rc::tokenizer::pipeline {

bool is_mark_nonspacing(uint32_t cp) noexcept;  // Mn
bool is_combining_mark(uint32_t cp) noexcept;   // M*: Mn Mc Me (unicode-normalization's is_combining_mark)
bool is_punctuation(uint32_t cp) noexcept;      // P* or ASCII punctuation (HF is_bert_punc)
bool is_other(uint32_t cp) noexcept;            // C*: Cc Cf Cn Co Cs (unicode_categories' is_other)
bool is_numeric(uint32_t cp) noexcept;          // N* (Rust char::is_numeric)
bool is_chinese_char(uint32_t cp) noexcept;     // the CJK blocks of HF's BertNormalizer
// Rust char::to_lowercase (full mapping: U+0130 gives two characters).
void append_lowercase(uint32_t cp, std::vector<uint32_t>& out);

enum class NormalForm { nfc, nfd, nfkc, nfkd };
// The characters of `text` in `form`, each with HF's change (unicode-normalization-alignments:
// a decomposition's first character replaces the source, the others are new; a composition
// replaces the first of its sources and removes the others).
std::vector<CharChange> normalize_form(std::string_view text, NormalForm form);

// The extended grapheme clusters of text (unicode-segmentation's graphemes(true)) as byte ranges.
std::vector<ByteRange> graphemes(std::string_view text);

}  // namespace rc::tokenizer::pipeline
