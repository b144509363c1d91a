// Character properties and normalization forms from utf8proc.
#include "tokenizer/pipeline/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <optional>

#include "tokenizer/utf8.h"

namespace rc::tokenizer::pipeline {
namespace {

utf8proc_category_t category(uint32_t cp) { return utf8proc_category(utf8proc_int32_t(cp)); }

int combining_class(uint32_t cp) { return utf8proc_get_property(utf8proc_int32_t(cp))->combining_class; }

// Decomposition of one character (canonical, or compatibility too), unordered.
void decompose(uint32_t cp, bool compat, std::vector<uint32_t>& out) {
  utf8proc_int32_t buf[32];
  const int options = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
  int boundclass = 0;
  const utf8proc_ssize_t n =
      utf8proc_decompose_char(utf8proc_int32_t(cp), buf, 32, utf8proc_option_t(options), &boundclass);
  if (n <= 0 || n > 32) {
    out.push_back(cp);
    return;
  }
  for (utf8proc_ssize_t i = 0; i < n; ++i) out.push_back(uint32_t(buf[i]));
}

// The primary composite of a and b (unicode-normalization's char::compose), if any.
std::optional<uint32_t> compose_pair(uint32_t a, uint32_t b) {
  utf8proc_int32_t buf[2] = {utf8proc_int32_t(a), utf8proc_int32_t(b)};
  const utf8proc_ssize_t n = utf8proc_normalize_utf32(buf, 2, utf8proc_option_t(UTF8PROC_COMPOSE));
  if (n != 1) return std::nullopt;
  return uint32_t(buf[0]);
}

}  // namespace

bool is_mark_nonspacing(uint32_t cp) noexcept { return category(cp) == UTF8PROC_CATEGORY_MN; }

bool is_combining_mark(uint32_t cp) noexcept {
  const utf8proc_category_t c = category(cp);
  return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
}

bool is_punctuation(uint32_t cp) noexcept {
  if (cp < 0x80)
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
           (cp >= 0x7B && cp <= 0x7E);
  const utf8proc_category_t c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

bool is_other(uint32_t cp) noexcept {
  const utf8proc_category_t c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CN ||
         c == UTF8PROC_CATEGORY_CO || c == UTF8PROC_CATEGORY_CS;
}

bool is_numeric(uint32_t cp) noexcept {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  const utf8proc_category_t c = category(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool is_chinese_char(uint32_t cp) noexcept {  // tokenizers/src/normalizers/bert.rs
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

void append_lowercase(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp < 0x80) {
    out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    return;
  }
  if (cp == 0x130) {  // SpecialCasing.txt's one unconditional multi-character lowercase
    out.push_back('i');
    out.push_back(0x307);
    return;
  }
  out.push_back(uint32_t(utf8proc_tolower(utf8proc_int32_t(cp))));
}

std::vector<CharChange> normalize_form(std::string_view text, NormalForm form) {
  const bool compat = form == NormalForm::nfkc || form == NormalForm::nfkd;
  const std::vector<uint32_t> cps = code_points(text);
  // Decompose each character: its first output replaces it, the others are new.
  std::vector<CharChange> d;
  d.reserve(cps.size());
  std::vector<uint32_t> parts;
  for (uint32_t cp : cps) {
    parts.clear();
    decompose(cp, compat, parts);
    for (size_t i = 0; i < parts.size(); ++i) d.push_back({parts[i], i == 0 ? 0 : 1});
  }
  // Canonical ordering: a stable sort of each run of non-starters by combining class; each
  // character keeps its change.
  for (size_t i = 0; i < d.size();) {
    if (combining_class(d[i].cp) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < d.size() && combining_class(d[j].cp) != 0) ++j;
    std::stable_sort(
        d.begin() + std::ptrdiff_t(i), d.begin() + std::ptrdiff_t(j),
        [](const CharChange& a, const CharChange& b) { return combining_class(a.cp) < combining_class(b.cp); });
    i = j;
  }
  if (form == NormalForm::nfd || form == NormalForm::nfkd) return d;
  // Composition: the state machine of unicode-normalization-alignments' Recompositions
  // (tokenizers' vendored src/utils/unicode_normalization_alignments/recompose.rs), whose
  // changes HF's offsets follow: a character composed into the one before it ("composee")
  // adds its change minus one to the composee's; blocked marks wait in a buffer and come out
  // after the composee.
  std::vector<CharChange> out;
  out.reserve(d.size());
  std::optional<CharChange> composee;
  std::vector<CharChange> pending;  // the buffer
  int last_ccc = -1;                // none
  auto flush = [&] {
    out.push_back(*composee);
    out.insert(out.end(), pending.begin(), pending.end());
    pending.clear();
  };
  for (const CharChange& c : d) {
    const int ccc = combining_class(c.cp);
    if (!composee) {
      if (ccc != 0) {
        out.push_back(c);
      } else {
        composee = c;
      }
      continue;
    }
    if (last_ccc >= 0 && last_ccc >= ccc) {  // blocked from the composee
      if (ccc == 0) {
        flush();
        composee = c;
        last_ccc = -1;
      } else {
        pending.push_back(c);
        last_ccc = ccc;
      }
      continue;
    }
    if (const std::optional<uint32_t> r = compose_pair(composee->cp, c.cp)) {
      composee = CharChange{*r, composee->change + c.change - 1};
      continue;
    }
    if (last_ccc < 0 && ccc == 0) {
      out.push_back(*composee);  // the buffer is empty here
      composee = c;
      continue;
    }
    pending.push_back(c);
    last_ccc = ccc;
  }
  if (composee) {
    flush();
  } else {
    out.insert(out.end(), pending.begin(), pending.end());
  }
  return out;
}

std::vector<ByteRange> graphemes(std::string_view text) {
  std::vector<ByteRange> out;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  utf8proc_int32_t state = 0;
  uint32_t prev = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    const int len = utf8_lead_length(s[i]);
    const uint32_t cp = utf8_decode(s + i, len);
    if (i > 0 && utf8proc_grapheme_break_stateful(utf8proc_int32_t(prev), utf8proc_int32_t(cp), &state)) {
      out.push_back({start, i});
      start = i;
    }
    prev = cp;
    i += size_t(len);
  }
  if (start < text.size()) out.push_back({start, text.size()});
  return out;
}

}  // namespace rc::tokenizer::pipeline
