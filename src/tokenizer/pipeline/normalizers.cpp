// Normalizers (tokenizers/src/normalizers/*.rs) and the common parts of the factories.
#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include "core/check.h"
#include "tokenizer/pipeline/build.h"
#include "tokenizer/pipeline/precompiled.h"
#include "tokenizer/pipeline/unicode.h"
#include "tokenizer/utf8.h"

namespace rc::tokenizer::pipeline {
using nlohmann::json;

void unknown_type(const Source& src, const char* kind, const std::string& type) {
  RC_THROW(Errc::unsupported, "tokenizer file '", src.file, "': ", kind, " type '", type, "' is not supported",
           "\nHINT: supported are the normalizers, pre-tokenizers, models, post-processors and decoders of "
           "BERT, XLM-R, RoBERTa and GPT-2 tokenizers (docs/tokenizer.md lists them)");
}

std::string type_of(const json& j, const Source& src, const char* kind) {
  RC_CHECK(j.is_object() && j.contains("type") && j["type"].is_string(), Errc::format, "tokenizer file '", src.file,
           "': a ", kind, " must be an object with a string \"type\", found ", j.dump().substr(0, 120),
           "\nHINT: the file is corrupt; download it again");
  return j["type"].get<std::string>();
}

bool get_bool(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string get_string(const json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

Pattern read_pattern(const json& j, const Source& src, const char* where) {
  Pattern p;
  if (j.is_object() && j.contains("String") && j["String"].is_string()) {
    p.literal = j["String"].get<std::string>();
    RC_CHECK(is_valid_utf8(p.literal), Errc::format, "tokenizer file '", src.file, "': ", where,
             " pattern is not valid UTF-8", "\nHINT: the file is corrupt; download it again");
    // HF gives an empty pattern one piece of the text's length in characters used as bytes,
    // which cuts a character apart (its split panics): refused.
    RC_CHECK(!p.literal.empty(), Errc::unsupported, "tokenizer file '", src.file, "': ", where, " has an empty pattern",
             "\nHINT: HF's tokenizers mis-splits non-ASCII text with it; remove the step");
    return p;
  }
  RC_CHECK(j.is_object() && j.contains("Regex") && j["Regex"].is_string(), Errc::format, "tokenizer file '", src.file,
           "': ", where, " pattern must be {\"String\": ...} or {\"Regex\": ...}, found ", j.dump().substr(0, 120),
           "\nHINT: the file is corrupt; download it again");
  p.regex = std::make_shared<Regex>(j["Regex"].get<std::string>(), "tokenizer file '" + src.file + "': " + where);
  return p;
}

SplitBehavior read_behavior(const json& j, const Source& src) {
  const std::string b = j.is_string() ? j.get<std::string>() : "";
  // serde's names (tokenizers' SplitDelimiterBehavior), and the lower-case ones its Python API takes.
  if (b == "Removed" || b == "removed") return SplitBehavior::removed;
  if (b == "Isolated" || b == "isolated") return SplitBehavior::isolated;
  if (b == "MergedWithPrevious" || b == "merged_with_previous") return SplitBehavior::merged_with_previous;
  if (b == "MergedWithNext" || b == "merged_with_next") return SplitBehavior::merged_with_next;
  if (b == "Contiguous" || b == "contiguous") return SplitBehavior::contiguous;
  RC_THROW(Errc::format, "tokenizer file '", src.file, "': split behavior ", j.dump().substr(0, 60),
           " is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous",
           "\nHINT: the file is corrupt; download it again");
}

namespace {

bool is_ascii(std::string_view text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

// tokenizers/src/normalizers/bert.rs
class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), chinese_(chinese), strip_accents_(strip_accents), lowercase_(lowercase) {}
  void normalize(NormalizedString& s) const override {
    if (clean_text_) {
      s.filter([](uint32_t c) {
        const bool control = !(c == '\t' || c == '\n' || c == '\r') && is_other(c);
        return !(c == 0 || c == 0xFFFD || control);
      });
      s.map([](uint32_t c) { return c == '\t' || c == '\n' || c == '\r' || is_unicode_whitespace(c) ? ' ' : c; });
    }
    if (chinese_) {
      std::vector<CharChange> dest;
      for (uint32_t c : code_points(s.get())) {
        if (is_chinese_char(c)) {  // 0.22: the space replaces the character, which is then new
          dest.push_back({' ', 0});
          dest.push_back({c, 1});
          dest.push_back({' ', 1});
        } else {
          dest.push_back({c, 0});
        }
      }
      s.transform(dest, 0);
    }
    if (strip_accents_) {
      s.transform(normalize_form(s.get(), NormalForm::nfd), 0);
      s.filter([](uint32_t c) { return !is_mark_nonspacing(c); });
    }
    if (lowercase_) s.lowercase();
  }

  bool has_plain() const override { return true; }
  // ASCII through the table: each character kept as one or removed (clean_text, lowercase; no
  // ASCII character is Chinese or has an accent).
  bool normalize_ascii_aligned(std::string& text, std::vector<uint32_t>& src) const override {
    size_t out = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      const auto b = static_cast<unsigned char>(text[i]);
      if (b >= 0x80) return false;
      if (const int16_t c = ascii_[b]; c >= 0) text[out] = char(c), src[out] = src[i], ++out;
    }
    text.resize(out);
    src.resize(out);
    return true;
  }
  // normalize() on code points, each with its alignment, as NormalizedString's filter, map and
  // transform set them: a kept or mapped character keeps its own, a character a transform adds
  // (change 1) takes the one before it (the Chinese character's spaces, a lowercase's extra
  // characters, NFD's marks), NFD's replacing characters take the alignments in order.
  // BertNormalizer's clean_text for one character: false drops it (NUL, U+FFFD, controls
  // other than \t \n \r), whitespace becomes ' '. One definition for the plain and aligned paths.
  static bool clean_char(uint32_t& c) {
    const bool control = !(c == '\t' || c == '\n' || c == '\r') && is_other(c);
    if (c == 0 || c == 0xFFFD || control) return false;
    if (c == '\t' || c == '\n' || c == '\r' || is_unicode_whitespace(c)) c = ' ';
    return true;
  }
  bool has_aligned() const override { return true; }
  bool normalize_aligned(std::string& text, std::vector<ByteRange>& align) const override {
    thread_local std::vector<uint32_t> cps, next;
    thread_local std::vector<ByteRange> al, next_al;
    cps.clear(), al.clear();
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    for (size_t i = 0; i < text.size();) {
      const int len = utf8_lead_length(p[i]);
      uint32_t c = utf8_decode(p + i, len);
      const ByteRange a = align[i];
      i += size_t(len);
      if (clean_text_ && !clean_char(c)) continue;
      if (chinese_ && is_chinese_char(c)) {
        cps.insert(cps.end(), {' ', c, ' '});
        al.insert(al.end(), {a, a, a});
        continue;
      }
      cps.push_back(c);
      al.push_back(a);
    }
    if (strip_accents_) {
      const std::vector<CharChange> nfd = normalize_form(to_utf8(cps), NormalForm::nfd);
      next.clear(), next_al.clear();
      size_t idx = 0;  // characters of cps consumed (NormalizedString::transform_range's offset)
      for (const CharChange& c : nfd) {
        ByteRange a{0, 0};
        if (c.change > 0) {
          if (idx > 0) a = al[idx - 1];
        } else {
          a = al[idx];
          idx += 1 + size_t(-c.change);
        }
        if (!is_mark_nonspacing(c.cp)) next.push_back(c.cp), next_al.push_back(a);
      }
      cps.swap(next), al.swap(next_al);
    }
    if (lowercase_) {
      next.clear(), next_al.clear();
      for (size_t k = 0; k < cps.size(); ++k) {
        append_lowercase(cps[k], next);
        next_al.resize(next.size(), al[k]);
      }
      cps.swap(next), al.swap(next_al);
    }
    text.clear();
    align.clear();
    for (size_t k = 0; k < cps.size(); ++k) {
      utf8_append(text, cps[k]);
      align.resize(text.size(), al[k]);
    }
    return true;
  }
  // normalize() character by character, without alignments: ASCII through a table made at
  // construction from the same predicates; a text with other characters through the same
  // steps on its code points (NFD with normalize_form itself).
  void normalize_plain(std::string& text) const override {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t ascii = 0;
    while (ascii < n && p[ascii] < 0x80) ++ascii;
    if (ascii == n) {
      size_t out = 0;
      for (size_t i = 0; i < n; ++i)
        if (const int16_t c = ascii_[p[i]]; c >= 0) text[out++] = char(c);
      text.resize(out);
      return;
    }
    thread_local std::vector<uint32_t> cps, next;
    cps.clear();
    for (size_t i = 0; i < n;) {
      const int len = utf8_lead_length(p[i]);
      uint32_t c = utf8_decode(p + i, len);
      i += size_t(len);
      if (clean_text_ && !clean_char(c)) continue;
      if (chinese_ && is_chinese_char(c)) {
        cps.push_back(' ');
        cps.push_back(c);
        cps.push_back(' ');
        continue;
      }
      cps.push_back(c);
    }
    if (strip_accents_) {
      const std::vector<CharChange> nfd = normalize_form(to_utf8(cps), NormalForm::nfd);
      cps.clear();
      for (const CharChange& c : nfd)
        if (!is_mark_nonspacing(c.cp)) cps.push_back(c.cp);
    }
    if (lowercase_) {
      next.clear();
      for (uint32_t c : cps) append_lowercase(c, next);
      cps.swap(next);
    }
    text.clear();
    for (uint32_t c : cps) utf8_append(text, c);
  }

 private:
  // What normalize() makes of each ASCII character alone: -1 dropped, else the character (no
  // ASCII character is Chinese, decomposes, is a mark, or lowercases to more than one).
  std::array<int16_t, 128> ascii_table() const {
    std::array<int16_t, 128> t{};
    std::vector<uint32_t> lower;
    for (uint32_t c = 0; c < 128; ++c) {
      int32_t out = int32_t(c);
      if (clean_text_) {
        const bool control = !(c == '\t' || c == '\n' || c == '\r') && is_other(c);
        // Filtered before the whitespace map, as normalize() does: \v and \f are Cc and
        // White_Space, and removed.
        if (c == 0 || control)
          out = -1;
        else if (c == '\t' || c == '\n' || c == '\r' || is_unicode_whitespace(c))
          out = ' ';
      }
      if (out >= 0 && lowercase_) {
        lower.clear();
        append_lowercase(uint32_t(out), lower);
        RC_CHECK(lower.size() == 1 && lower[0] < 128, Errc::internal, "lowercase of ASCII ", c, " is not ASCII");
        out = int32_t(lower[0]);
      }
      t[c] = int16_t(out);
    }
    return t;
  }

  bool clean_text_, chinese_, strip_accents_, lowercase_;
  std::array<int16_t, 128> ascii_ = ascii_table();
};

class FormNormalizer final : public Normalizer {
 public:
  explicit FormNormalizer(NormalForm form) : form_(form) {}
  void normalize(NormalizedString& s) const override { s.transform(normalize_form(s.get(), form_), 0); }
  bool has_plain() const override { return true; }
  bool normalize_ascii_aligned(std::string& text, std::vector<uint32_t>&) const override { return is_ascii(text); }
  void normalize_plain(std::string& text) const override {
    if (is_ascii(text)) return;  // every form leaves ASCII as it is
    const std::vector<CharChange> out = normalize_form(text, form_);
    text.clear();
    for (const CharChange& c : out) utf8_append(text, c.cp);
  }
  bool has_aligned() const override { return true; }
  bool normalize_aligned(std::string& text, std::vector<ByteRange>& align) const override {
    return is_ascii(text) || transform_aligned(text, align, normalize_form(text, form_), 0);
  }

 private:
  NormalForm form_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override { s.lowercase(); }
  bool has_plain() const override { return true; }
  bool normalize_ascii_aligned(std::string& text, std::vector<uint32_t>&) const override {
    if (!is_ascii(text)) return false;
    normalize_plain(text);
    return true;
  }
  // NormalizedString::lowercase: a character's first lowercase character replaces it, the
  // others are new (change 1).
  bool has_aligned() const override { return true; }
  bool normalize_aligned(std::string& text, std::vector<ByteRange>& align) const override {
    if (is_ascii(text)) {
      normalize_plain(text);
      return true;
    }
    std::vector<CharChange> dest;
    std::vector<uint32_t> lower;
    for (uint32_t cp : code_points(text)) {
      lower.clear();
      append_lowercase(cp, lower);
      for (size_t i = 0; i < lower.size(); ++i) dest.push_back({lower[i], i > 0 ? 1 : 0});
    }
    return transform_aligned(text, align, dest, 0);
  }
  void normalize_plain(std::string& text) const override {
    if (is_ascii(text)) {
      for (char& c : text)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
      return;
    }
    std::vector<uint32_t> lower;
    for (uint32_t c : code_points(text)) append_lowercase(c, lower);
    text = to_utf8(lower);
  }
};

// strip.rs StripAccents: every combining mark (Mn, Mc, Me: measured on tokenizers 0.22, which
// drops U+0903 and U+20E3 too), unlike BertNormalizer's strip_accents (Mn only).
class StripAccentsNormalizer final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override {
    s.filter([](uint32_t c) { return !is_combining_mark(c); });
  }
  bool has_plain() const override { return true; }
  // NormalizedString::filter: each kept character removes the run removed after it, the run
  // before the first kept one is the initial offset.
  bool has_aligned() const override { return true; }
  bool normalize_aligned(std::string& text, std::vector<ByteRange>& align) const override {
    if (is_ascii(text)) return true;
    const std::vector<uint32_t> cps = code_points(text);
    std::vector<CharChange> dest;
    int64_t removed = 0;
    for (size_t i = cps.size(); i-- > 0;) {
      if (!is_combining_mark(cps[i])) {
        dest.push_back({cps[i], removed > 0 ? -removed : 0});
        removed = 0;
      } else {
        ++removed;
      }
    }
    std::reverse(dest.begin(), dest.end());
    return transform_aligned(text, align, dest, size_t(removed));
  }
  bool normalize_ascii_aligned(std::string& text, std::vector<uint32_t>&) const override { return is_ascii(text); }
  void normalize_plain(std::string& text) const override {
    if (is_ascii(text)) return;
    std::vector<uint32_t> kept;
    for (uint32_t c : code_points(text))
      if (!is_combining_mark(c)) kept.push_back(c);
    text = to_utf8(kept);
  }
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(NormalizedString& s) const override { s.lrstrip(left_, right_); }
  bool has_plain() const override { return true; }
  bool normalize_ascii_aligned(std::string& text, std::vector<uint32_t>& src) const override {
    if (!is_ascii(text)) return false;
    size_t begin = 0, end = text.size();
    if (left_)
      while (begin < end && is_unicode_whitespace(static_cast<unsigned char>(text[begin]))) ++begin;
    if (right_)
      while (end > begin && is_unicode_whitespace(static_cast<unsigned char>(text[end - 1]))) --end;
    text = text.substr(begin, end - begin);
    src = std::vector<uint32_t>(src.begin() + std::ptrdiff_t(begin), src.begin() + std::ptrdiff_t(end));
    return true;
  }
  void normalize_plain(std::string& text) const override {
    const ByteRange k = kept(text);
    if (k.first > 0 || k.second < text.size()) text = text.substr(k.first, k.second - k.first);
  }
  // lrstrip keeps each character it keeps with its own alignment (transform with the stripped
  // characters as its initial offset and the last kept one's change): the same cut of both.
  bool has_aligned() const override { return true; }
  bool normalize_aligned(std::string& text, std::vector<ByteRange>& align) const override {
    if (!align.empty() && align[0].first == align[0].second) return false;  // transform's range starts later
    const ByteRange k = kept(text);
    if (k.first == 0 && k.second == text.size()) return true;
    text = text.substr(k.first, k.second - k.first);
    align.erase(align.begin() + std::ptrdiff_t(k.second), align.end());
    align.erase(align.begin(), align.begin() + std::ptrdiff_t(k.first));
    return true;
  }

 private:
  // The bytes left once the whitespace is stripped from the ends asked for.
  ByteRange kept(std::string_view text) const {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    size_t begin = 0, end = text.size();
    if (left_)
      while (begin < end) {
        const int len = utf8_lead_length(p[begin]);
        if (!is_unicode_whitespace(utf8_decode(p + begin, len))) break;
        begin += size_t(len);
      }
    if (right_)
      while (end > begin) {
        size_t last = end - 1;
        while (last > begin && (p[last] & 0xC0) == 0x80) --last;
        if (!is_unicode_whitespace(utf8_decode(p + last, utf8_lead_length(p[last])))) break;
        end = last;
      }
    return {begin, end};
  }

  bool left_, right_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)),
        content_(std::move(content)),
        space_runs_(pattern_.regex && pattern_.regex->pattern() == " {2,}") {}
  void normalize(NormalizedString& s) const override { s.replace(pattern_.find_matches(s.get()), content_); }
  bool has_plain() const override { return true; }
  void normalize_plain(std::string& text) const override {
    if (surely_unmatched(text)) return;
    const std::vector<PatternMatch> matches = find_matches(text);
    if (std::none_of(matches.begin(), matches.end(), [](const PatternMatch& m) { return m.is_match; })) return;
    std::string out;
    out.reserve(text.size());
    for (const PatternMatch& m : matches) {
      if (m.is_match)
        out += content_;
      else
        out.append(text, m.begin, m.end - m.begin);
    }
    text = std::move(out);
  }
  // NormalizedString::replace's alignments (replace_aligned); an empty match, which takes the
  // alignment before it or (0, 0), leaves the simple forms: the general path.
  bool has_aligned() const override { return true; }
  bool normalize_aligned(std::string& text, std::vector<ByteRange>& align) const override {
    if (surely_unmatched(text)) return true;
    const std::vector<PatternMatch> matches = find_matches(text);
    for (const PatternMatch& m : matches)
      if (m.is_match && m.begin == m.end) return false;
    replace_aligned(text, align, matches, content_);
    return true;
  }

 private:
  // A literal absent from the text, or no two spaces in a row for " {2,}" (the common cases):
  // one search, no regex run.
  bool surely_unmatched(std::string_view text) const {
    if (!pattern_.regex) return text.find(pattern_.literal) == std::string::npos;
    return space_runs_ && text.find("  ") == std::string::npos;
  }
  // The pattern's matches; XLMRobertaConverter's " {2,}" (runs of two or more U+0020, leftmost
  // and greedy) found without the regex engine, the same pieces.
  std::vector<PatternMatch> find_matches(std::string_view text) const {
    if (!space_runs_) return pattern_.find_matches(text);
    if (text.empty()) return {{0, 0, false}};
    std::vector<PatternMatch> out;
    size_t prev = 0;
    for (size_t pos = text.find("  "); pos != std::string_view::npos; pos = text.find("  ", pos)) {
      size_t end = pos + 2;
      while (end < text.size() && text[end] == ' ') ++end;
      if (prev != pos) out.push_back({prev, pos, false});
      out.push_back({pos, end, true});
      prev = pos = end;
    }
    if (prev != text.size()) out.push_back({prev, text.size(), false});
    return out;
  }

  Pattern pattern_;
  std::string content_;
  bool space_runs_;  // the pattern is the regex " {2,}"
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}
  void normalize(NormalizedString& s) const override {
    if (!s.empty()) s.prepend(prepend_);
  }
  bool has_plain() const override { return true; }
  void normalize_plain(std::string& text) const override {
    if (!text.empty()) text.insert(0, prepend_);
  }
  // NormalizedString::prepend: the new characters and the first one all take the first's
  // alignment (transform_range over the first character).
  bool has_aligned() const override { return true; }
  bool normalize_aligned(std::string& text, std::vector<ByteRange>& align) const override {
    if (text.empty()) return true;
    if (prepend_.empty()) return false;  // the first character alone as new: (0, 0)
    text.insert(0, prepend_);
    align.insert(align.begin(), prepend_.size(), align[0]);
    return true;
  }

 private:
  std::string prepend_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(NormalizedString& s) const override {
    for (const auto& n : steps_) n->normalize(s);
  }
  bool has_plain() const override {
    return std::all_of(steps_.begin(), steps_.end(), [](const auto& n) { return n->has_plain(); });
  }
  void normalize_plain(std::string& text) const override {
    for (const auto& n : steps_) n->normalize_plain(text);
  }
  bool normalize_ascii_aligned(std::string& text, std::vector<uint32_t>& src) const override {
    for (const auto& n : steps_)
      if (!n->normalize_ascii_aligned(text, src)) return false;
    return true;
  }
  bool has_aligned() const override {
    return std::all_of(steps_.begin(), steps_.end(), [](const auto& n) { return n->has_aligned(); });
  }
  bool normalize_aligned(std::string& text, std::vector<ByteRange>& align) const override {
    for (const auto& n : steps_)
      if (!n->normalize_aligned(text, align)) return false;
    return true;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

// tokenizers/src/normalizers/precompiled.rs (the replace() form of 0.13 and later): each
// grapheme under 6 bytes is looked up whole, else each of its characters.
void replace_changes(std::vector<CharChange>& t, std::string_view old_part, std::string_view new_part) {
  const int64_t old_count = int64_t(code_points(old_part).size());
  const std::vector<uint32_t> added = code_points(new_part);
  const int64_t diff = int64_t(added.size()) - old_count;
  for (uint32_t c : added) t.push_back({c, 0});
  if (diff > 0) {
    for (int64_t k = 0; k < diff && size_t(k) < t.size(); ++k) t[t.size() - 1 - size_t(k)].change = 1;
  } else if (diff < 0 && !t.empty()) {
    t.back().change += diff;
  }
}

class PrecompiledNormalizer final : public Normalizer {
 public:
  explicit PrecompiledNormalizer(PrecompiledCharsmap map) : map_(std::move(map)) {}
  void normalize(NormalizedString& s) const override {
    const std::string& text = s.get();
    std::vector<CharChange> t;
    t.reserve(text.size());
    bool modified = false;
    for (const ByteRange& g : graphemes(text)) {
      const std::string_view grapheme = std::string_view(text).substr(g.first, g.second - g.first);
      if (grapheme.size() < 6) {
        if (auto norm = map_.transform(grapheme)) {
          modified = true;
          replace_changes(t, grapheme, *norm);
          continue;
        }
      }
      const auto* p = reinterpret_cast<const unsigned char*>(grapheme.data());
      for (size_t i = 0; i < grapheme.size();) {
        const size_t len = size_t(utf8_lead_length(p[i]));
        const std::string_view part = grapheme.substr(i, len);
        if (auto norm = map_.transform(part)) {
          modified = true;
          replace_changes(t, part, *norm);
        } else {
          t.push_back({utf8_decode(p + i, int(len)), 0});
        }
        i += len;
      }
    }
    if (modified) s.transform(t, 0);
  }

  bool has_plain() const override { return true; }
  // normalize() on plain text. ASCII text is cut into graphemes without the segmenter: each
  // character is one, but CR LF (UAX #29 GB3); lookups of single ASCII characters and of CR LF
  // come from tables made at construction.
  void normalize_plain(std::string& text) const override {
    thread_local std::string out;
    out.clear();
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    if (is_ascii(text)) {
      if (!ascii_modifies_) return;
      for (size_t i = 0; i < n; ++i) {
        if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n' && crlf_) {
          out += *crlf_;
          ++i;
          continue;
        }
        if (const auto& r = ascii_[p[i]])
          out += *r;
        else
          out.push_back(char(p[i]));
      }
      text.swap(out);
      return;
    }
    for (const ByteRange& g : graphemes(text)) {
      const std::string_view grapheme = std::string_view(text).substr(g.first, g.second - g.first);
      if (grapheme.size() < 6) {
        if (auto norm = map_.transform(grapheme)) {
          out += *norm;
          continue;
        }
      }
      for (size_t i = 0; i < grapheme.size();) {
        const size_t len = size_t(utf8_lead_length(static_cast<unsigned char>(grapheme[i])));
        const std::string_view part = grapheme.substr(i, len);
        if (auto norm = map_.transform(part))
          out += *norm;
        else
          out += part;
        i += len;
      }
    }
    text.swap(out);
  }

  // normalize() with its alignments, without the CharChange list: the changes are made as
  // normalize() makes them and applied at once as NormalizedString::transform_range applies
  // them (an unchanged run is copied with its alignments). replace_changes may still edit the
  // last change made (a removal adds its count to it), so the last one waits (pending) until
  // the next is made. ASCII text with no character the charsmap rewrites (most text) is left
  // as it is, as normalize() leaves it.
  bool has_aligned() const override { return true; }
  bool normalize_aligned(std::string& text, std::vector<ByteRange>& align) const override {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t first_hit = 0;
    while (first_hit < n && p[first_hit] < 0x80 && !ascii_hit_[p[first_hit]]) ++first_hit;
    if (first_hit == n) return true;
    if (align[0].first == align[0].second) return false;  // transform's range starts later
    AlignedChanges changes(text, align);
    size_t run = 0;  // [run, at): characters kept as they are, not yet handed over
    auto replace = [&](size_t at, size_t len, std::string_view norm) {
      changes.keep(run, at);
      changes.replace(std::string_view(text).substr(at, len), norm);
      run = at + len;
    };
    auto by_character = [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end;) {
        const size_t len = size_t(utf8_lead_length(p[i]));
        if (auto norm = lookup_in(text, i, len)) replace(i, len, *norm);
        i += len;
      }
    };
    if (is_ascii(std::string_view(text).substr(first_hit))) {
      // ASCII: each character a grapheme but CR LF (as normalize_plain).
      for (size_t i = first_hit; i < n; ++i) {
        if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n' && crlf_) {
          replace(i, 2, *crlf_);
          ++i;
          continue;
        }
        if (ascii_[p[i]]) replace(i, 1, *ascii_[p[i]]);
      }
    } else {
      for (const ByteRange& g : graphemes(text)) {
        const size_t len = g.second - g.first;
        if (len < 6)
          if (auto norm = lookup_in(text, g.first, len)) {
            replace(g.first, len, *norm);
            continue;
          }
        // A grapheme of one character was looked up whole (under 6 bytes: every character).
        if (len >= 6 || size_t(utf8_lead_length(p[g.first])) < len) by_character(g.first, g.second);
      }
    }
    changes.keep(run, n);
    return changes.finish(text, align);
  }

 private:
  // The charsmap's rewrite of text's bytes [at, at + len) (ASCII characters from the table).
  std::optional<std::string_view> lookup_in(std::string_view text, size_t at, size_t len) const {
    if (len == 1 && static_cast<unsigned char>(text[at]) < 0x80) {
      const auto& r = ascii_[static_cast<unsigned char>(text[at])];
      if (r) return std::string_view(*r);
      return std::nullopt;
    }
    return map_.transform(text.substr(at, len));
  }

  // NormalizedString::transform_range(0, len, changes, 0) over a text and its alignments, the
  // changes given in order: keep() for characters kept as they are (change 0), replace() for
  // what replace_changes makes of a rewritten piece.
  class AlignedChanges {
   public:
    AlignedChanges(const std::string& text, const std::vector<ByteRange>& align) : text_(text), align_(align) {
      out_.reserve(text.size() + 8);
      out_align_.reserve(text.size() + 8);
    }
    void keep(size_t begin, size_t end) {
      if (begin >= end) return;
      const auto* p = reinterpret_cast<const unsigned char*>(text_.data());
      size_t last = end - 1;
      while (last > begin && (p[last] & 0xC0) == 0x80) --last;
      commit();
      if (pos_ == begin) {  // in step with the text: a copy, the last character waiting
        out_.append(text_, begin, last - begin);
        out_align_.insert(out_align_.end(), align_.begin() + std::ptrdiff_t(begin),
                          align_.begin() + std::ptrdiff_t(last));
        pos_ = last;
      } else {
        for (size_t i = begin; i < last;) {
          const int len = utf8_lead_length(p[i]);
          make(utf8_decode(p + i, len), 0);
          i += size_t(len);
        }
      }
      make(utf8_decode(p + last, utf8_lead_length(p[last])), 0);
    }
    // replace_changes(old_part -> new_part).
    void replace(std::string_view old_part, std::string_view new_part) {
      const auto* o = reinterpret_cast<const unsigned char*>(old_part.data());
      const auto* q = reinterpret_cast<const unsigned char*>(new_part.data());
      int64_t old_count = 0, new_count = 0;
      for (size_t i = 0; i < old_part.size(); ++i) old_count += (o[i] & 0xC0) != 0x80;
      for (size_t i = 0; i < new_part.size(); ++i) new_count += (q[i] & 0xC0) != 0x80;
      const int64_t diff = new_count - old_count;
      int64_t k = 0;
      for (size_t i = 0; i < new_part.size(); ++k) {
        const int len = utf8_lead_length(q[i]);
        make(utf8_decode(q + i, len), diff > 0 && k >= new_count - diff ? 1 : 0);
        i += size_t(len);
      }
      if (diff < 0 && pending_) change_ += diff;
    }
    // false: a change HF would align to (0, 0) (the general path then).
    bool finish(std::string& text, std::vector<ByteRange>& align) {
      commit();
      if (failed_) return false;
      text.swap(out_);
      align.swap(out_align_);
      return true;
    }

   private:
    void make(uint32_t cp, int64_t change) {
      commit();
      cp_ = cp, change_ = change, pending_ = true;
    }
    size_t next_char(size_t at) const { return at + size_t(utf8_lead_length(static_cast<unsigned char>(text_[at]))); }
    // transform_range's step for one change: its alignment, then the replaced characters passed.
    void commit() {
      if (!pending_) return;
      pending_ = false;
      const size_t n = text_.size();
      ByteRange a;
      if (change_ > 0) {
        if (pos_ < 1) failed_ = true;
        a = pos_ < 1 ? ByteRange{0, 0} : align_[std::min(pos_, n) - 1];
      } else {
        a = pos_ < n ? align_[pos_] : align_.back();
      }
      if (change_ <= 0 && pos_ < n) pos_ = next_char(pos_);
      for (int64_t k = 0; k < -change_ && pos_ < n; ++k) pos_ = next_char(pos_);
      const size_t before = out_.size();
      utf8_append(out_, cp_);
      out_align_.insert(out_align_.end(), out_.size() - before, a);
    }

    const std::string& text_;
    const std::vector<ByteRange>& align_;
    std::string out_;
    std::vector<ByteRange> out_align_;
    size_t pos_ = 0;  // the next character of text_ not replaced yet (transform_range's offset)
    uint32_t cp_ = 0;
    int64_t change_ = 0;
    bool pending_ = false, failed_ = false;
  };

  PrecompiledCharsmap map_;
  std::array<std::optional<std::string>, 128> ascii_ = [this] {
    std::array<std::optional<std::string>, 128> t;
    for (int c = 0; c < 128; ++c) {
      const char ch = char(c);
      if (auto r = map_.transform(std::string_view(&ch, 1))) t[size_t(c)] = std::string(*r);
    }
    return t;
  }();
  std::optional<std::string> crlf_ = [this]() -> std::optional<std::string> {
    if (auto r = map_.transform("\r\n")) return std::string(*r);
    return std::nullopt;
  }();
  bool ascii_modifies_ = [this] {
    for (const auto& r : ascii_)
      if (r) return true;
    return crlf_.has_value();
  }();
  // ASCII bytes where normalize_aligned starts its work: those the charsmap rewrites, and CR
  // when CR LF is rewritten.
  std::array<bool, 128> ascii_hit_ = [this] {
    std::array<bool, 128> t{};
    for (size_t c = 0; c < 128; ++c) t[c] = ascii_[c].has_value() || (c == '\r' && crlf_);
    return t;
  }();
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j, const Source& src) {
  const std::string type = type_of(j, src, "normalizer");
  if (type == "BertNormalizer") {
    const bool lowercase = get_bool(j, "lowercase", true);
    // strip_accents: null follows lowercase (tokenizers' BertNormalizer, transformers' BasicTokenizer).
    const bool strip = get_bool(j, "strip_accents", lowercase);
    return std::make_unique<BertNormalizer>(get_bool(j, "clean_text", true), get_bool(j, "handle_chinese_chars", true),
                                            strip, lowercase);
  }
  if (type == "NFC") return std::make_unique<FormNormalizer>(NormalForm::nfc);
  if (type == "NFD") return std::make_unique<FormNormalizer>(NormalForm::nfd);
  if (type == "NFKC") return std::make_unique<FormNormalizer>(NormalForm::nfkc);
  if (type == "NFKD") return std::make_unique<FormNormalizer>(NormalForm::nfkd);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Strip")
    return std::make_unique<StripNormalizer>(get_bool(j, "strip_left", true), get_bool(j, "strip_right", true));
  if (type == "Replace")
    return std::make_unique<ReplaceNormalizer>(read_pattern(j.value("pattern", json()), src, "Replace normalizer"),
                                               get_string(j, "content", ""));
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(get_string(j, "prepend", ""));
  if (type == "Precompiled") {
    const std::string b64 = get_string(j, "precompiled_charsmap", "");
    return std::make_unique<PrecompiledNormalizer>(
        PrecompiledCharsmap::from_base64(b64, "tokenizer file '" + src.file + "': Precompiled normalizer"));
  }
  if (type == "Sequence") {
    const json& list = j.value("normalizers", json::array());
    RC_CHECK(list.is_array() && list.size() <= kMaxComponents, Errc::format, "tokenizer file '", src.file,
             "': normalizer Sequence must list at most ", kMaxComponents, " normalizers");
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const json& n : list) steps.push_back(make_normalizer(n, src));
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  unknown_type(src, "normalizer", type);
}

}  // namespace rc::tokenizer::pipeline
