// Pre-tokenizers (tokenizers/src/pre_tokenizers/*.rs).
#include <array>

#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pipeline/build.h"
#include "tokenizer/pipeline/unicode.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/utf8.h"

namespace rc::tokenizer::pipeline {
using nlohmann::json;
namespace {

std::vector<Split> to_splits(std::vector<NormalizedString> pieces) {
  std::vector<Split> out;
  out.reserve(pieces.size());
  for (NormalizedString& p : pieces) out.push_back({std::move(p), std::nullopt});
  return out;
}

bool is_whitespace(uint32_t c) { return is_unicode_whitespace(c); }

// bert.rs: whitespace removed, then punctuation isolated.
class BertPreTokenizer final : public PreTokenizer {
 public:
  void pre_tokenize(PreTokenizedString& s) const override {
    s.split([](size_t, NormalizedString&& n) {
      return to_splits(n.split(find_char_matches(n.get(), is_whitespace), SplitBehavior::removed));
    });
    s.split([](size_t, NormalizedString&& n) {
      return to_splits(n.split(find_char_matches(n.get(), is_punctuation), SplitBehavior::isolated));
    });
  }
  bool has_plain() const override { return true; }
  bool plain_keeps_text() const override { return true; }
  // The same pieces in one pass: runs of characters that are neither whitespace nor
  // punctuation, and each punctuation character alone.
  void pre_tokenize_plain(std::string_view text, bool, std::string& arena,
                          std::vector<ByteRange>& pieces) const override {
    const size_t base = arena.size();
    arena.append(text);
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    size_t word = SIZE_MAX;  // where the current run began
    for (size_t i = 0; i < text.size();) {
      int len = 1;
      Kind kind;
      if (p[i] < 0x80) {
        kind = ascii_[p[i]];
      } else {
        len = utf8_lead_length(p[i]);
        const uint32_t c = utf8_decode(p + i, len);
        kind = is_whitespace(c) ? Kind::space : is_punctuation(c) ? Kind::punct : Kind::word;
      }
      if (kind != Kind::word && word != SIZE_MAX) pieces.push_back({base + word, base + i}), word = SIZE_MAX;
      if (kind == Kind::punct) pieces.push_back({base + i, base + i + size_t(len)});
      if (kind == Kind::word && word == SIZE_MAX) word = i;
      i += size_t(len);
    }
    if (word != SIZE_MAX) pieces.push_back({base + word, base + text.size()});
  }

 private:
  enum class Kind : uint8_t { word, space, punct };
  // ASCII from the same predicates as pre_tokenize.
  std::array<Kind, 128> ascii_ = [] {
    std::array<Kind, 128> t{};
    for (uint32_t c = 0; c < 128; ++c)
      t[c] = is_whitespace(c) ? Kind::space : is_punctuation(c) ? Kind::punct : Kind::word;
    return t;
  }();
};

class CharSplitPreTokenizer final : public PreTokenizer {
 public:
  CharSplitPreTokenizer(std::function<bool(uint32_t)> pred, SplitBehavior behavior)
      : pred_(std::move(pred)), behavior_(behavior) {}
  void pre_tokenize(PreTokenizedString& s) const override {
    s.split(
        [&](size_t, NormalizedString&& n) { return to_splits(n.split(find_char_matches(n.get(), pred_), behavior_)); });
  }

 private:
  std::function<bool(uint32_t)> pred_;
  SplitBehavior behavior_;
};

// whitespace.rs: \w+|[^\w\s]+ (Rust's regex crate: \w is Unicode word, \s White_Space),
// inverted and removed, so the runs stay and the whitespace between them goes.
class WhitespacePreTokenizer final : public PreTokenizer {
 public:
  void pre_tokenize(PreTokenizedString& s) const override {
    s.split([](size_t, NormalizedString&& n) {
      const std::string& text = n.get();
      std::vector<PatternMatch> matches;
      const auto* p = reinterpret_cast<const unsigned char*>(text.data());
      size_t prev = 0, i = 0;
      auto kind = [&](size_t at, int* len) {
        *len = utf8_lead_length(p[at]);
        const uint32_t c = utf8_decode(p + at, *len);
        return is_word_char(c) ? 1 : is_unicode_whitespace(c) ? 0 : 2;
      };
      while (i < text.size()) {
        int len;
        const int k = kind(i, &len);
        if (k == 0) {
          i += size_t(len);
          continue;
        }
        size_t j = i + size_t(len);
        while (j < text.size() && kind(j, &len) == k) j += size_t(len);
        if (prev != i) matches.push_back({prev, i, false});
        matches.push_back({i, j, true});
        prev = i = j;
      }
      if (prev != text.size() || text.empty()) matches.push_back({prev, text.size(), false});
      invert(matches);
      return to_splits(n.split(std::move(matches), SplitBehavior::removed));
    });
  }
};

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(PreTokenizedString& s) const override {
    s.split([&](size_t, NormalizedString&& n) {
      std::vector<PatternMatch> m = pattern_.find_matches(n.get());
      if (invert_) invert(m);
      return to_splits(n.split(std::move(m), behavior_));
    });
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// metaspace.rs (0.19+: prepend_scheme, split).
class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(uint32_t replacement, PrependScheme scheme, bool split)
      : replacement_(replacement), scheme_(scheme), split_(split) {
    utf8_append(rep_, replacement);
  }
  void pre_tokenize(PreTokenizedString& s) const override {
    s.split([&](size_t, NormalizedString&& n) {
      n.replace(find_char_matches(n.get(), [](uint32_t c) { return c == ' '; }), rep_);
      const bool starts = n.get().compare(0, rep_.size(), rep_) == 0;
      if (!starts &&
          (scheme_ == PrependScheme::always || (scheme_ == PrependScheme::first && n.offsets_original().first == 0)))
        n.prepend(rep_);
      if (!split_) {
        std::vector<Split> out;
        out.push_back({std::move(n), std::nullopt});
        return out;
      }
      const uint32_t r = replacement_;
      return to_splits(
          n.split(find_char_matches(n.get(), [r](uint32_t c) { return c == r; }), SplitBehavior::merged_with_next));
    });
  }
  bool has_plain() const override { return true; }
  bool uses_position() const override { return scheme_ == PrependScheme::first; }
  // The same on plain text: spaces replaced, the prefix, then a piece before each replacement
  // character (merged_with_next).
  void pre_tokenize_plain(std::string_view text, bool at_start, std::string& arena,
                          std::vector<ByteRange>& pieces) const override {
    const size_t base = arena.size();
    for (char c : text) {
      if (c == ' ')
        arena += rep_;
      else
        arena.push_back(c);
    }
    const std::string_view replaced = std::string_view(arena).substr(base);
    const bool starts = replaced.compare(0, rep_.size(), rep_) == 0;
    if (!replaced.empty() && !starts &&
        (scheme_ == PrependScheme::always || (scheme_ == PrependScheme::first && at_start)))
      arena.insert(base, rep_);
    cut(arena, base, pieces);
  }
  // The same with where each byte comes from, as NormalizedString's replace and prepend align
  // it: a replacement character takes its space's alignment, a prefix the first character's.
  // The pieces are cut as the text is copied: before each replacement character made of a
  // space, and before each one the text holds (searched only when it holds one).
  bool has_aligned() const override { return true; }
  void pre_tokenize_aligned(std::string_view text, bool at_start, std::string& arena, std::vector<AlignRun>& runs,
                            std::vector<ByteRange>& pieces) const override {
    if (text.empty()) return;
    const size_t base = arena.size();
    size_t piece = base;
    auto boundary = [&](size_t at) {
      if (split_ && at > base) pieces.push_back({piece, at}), piece = at;
    };
    const bool starts = text[0] == ' ' || text.compare(0, rep_.size(), rep_) == 0;
    if (!starts && (scheme_ == PrependScheme::always || (scheme_ == PrependScheme::first && at_start))) {
      runs.push_back({arena.size(), 0, true});
      arena += rep_;
    }
    const bool holds_replacement = text.find(rep_) != std::string_view::npos;
    for (size_t i = 0; i < text.size();) {
      const size_t space = std::min(text.find(' ', i), text.size());
      if (space > i) {
        const size_t at = arena.size();
        runs.push_back({at, i, false});
        arena.append(text, i, space - i);
        if (holds_replacement) {
          const std::string_view run = text.substr(i, space - i);
          for (size_t r = run.find(rep_); r != std::string_view::npos; r = run.find(rep_, r + 1)) boundary(at + r);
        }
      }
      if (space == text.size()) break;
      boundary(arena.size());
      runs.push_back({arena.size(), space, true});
      arena += rep_;
      i = space + 1;
    }
    pieces.push_back({split_ ? piece : base, arena.size()});
  }

 private:
  // The pieces of arena[base, end) (split: one before each replacement character,
  // merged_with_next); none when it is empty.
  void cut(const std::string& arena, size_t base, std::vector<ByteRange>& pieces) const {
    const size_t end = arena.size();
    if (end == base) return;
    if (!split_) {
      pieces.push_back({base, end});
      return;
    }
    const std::string_view all(arena);
    size_t piece = base;
    for (size_t at = all.find(rep_, base + 1); at != std::string_view::npos && at < end; at = all.find(rep_, at + 1)) {
      pieces.push_back({piece, at});
      piece = at;
    }
    pieces.push_back({piece, end});
  }

  uint32_t replacement_;
  std::string rep_;
  PrependScheme scheme_;
  bool split_;
};

// byte_level.rs: the prefix space, GPT-2's split (pretokenize.h, the regex written out), then
// every byte shown as its character.
class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void pre_tokenize(PreTokenizedString& s) const override {
    s.split([&](size_t, NormalizedString&& n) {
      if (add_prefix_space_ && (n.get().empty() || n.get()[0] != ' ')) n.prepend(" ");
      std::vector<Split> out;
      if (!use_regex_) {
        out.push_back({std::move(n), std::nullopt});
        return out;
      }
      std::vector<PatternMatch> m;
      gpt2_split(n.get(), [&](size_t b, size_t e) { m.push_back({b, e, true}); });
      if (m.empty()) m.push_back({0, 0, false});
      return to_splits(n.split(std::move(m), SplitBehavior::isolated));
    });
    s.normalize([](NormalizedString& n) {
      std::vector<CharChange> t;
      const std::string& text = n.get();
      const auto* p = reinterpret_cast<const unsigned char*>(text.data());
      for (size_t i = 0; i < text.size();) {
        const size_t len = size_t(utf8_lead_length(p[i]));
        for (size_t k = 0; k < len; ++k) t.push_back({byte_to_codepoint(p[i + k]), k > 0 ? 1 : 0});
        i += len;
      }
      n.transform(t, 0);
    });
  }

 private:
  bool add_prefix_space_, use_regex_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void pre_tokenize(PreTokenizedString& s) const override {
    for (const auto& p : steps_) p->pre_tokenize(s);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

uint32_t single_char(const std::string& s, const Source& src, const char* what) {
  const std::vector<uint32_t> cps = is_valid_utf8(s) ? code_points(s) : std::vector<uint32_t>{};
  RC_CHECK(cps.size() == 1, Errc::format, "tokenizer file '", src.file, "': ", what, " must be one character, found '",
           s.substr(0, 40), "'", "\nHINT: the file is corrupt; download it again");
  return cps[0];
}

}  // namespace

// metaspace.rs's deserializer: prepend_scheme, or the older add_prefix_space.
PrependScheme read_prepend_scheme(const json& j, const Source& src) {
  if (auto it = j.find("prepend_scheme"); it != j.end() && it->is_string()) {
    const std::string s = it->get<std::string>();
    if (s == "always") return PrependScheme::always;
    if (s == "first") return PrependScheme::first;
    if (s == "never") return PrependScheme::never;
    RC_THROW(Errc::format, "tokenizer file '", src.file, "': Metaspace prepend_scheme '", s,
             "' is not always, first or never", "\nHINT: the file is corrupt; download it again");
  }
  return get_bool(j, "add_prefix_space", true) ? PrependScheme::always : PrependScheme::never;
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const Source& src) {
  const std::string type = type_of(j, src, "pre_tokenizer");
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "WhitespaceSplit") return std::make_unique<CharSplitPreTokenizer>(is_whitespace, SplitBehavior::removed);
  if (type == "Punctuation")
    return std::make_unique<CharSplitPreTokenizer>(
        is_punctuation, j.contains("behavior") ? read_behavior(j["behavior"], src) : SplitBehavior::isolated);
  if (type == "Digits")
    return std::make_unique<CharSplitPreTokenizer>(
        is_numeric, get_bool(j, "individual_digits", false) ? SplitBehavior::isolated : SplitBehavior::contiguous);
  if (type == "CharDelimiterSplit") {
    const uint32_t d = single_char(get_string(j, "delimiter", ""), src, "CharDelimiterSplit delimiter");
    return std::make_unique<CharSplitPreTokenizer>([d](uint32_t c) { return c == d; }, SplitBehavior::removed);
  }
  if (type == "Split")
    return std::make_unique<SplitPreTokenizer>(read_pattern(j.value("pattern", json()), src, "Split pre_tokenizer"),
                                               read_behavior(j.value("behavior", json()), src),
                                               get_bool(j, "invert", false));
  if (type == "Metaspace")
    return std::make_unique<MetaspacePreTokenizer>(
        single_char(get_string(j, "replacement", "\xE2\x96\x81"), src, "Metaspace replacement"),
        read_prepend_scheme(j, src), get_bool(j, "split", true));
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelPreTokenizer>(get_bool(j, "add_prefix_space", true),
                                                   get_bool(j, "use_regex", true));
  if (type == "Sequence") {
    const json& list = j.value("pretokenizers", json::array());
    RC_CHECK(list.is_array() && list.size() <= kMaxComponents, Errc::format, "tokenizer file '", src.file,
             "': pre_tokenizer Sequence must list at most ", kMaxComponents, " pre-tokenizers");
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const json& p : list) steps.push_back(make_pre_tokenizer(p, src));
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  unknown_type(src, "pre_tokenizer", type);
}

}  // namespace rc::tokenizer::pipeline
