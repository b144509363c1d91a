// Splitting added/special tokens out of a text (HF AddedVocabulary semantics).
#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <cstring>

#include "tokenizer/utf8.h"

namespace rc::tokenizer {
namespace {

// The code point that ends right before byte `pos` (pos > 0; text is valid UTF-8).
uint32_t char_before(const unsigned char* s, size_t pos, size_t* start) {
  size_t p = pos - 1;
  while (p > 0 && (s[p] & 0xC0) == 0x80) --p;
  *start = p;
  return utf8_decode(s + p, int(pos - p));
}

uint32_t char_at(const unsigned char* s, size_t pos, int* len) {
  *len = utf8_lead_length(s[pos]);
  return utf8_decode(s + pos, *len);
}

}  // namespace

AddedVocab::AddedVocab(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (int i = 0; i < int(tokens_.size()); ++i) {
    const AddedToken& t = tokens_[size_t(i)];
    if (t.content.empty()) continue;  // matches nothing (HF skips it too)
    Pass& p = t.normalized ? normalized_ : raw_;
    p.by_length.push_back(i);
    p.first_bytes.set(static_cast<unsigned char>(t.content[0]));
  }
  for (Pass* p : {&raw_, &normalized_}) {
    // Longest first, so the first token that matches at a position is the longest one.
    std::stable_sort(p->by_length.begin(), p->by_length.end(), [&](int a, int b) {
      return tokens_[size_t(a)].content.size() > tokens_[size_t(b)].content.size();
    });
  }
}

void AddedVocab::split(std::string_view text, std::vector<Segment>& out) const {
  if (text.empty()) return;
  if (raw_.empty()) {
    split_pass(normalized_, text, 0, text.size(), out);
    return;
  }
  std::vector<Segment> first;
  split_pass(raw_, text, 0, text.size(), first);
  for (const Segment& s : first) {
    if (s.id >= 0)
      out.push_back(s);
    else
      split_pass(normalized_, text, s.begin, s.end, out);
  }
}

void AddedVocab::split_pass(const Pass& pass, std::string_view text, size_t begin, size_t end,
                            std::vector<Segment>& out) const {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  if (pass.empty()) {
    if (begin < end) out.push_back({begin, end, -1});
    return;
  }
  size_t start_offset = begin;  // end of the previous match (after stripping)
  size_t pos = begin;           // where the search resumes (end of the raw match)
  while (pos < end) {
    // Leftmost-longest match at or after pos.
    size_t mstart = end;
    const AddedToken* tok = nullptr;
    for (size_t i = pos; i < end && !tok; ++i) {
      if (!pass.first_bytes.test(s[i])) continue;
      for (int idx : pass.by_length) {
        const AddedToken& t = tokens_[size_t(idx)];
        if (t.content.size() <= end - i && std::memcmp(s + i, t.content.data(), t.content.size()) == 0) {
          tok = &t, mstart = i;
          break;
        }
      }
    }
    if (!tok) break;
    size_t start = mstart, stop = mstart + tok->content.size();
    pos = stop;
    if (tok->single_word) {
      size_t prev_start;
      int len;
      const bool word_before = start > begin && is_word_char(char_before(s, start, &prev_start));
      const bool word_after = stop < end && is_word_char(char_at(s, stop, &len));
      if (word_before || word_after) continue;
    }
    if (tok->lstrip) {
      while (start > start_offset) {
        size_t prev_start;
        if (!is_unicode_whitespace(char_before(s, start, &prev_start))) break;
        start = prev_start;
      }
    }
    if (tok->rstrip) {
      while (stop < end) {
        int len;
        if (!is_unicode_whitespace(char_at(s, stop, &len))) break;
        stop += size_t(len);
      }
    }
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, tok->id});
    start_offset = std::max(start_offset, stop);
  }
  if (start_offset < end) out.push_back({start_offset, end, -1});
}

}  // namespace rc::tokenizer
