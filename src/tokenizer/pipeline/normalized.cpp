// NormalizedString and PreTokenizedString, transcribed from HF tokenizers'
// tokenizers/src/tokenizer/normalizer.rs and pre_tokenizer.rs (0.22).
#include "tokenizer/pipeline/normalized.h"

#include <algorithm>

#include "core/check.h"
#include "tokenizer/pipeline/unicode.h"
#include "tokenizer/utf8.h"

namespace rc::tokenizer::pipeline {
namespace {

size_t utf8_len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

}  // namespace

std::vector<uint32_t> code_points(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const int len = utf8_lead_length(s[i]);
    out.push_back(utf8_decode(s + i, len));
    i += size_t(len);
  }
  return out;
}

std::string to_utf8(const std::vector<uint32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (uint32_t cp : cps) utf8_append(out, cp);
  return out;
}

NormalizedString::NormalizedString(std::string_view text) : original_(text), normalized_(text) {
  alignments_.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const size_t len = size_t(utf8_lead_length(s[i]));
    for (size_t k = 0; k < len; ++k) alignments_.push_back({i, i + len});
    i += len;
  }
}

std::optional<ByteRange> NormalizedString::normalized_to_original(size_t begin, size_t end) const {
  if (begin == end) return ByteRange{begin, end};
  if (begin > end || end > alignments_.size()) return std::nullopt;
  return ByteRange{alignments_[begin].first, alignments_[end - 1].second};
}

std::optional<ByteRange> NormalizedString::original_to_normalized(size_t begin, size_t end) const {
  if (begin == end) return ByteRange{begin, end};
  if (begin > end) return std::nullopt;
  std::optional<size_t> start, stop;
  for (size_t i = 0; i < alignments_.size(); ++i) {
    const ByteRange& a = alignments_[i];
    if (end < a.second) break;
    if (!start && begin <= a.first && a.first != a.second) start = i;
    if (end >= a.second) stop = i + 1;
  }
  if (start && stop) return ByteRange{*start, *stop};
  if (start) return ByteRange{*start, *start};
  if (stop) return ByteRange{*stop, *stop};
  return std::nullopt;
}

void NormalizedString::transform_range(size_t begin, size_t end, const std::vector<CharChange>& dest,
                                       size_t initial_offset) {
  const std::vector<uint32_t> replaced = code_points(std::string_view(normalized_).substr(begin, end - begin));
  // A transformation that keeps every character as it is (none added, removed or changed)
  // leaves the string and its alignments as they are: each character's bytes share one
  // alignment (the constructor's, and every transformation below writes one per character).
  // BERT's normalizer makes several such passes over most texts (clean_text's map, lowercase
  // of lowercase text), each an allocation and two copies of the whole string's alignments.
  if (initial_offset == 0 && dest.size() == replaced.size() &&
      std::equal(dest.begin(), dest.end(), replaced.begin(),
                 [](const CharChange& c, uint32_t cp) { return c.change == 0 && c.cp == cp; }))
    return;
  size_t next = 0;  // the next replaced character
  size_t initial_removed = 0;
  for (; next < replaced.size() && next < initial_offset; ++next) initial_removed += utf8_len(replaced[next]);
  size_t offset = initial_removed + begin;
  std::vector<ByteRange> alignments;
  alignments.reserve(end - begin);
  std::string normalized;
  normalized.reserve(end - begin);
  // Alignment of normalized byte i; past the end (a malformed transformation, which our own
  // components never make: HF would panic) the last one.
  auto alignment_at = [&](size_t i) -> ByteRange {
    if (i < alignments_.size()) return alignments_[i];
    return alignments_.empty() ? ByteRange{0, 0} : alignments_.back();
  };
  for (const CharChange& c : dest) {
    ByteRange align;
    if (c.change > 0)
      align = offset < 1 ? ByteRange{0, 0} : alignment_at(offset - 1);
    else
      align = alignment_at(offset);
    size_t replaced_size = 0;
    if (c.change <= 0 && next < replaced.size()) replaced_size = utf8_len(replaced[next++]);
    size_t removed = 0;
    for (int64_t k = 0; k < -c.change && next < replaced.size(); ++k) removed += utf8_len(replaced[next++]);
    offset += replaced_size + removed;
    const size_t n = utf8_len(c.cp);
    for (size_t k = 0; k < n; ++k) alignments.push_back(align);
    utf8_append(normalized, c.cp);
  }
  if (begin == 0 && end == normalized_.size()) {  // the whole string (transform()): no splice
    alignments_ = std::move(alignments);
    normalized_ = std::move(normalized);
    return;
  }
  alignments_.erase(alignments_.begin() + std::ptrdiff_t(begin), alignments_.begin() + std::ptrdiff_t(end));
  alignments_.insert(alignments_.begin() + std::ptrdiff_t(begin), alignments.begin(), alignments.end());
  normalized_.replace(begin, end - begin, normalized);
}

// transform_range over the whole text (original_to_normalized(0, all) is the whole text when
// its first byte's alignment is not empty), with the same steps as above.
bool transform_aligned(std::string& text, std::vector<ByteRange>& align, const std::vector<CharChange>& dest,
                       size_t initial_offset) {
  if (text.empty()) return dest.empty();
  if (align[0].first == align[0].second) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  auto next_char = [&](size_t at) { return std::min(n, at + size_t(utf8_lead_length(p[at]))); };
  size_t offset = 0;  // the next replaced character's first byte
  for (size_t k = 0; k < initial_offset && offset < n; ++k) offset = next_char(offset);
  thread_local std::string out;
  thread_local std::vector<ByteRange> out_align;
  out.clear();
  out_align.clear();
  for (const CharChange& c : dest) {
    ByteRange a;
    if (c.change > 0)
      a = offset < 1 ? ByteRange{0, 0} : align[std::min(offset, n) - 1];
    else
      a = offset < n ? align[offset] : align.back();
    if (c.change > 0 && offset < 1) return false;  // (0, 0): an empty alignment the general path keeps
    if (c.change <= 0 && offset < n) offset = next_char(offset);
    for (int64_t k = 0; k < -c.change && offset < n; ++k) offset = next_char(offset);
    const size_t before = out.size();
    utf8_append(out, c.cp);
    out_align.insert(out_align.end(), out.size() - before, a);
  }
  text.swap(out);
  align.swap(out_align);
  return true;
}

void NormalizedString::transform(const std::vector<CharChange>& dest, size_t initial_offset) {
  const std::optional<ByteRange> range = original_to_normalized(0, original_.size());
  if (!range) return;
  transform_range(range->first, range->second, dest, initial_offset);
}

NormalizedString NormalizedString::slice(size_t begin, size_t end) const {
  const std::optional<ByteRange> orig = normalized_to_original(begin, end);
  RC_CHECK(orig && orig->second <= original_.size() && orig->first <= orig->second, Errc::internal,
           "NormalizedString::slice: bad range [", begin, ", ", end, ")");
  NormalizedString out;
  out.original_ = original_.substr(orig->first, orig->second - orig->first);
  out.normalized_ = normalized_.substr(begin, end - begin);
  out.alignments_.reserve(end - begin);
  for (size_t i = begin; i < end; ++i)
    out.alignments_.push_back({alignments_[i].first - orig->first, alignments_[i].second - orig->first});
  out.shift_ = shift_ + orig->first;
  return out;
}

void NormalizedString::filter(const std::function<bool(uint32_t)>& keep) {
  const std::vector<uint32_t> cps = code_points(normalized_);
  std::vector<CharChange> rev;
  rev.reserve(cps.size());
  int64_t removed = 0;
  for (size_t i = cps.size(); i-- > 0;) {
    if (keep(cps[i])) {
      rev.push_back({cps[i], removed > 0 ? -removed : 0});
      removed = 0;
    } else {
      ++removed;
    }
  }
  std::reverse(rev.begin(), rev.end());
  transform(rev, size_t(removed));
}

void NormalizedString::map(const std::function<uint32_t(uint32_t)>& f) {
  std::vector<CharChange> dest;
  for (uint32_t cp : code_points(normalized_)) dest.push_back({f(cp), 0});
  transform(dest, 0);
}

void NormalizedString::lowercase() {
  std::vector<CharChange> dest;
  std::vector<uint32_t> lower;
  for (uint32_t cp : code_points(normalized_)) {
    lower.clear();
    append_lowercase(cp, lower);
    for (size_t i = 0; i < lower.size(); ++i) dest.push_back({lower[i], i > 0 ? 1 : 0});
  }
  transform(dest, 0);
}

void NormalizedString::prepend(std::string_view s) {
  if (normalized_.empty()) return;
  const auto* p = reinterpret_cast<const unsigned char*>(normalized_.data());
  const int first_len = utf8_lead_length(p[0]);
  const uint32_t first = utf8_decode(p, first_len);
  std::vector<CharChange> dest;
  const std::vector<uint32_t> cps = code_points(s);
  for (size_t i = 0; i < cps.size(); ++i) dest.push_back({cps[i], i == 0 ? 0 : 1});
  dest.push_back({first, 1});
  transform_range(0, size_t(first_len), dest, 0);
}

void NormalizedString::append(std::string_view s) {
  if (normalized_.empty()) return;
  size_t b = normalized_.size() - 1;
  while (b > 0 && (static_cast<unsigned char>(normalized_[b]) & 0xC0) == 0x80) --b;
  const auto* p = reinterpret_cast<const unsigned char*>(normalized_.data()) + b;
  std::vector<CharChange> dest{{utf8_decode(p, int(normalized_.size() - b)), 0}};
  for (uint32_t cp : code_points(s)) dest.push_back({cp, 1});
  transform_range(b, normalized_.size(), dest, 0);
}

void NormalizedString::lrstrip(bool left, bool right) {
  const std::vector<uint32_t> cps = code_points(normalized_);
  size_t leading = 0, trailing = 0;
  if (left)
    while (leading < cps.size() && is_unicode_whitespace(cps[leading])) ++leading;
  if (right)
    while (trailing < cps.size() && is_unicode_whitespace(cps[cps.size() - 1 - trailing])) ++trailing;
  if (leading == 0 && trailing == 0) return;
  const size_t len = cps.size();
  std::vector<CharChange> dest;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (i < leading || i >= len - trailing) continue;
    dest.push_back({cps[i], i == len - trailing - 1 ? -int64_t(trailing) : 0});
  }
  transform(dest, leading);
}

// HF's replace runs transform_range on each match with the content's characters all new
// (change 1) after removing the match (initial_offset): every content character gets the
// alignment of the last byte of the match (of the byte before it for an empty match, (0, 0) at
// the start). Built here in one pass, the same result without a splice per match (quadratic
// in the matches: XLM-R's " {2,}" on a text of double spaces).
void NormalizedString::replace(const std::vector<PatternMatch>& matches, std::string_view content) {
  replace_aligned(normalized_, alignments_, matches, content);
}

void replace_aligned(std::string& text, std::vector<ByteRange>& align, const std::vector<PatternMatch>& matches,
                     std::string_view content) {
  // Nothing matched: nothing changes (an empty literal's single piece counts characters, not
  // bytes, HF's quirk: it must not be copied as a byte range).
  if (std::none_of(matches.begin(), matches.end(), [](const PatternMatch& m) { return m.is_match; })) return;
  std::string normalized;
  std::vector<ByteRange> alignments;
  normalized.reserve(text.size());
  alignments.reserve(align.size());
  for (const PatternMatch& m : matches) {
    if (!m.is_match) {
      normalized.append(text, m.begin, m.end - m.begin);
      alignments.insert(alignments.end(), align.begin() + std::ptrdiff_t(m.begin),
                        align.begin() + std::ptrdiff_t(m.end));
      continue;
    }
    ByteRange a{0, 0};
    if (m.end > m.begin)
      a = align[m.end - 1];
    else if (!alignments.empty())
      a = alignments.back();
    normalized.append(content);
    alignments.insert(alignments.end(), content.size(), a);
  }
  const size_t covered = matches.empty() ? 0 : matches.back().end;
  normalized.append(text, covered, std::string::npos);
  alignments.insert(alignments.end(), align.begin() + std::ptrdiff_t(covered), align.end());
  text = std::move(normalized);
  align = std::move(alignments);
}

std::vector<NormalizedString> NormalizedString::split(std::vector<PatternMatch> matches, SplitBehavior behavior) const {
  struct Piece {
    size_t begin, end;
    bool remove;
  };
  std::vector<Piece> pieces;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::isolated:
      for (const PatternMatch& m : matches) pieces.push_back({m.begin, m.end, false});
      break;
    case SplitBehavior::removed:
      for (const PatternMatch& m : matches) pieces.push_back({m.begin, m.end, m.is_match});
      break;
    case SplitBehavior::contiguous:
      for (const PatternMatch& m : matches) {
        if (m.is_match == previous_match && !pieces.empty())
          pieces.back().end = m.end;
        else
          pieces.push_back({m.begin, m.end, false});
        previous_match = m.is_match;
      }
      break;
    case SplitBehavior::merged_with_previous:
      for (const PatternMatch& m : matches) {
        if (m.is_match && !previous_match && !pieces.empty())
          pieces.back().end = m.end;
        else
          pieces.push_back({m.begin, m.end, false});
        previous_match = m.is_match;
      }
      break;
    case SplitBehavior::merged_with_next:
      for (size_t i = matches.size(); i-- > 0;) {
        const PatternMatch& m = matches[i];
        if (m.is_match && !previous_match && !pieces.empty())
          pieces.back().begin = m.begin;
        else
          pieces.push_back({m.begin, m.end, false});
        previous_match = m.is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
  }
  std::vector<NormalizedString> out;
  out.reserve(pieces.size());
  for (const Piece& p : pieces)
    if (!p.remove) out.push_back(slice(p.begin, p.end));
  return out;
}

std::vector<PatternMatch> find_char_matches(std::string_view text, const std::function<bool(uint32_t)>& is_match) {
  if (text.empty()) return {{0, 0, false}};
  std::vector<PatternMatch> out;
  size_t last_offset = 0;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t b = 0; b < text.size();) {
    const int len = utf8_lead_length(s[b]);
    if (is_match(utf8_decode(s + b, len))) {
      if (last_offset < b) out.push_back({last_offset, b, false});
      out.push_back({b, b + size_t(len), true});
      last_offset = b + size_t(len);
    }
    b += size_t(len);
  }
  if (text.size() > last_offset) out.push_back({last_offset, text.size(), false});
  return out;
}

std::vector<PatternMatch> find_literal_matches(std::string_view text, std::string_view literal) {
  // HF: an empty pattern matches nothing, and gives (0, chars) for the whole string (its
  // quirk: a character count used as a byte offset).
  if (literal.empty()) return {{0, code_points(text).size(), false}};
  if (text.empty()) return {{0, 0, false}};
  std::vector<PatternMatch> out;
  size_t prev = 0;
  for (size_t pos = text.find(literal); pos != std::string_view::npos; pos = text.find(literal, pos)) {
    if (prev != pos) out.push_back({prev, pos, false});
    out.push_back({pos, pos + literal.size(), true});
    pos += literal.size();
    prev = pos;
  }
  if (prev != text.size()) out.push_back({prev, text.size(), false});
  return out;
}

void invert(std::vector<PatternMatch>& matches) {
  for (PatternMatch& m : matches) m.is_match = !m.is_match;
}

PreTokenizedString::PreTokenizedString(std::string_view text) : original_(text) {
  splits_.push_back({NormalizedString(text), std::nullopt});
}

void PreTokenizedString::split(
    const std::function<std::vector<Split>(size_t index, NormalizedString&& piece)>& split_fn) {
  std::vector<Split> out;
  out.reserve(splits_.size());
  for (size_t i = 0; i < splits_.size(); ++i) {
    if (splits_[i].tokens) {
      out.push_back(std::move(splits_[i]));
      continue;
    }
    for (Split& s : split_fn(i, std::move(splits_[i].normalized)))
      if (!s.normalized.empty()) out.push_back(std::move(s));
  }
  splits_ = std::move(out);
}

void PreTokenizedString::normalize(const std::function<void(NormalizedString&)>& normalize_fn) {
  for (Split& s : splits_)
    if (!s.tokens) normalize_fn(s.normalized);
}

}  // namespace rc::tokenizer::pipeline
