// PCRE2 for the pipeline's patterns.
#include "tokenizer/pipeline/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/check.h"

namespace rc::tokenizer::pipeline {
namespace {
// Bounds of one match: backtracking steps and nesting depth (PCRE2's own defaults are 10M
// steps and 10M depth; tokenizer patterns run on one piece of text and need far less).
constexpr uint32_t kMatchLimit = 1'000'000;
constexpr uint32_t kDepthLimit = 10'000;
}  // namespace

struct Regex::Impl {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;
  ~Impl() {
    if (context) pcre2_match_context_free(context);
    if (code) pcre2_code_free(code);
  }
};

Regex::Regex(std::string_view pattern, const std::string& where) : pattern_(pattern), impl_(std::make_unique<Impl>()) {
  RC_CHECK(pattern.size() <= kMaxPatternBytes, Errc::format, where, ": a regex of ", pattern.size(),
           " bytes is longer than the ", kMaxPatternBytes, " allowed",
           "\nHINT: real tokenizer patterns are under 200 bytes; the file is corrupt");
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              // \C (one byte in UTF mode) would cut a character apart: refused.
                              PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK | PCRE2_NEVER_BACKSLASH_C, &error,
                              &error_offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    RC_THROW(Errc::format, where, ": regex '", pattern_, "' does not compile (PCRE2, at ", error_offset,
             "): ", reinterpret_cast<const char*>(message),
             "\nHINT: HF compiles it with Oniguruma; a pattern using Oniguruma-only syntax is not supported");
  }
  impl_->context = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(impl_->context, kMatchLimit);
  pcre2_set_depth_limit(impl_->context, kDepthLimit);
}

Regex::~Regex() = default;

std::vector<PatternMatch> Regex::find_matches(std::string_view text) const {
  if (text.empty()) return {{0, 0, false}};
  std::vector<PatternMatch> out;
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  RC_CHECK(data, Errc::resource_exhausted, "regex: out of memory");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t prev = 0, pos = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, data, impl_->context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(data);
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      RC_THROW(Errc::resource_exhausted, "tokenizer regex '", pattern_, "' failed on a text of ", text.size(),
               " bytes: ", reinterpret_cast<const char*>(message),
               "\nHINT: the pattern backtracks too much on this text; shorten the text");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data);
    const size_t start = ov[0], end = ov[1];
    if (end == start) {
      // An empty match: Oniguruma's find_iter reports it and moves on by one character.
      if (prev != start) out.push_back({prev, start, false});
      out.push_back({start, end, true});
      prev = end;
      if (start >= text.size()) break;
      size_t next = start + 1;
      while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
      pos = next;
      continue;
    }
    if (prev != start) out.push_back({prev, start, false});
    out.push_back({start, end, true});
    prev = end;
    pos = end;
  }
  pcre2_match_data_free(data);
  if (prev != text.size()) out.push_back({prev, text.size(), false});
  return out;
}

}  // namespace rc::tokenizer::pipeline
