// Regular expressions of tokenizer.json (Split pre-tokenizer, Replace normalizer and decoder)
// with PCRE2 (Debian's libpcre2-dev). HF compiles them with Oniguruma (Ruby syntax, UTF-8):
// both backtrack, both read \s \w \d and \p{..} as Unicode with PCRE2_UCP. Differences found:
// none in the patterns of the goldens; Oniguruma-only syntax (\h, (?~...) absent operators)
// fails to compile and is refused at load.
// A file controls the pattern: its length is bounded, and each match runs under PCRE2's match
// and depth limits, so a catastrophic pattern fails with an error instead of running for ever.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pipeline/normalized.h"

namespace rc::tokenizer::pipeline {

class Regex {
 public:
  static constexpr size_t kMaxPatternBytes = 4096;
  // Throws rc::Error (format) naming `where` when the pattern does not compile.
  Regex(std::string_view pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // HF Pattern::find_matches for &onig::Regex: the pieces of text, matched or not, covering it.
  // Throws rc::Error (resource_exhausted) when a match runs past the limits.
  std::vector<PatternMatch> find_matches(std::string_view text) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
};

// A pattern of tokenizer.json: {"String": "..."} (a literal) or {"Regex": "..."}.
struct Pattern {
  std::string literal;
  std::shared_ptr<Regex> regex;  // null: the literal
  std::vector<PatternMatch> find_matches(std::string_view text) const {
    return regex ? regex->find_matches(text) : find_literal_matches(text, literal);
  }
};

}  // namespace rc::tokenizer::pipeline
