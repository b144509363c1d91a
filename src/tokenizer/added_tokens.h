// Added (and special) tokens, split out of a text before pre-tokenization, as HF's
// AddedVocabulary does: in a first pass the tokens with normalized=false are found in the
// raw text, in a second pass the normalized=true ones in the remaining pieces (with no
// normalizer both passes see the same text, but which tokens compete for a position
// differs). Within a pass matches are leftmost-longest and non-overlapping (aho-corasick
// MatchKind::LeftmostLongest). Then per token:
//  - single_word: the match is dropped when a word character (regex \w) touches it;
//  - lstrip: the match grows left over whitespace, not past the previous match
//    (roberta-base's "<mask>" has lstrip=true: "a <mask>" -> "a", " <mask>");
//  - rstrip: the match grows right over whitespace.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rc::tokenizer {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool lstrip = false, rstrip = false, single_word = false;
  bool normalized = true;
};

// A piece of text: a matched added token (id >= 0) or plain text to pre-tokenize (id -1).
struct Segment {
  size_t begin, end;
  int32_t id;
};

class AddedVocab {
 public:
  AddedVocab() = default;
  explicit AddedVocab(std::vector<AddedToken> tokens);

  // Appends the segments of text to out (nothing for an empty text).
  void split(std::string_view text, std::vector<Segment>& out) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Pass {
    std::vector<int> by_length;  // token indices, longest first
    std::bitset<256> first_bytes;
    bool empty() const { return by_length.empty(); }
  };
  // HF AddedVocabulary::find_matches over text[begin, end).
  void split_pass(const Pass& pass, std::string_view text, size_t begin, size_t end, std::vector<Segment>& out) const;

  std::vector<AddedToken> tokens_;
  Pass raw_, normalized_;
};

}  // namespace rc::tokenizer
