// SentencePiece's precompiled_charsmap as HF's spm_precompiled crate reads it: a little-endian
// u32 trie size in bytes, the double-array trie (u32 units, Darts' layout), then the normalized
// strings, each ended by '\0'. transform() is the crate's: the replacement of the SHORTEST
// prefix of the chunk found in the trie (results[0] of common_prefix_search), which
// tokenizers' Precompiled normalizer applies to a whole grapheme or character.
// The file controls the trie: every index is bounds-checked (the crate would panic on an index
// past the array; here the lookup finds nothing).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rc::tokenizer::pipeline {

class PrecompiledCharsmap {
 public:
  // Throws rc::Error (format) naming `where` when the bytes are not a charsmap.
  static PrecompiledCharsmap from_bytes(std::string_view bytes, const std::string& where);
  static PrecompiledCharsmap from_base64(std::string_view b64, const std::string& where);
  std::optional<std::string_view> transform(std::string_view chunk) const;
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
  std::vector<uint32_t> trie_;
  std::string normalized_;
};

// Standard base64 (RFC 4648, padded), as the crate's BASE64_STANDARD decodes it; nullopt when malformed.
std::optional<std::string> decode_base64(std::string_view b64);
std::string encode_base64(std::string_view bytes);

}  // namespace rc::tokenizer::pipeline
