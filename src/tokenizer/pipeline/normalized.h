// HF tokenizers' NormalizedString and PreTokenizedString (tokenizers/src/tokenizer/normalizer.rs,
// pre_tokenizer.rs), transcribed: a normalized string keeps, for each of its bytes, the byte range
// of the original text it came from, so that a token's offsets map back to the text the caller
// gave. Every normalizer and pre-tokenizer of the pipeline edits text only through transform(),
// which updates those alignments exactly as HF's transform_range does (HF's quirks kept: an
// inserted character shares the alignment of the one before it; an empty range converts to
// itself).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rc::tokenizer::pipeline {

using ByteRange = std::pair<size_t, size_t>;  // [first, second)

// One character of a transformation and its `change` (HF): 0 replaces the character at this
// place, 1 is a new character, -n replaces this one and removes the n that follow.
struct CharChange {
  uint32_t cp;
  int64_t change;
};

// A piece of a string found by a pattern: [begin, end) in bytes, and whether it matched.
struct PatternMatch {
  size_t begin, end;
  bool is_match;
};

// HF SplitDelimiterBehavior.
enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

class NormalizedString {
 public:
  NormalizedString() = default;
  explicit NormalizedString(std::string_view text);

  const std::string& get() const { return normalized_; }
  const std::string& original() const { return original_; }
  size_t len() const { return normalized_.size(); }
  bool empty() const { return normalized_.empty(); }
  // (shift, shift + original bytes): where this piece sits in the whole text.
  ByteRange offsets_original() const { return {shift_, shift_ + original_.size()}; }

  // HF convert_offsets(Range::Normalized(range)): the original bytes (of this piece) behind
  // normalized bytes [begin, end); an empty range gives itself; nullopt when out of range.
  std::optional<ByteRange> normalized_to_original(size_t begin, size_t end) const;
  // HF convert_offsets(Range::Original(range)).
  std::optional<ByteRange> original_to_normalized(size_t begin, size_t end) const;

  // HF transform_range over normalized bytes [begin, end) / transform (the whole string).
  void transform_range(size_t begin, size_t end, const std::vector<CharChange>& dest, size_t initial_offset);
  void transform(const std::vector<CharChange>& dest, size_t initial_offset);

  // HF slice(Range::Normalized(begin..end)): a piece with its own original and shift.
  NormalizedString slice(size_t begin, size_t end) const;

  void filter(const std::function<bool(uint32_t)>& keep);
  void map(const std::function<uint32_t(uint32_t)>& f);
  void lowercase();
  void prepend(std::string_view s);
  void append(std::string_view s);
  void lrstrip(bool left, bool right);
  // Replaces each matched piece by `content` (HF replace).
  void replace(const std::vector<PatternMatch>& matches, std::string_view content);
  // HF split: the pieces by behaviour (matches cover the whole string, in order).
  std::vector<NormalizedString> split(std::vector<PatternMatch> matches, SplitBehavior behavior) const;

 private:
  std::string original_, normalized_;
  std::vector<ByteRange> alignments_;  // one per normalized byte, into original_
  size_t shift_ = 0;
};

// NormalizedString::replace on a text and its alignments (one per byte): each matched piece
// replaced by `content`, every byte of which takes the alignment of the match's last byte (the
// offsets fast path runs the normalizers on such flat arrays).
void replace_aligned(std::string& text, std::vector<ByteRange>& align, const std::vector<PatternMatch>& matches,
                     std::string_view content);

// NormalizedString::transform(dest, initial_offset) on a text and its alignments, for the
// offsets fast path; false (text and align unspecified) where transform would not work on the
// whole text (a first byte with an empty alignment, an empty text given characters).
bool transform_aligned(std::string& text, std::vector<ByteRange>& align, const std::vector<CharChange>& dest,
                       size_t initial_offset);

// The code points of valid UTF-8 text, and back.
std::vector<uint32_t> code_points(std::string_view text);
std::string to_utf8(const std::vector<uint32_t>& cps);

// Patterns (HF tokenizer/pattern.rs): a character predicate, a literal string, a pattern's
// matches inverted.
std::vector<PatternMatch> find_char_matches(std::string_view text, const std::function<bool(uint32_t)>& is_match);
std::vector<PatternMatch> find_literal_matches(std::string_view text, std::string_view literal);
void invert(std::vector<PatternMatch>& matches);

// A token of the model: id, string, and bytes [begin, end) of its piece's normalized string.
struct Token {
  int32_t id;
  std::string value;
  size_t begin, end;
};

struct Split {
  NormalizedString normalized;
  std::optional<std::vector<Token>> tokens;
};

// HF PreTokenizedString: the pieces of one text; pieces with tokens (added tokens) are final.
class PreTokenizedString {
 public:
  explicit PreTokenizedString(std::string_view text);

  // Replaces every piece without tokens by what split_fn makes of it; empty pieces are dropped.
  void split(const std::function<std::vector<Split>(size_t index, NormalizedString&& piece)>& split_fn);
  void normalize(const std::function<void(NormalizedString&)>& normalize_fn);
  std::vector<Split>& splits() { return splits_; }
  const std::vector<Split>& splits() const { return splits_; }
  const std::string& original() const { return original_; }

 private:
  std::string original_;
  std::vector<Split> splits_;
};

}  // namespace rc::tokenizer::pipeline
