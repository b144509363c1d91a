// spm_precompiled's Precompiled (huggingface/spm_precompiled src/lib.rs), bounds-checked.
#include "tokenizer/pipeline/precompiled.h"

#include "core/check.h"
#include "tokenizer/pipeline/build.h"
#include "tokenizer/utf8.h"

namespace rc::tokenizer::pipeline {
namespace {

bool has_leaf(uint32_t u) { return ((u >> 8) & 1) == 1; }
uint32_t value_of(uint32_t u) { return u & ((1u << 31) - 1); }
uint32_t label_of(uint32_t u) { return u & ((1u << 31) | 0xFF); }
size_t offset_of(uint32_t u) { return size_t(u >> 10) << ((u & (1u << 9)) >> 6); }

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view b64) {
  if (b64.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(b64.size() / 4 * 3);
  for (size_t i = 0; i < b64.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = b64[i + size_t(k)];
      if (c == '=' && i + 4 == b64.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;
      v[k] = b64_value(c);
      if (v[k] < 0) return std::nullopt;
    }
    const uint32_t n = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out.push_back(char(n >> 16));
    if (pad < 2) out.push_back(char((n >> 8) & 0xFF));
    if (pad < 1) out.push_back(char(n & 0xFF));
  }
  return out;
}

std::string encode_base64(std::string_view bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = uint32_t(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= uint32_t(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= uint32_t(static_cast<unsigned char>(bytes[i + 2]));
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kAlphabet[n & 63] : '=');
  }
  return out;
}

PrecompiledCharsmap PrecompiledCharsmap::from_base64(std::string_view b64, const std::string& where) {
  RC_CHECK(b64.size() <= kMaxCharsmapBytes / 3 * 4 + 4, Errc::format, where, ": precompiled_charsmap of ", b64.size(),
           " base64 characters is past the ", kMaxCharsmapBytes, " bytes allowed",
           "\nHINT: SentencePiece's nmt_nfkc charsmap is ~240 KB; the file is corrupt");
  const std::optional<std::string> bytes = decode_base64(b64);
  RC_CHECK(bytes, Errc::format, where, ": precompiled_charsmap is not valid base64",
           "\nHINT: the file is corrupt; download it again");
  return from_bytes(*bytes, where);
}

PrecompiledCharsmap PrecompiledCharsmap::from_bytes(std::string_view bytes, const std::string& where) {
  RC_CHECK(bytes.size() <= kMaxCharsmapBytes, Errc::format, where, ": precompiled_charsmap of ", bytes.size(),
           " bytes is past the ", kMaxCharsmapBytes, " allowed",
           "\nHINT: SentencePiece's nmt_nfkc charsmap is ~240 KB; the file is corrupt");
  auto le32 = [&](size_t at) {
    return uint32_t(static_cast<unsigned char>(bytes[at])) | uint32_t(static_cast<unsigned char>(bytes[at + 1])) << 8 |
           uint32_t(static_cast<unsigned char>(bytes[at + 2])) << 16 |
           uint32_t(static_cast<unsigned char>(bytes[at + 3])) << 24;
  };
  RC_CHECK(bytes.size() >= 4, Errc::format, where, ": precompiled_charsmap is too short (", bytes.size(), " bytes)",
           "\nHINT: the file is corrupt; download it again");
  const size_t trie_units = le32(0) / 4;
  RC_CHECK(trie_units >= 1 && 4 + trie_units * 4 <= bytes.size(), Errc::format, where,
           ": precompiled_charsmap's trie of ", trie_units, " units does not fit in its ", bytes.size(), " bytes",
           "\nHINT: the file is corrupt; download it again");
  PrecompiledCharsmap m;
  m.bytes_ = std::string(bytes);
  m.trie_.resize(trie_units);
  for (size_t i = 0; i < trie_units; ++i) m.trie_[i] = le32(4 + 4 * i);
  m.normalized_ = std::string(bytes.substr(4 + trie_units * 4));
  RC_CHECK(is_valid_utf8(m.normalized_), Errc::format, where,
           ": precompiled_charsmap's normalized strings are not valid UTF-8",
           "\nHINT: the file is corrupt; download it again");
  return m;
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view chunk) const {
  // DoubleArray::common_prefix_search, stopping at the first result.
  size_t node = 0;
  node ^= offset_of(trie_[0]);
  for (unsigned char c : chunk) {
    if (c == 0) break;
    node ^= c;
    if (node >= trie_.size()) return std::nullopt;
    const uint32_t unit = trie_[node];
    if (label_of(unit) != c) return std::nullopt;
    node ^= offset_of(unit);
    if (has_leaf(unit)) {
      if (node >= trie_.size()) return std::nullopt;
      const size_t index = value_of(trie_[node]);
      if (index > normalized_.size()) return std::nullopt;
      size_t end = index;
      while (end < normalized_.size() && normalized_[end] != 0) ++end;
      const std::string_view out = std::string_view(normalized_).substr(index, end - index);
      // The crate slices a str here: off a character boundary it would panic; no rewrite.
      if (!is_valid_utf8(out)) return std::nullopt;
      return out;
    }
  }
  return std::nullopt;
}

}  // namespace rc::tokenizer::pipeline
