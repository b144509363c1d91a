// The pipeline's components, as HF tokenizers defines them (tokenizers/src/normalizers,
// pre_tokenizers, models, processors, decoders), each named by the "type" tag of its
// tokenizer.json object. Components are immutable once built: encode() runs from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pipeline/normalized.h"

namespace rc::tokenizer::pipeline {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedString& s) const = 0;
  // The fast path (encode without offsets): the same normalization of plain text, with no
  // alignments kept. Called only when has_plain() is true, which a normalizer says when its
  // normalize_plain gives, for every text, exactly what normalize() makes of it.
  virtual bool has_plain() const { return false; }
  virtual void normalize_plain(std::string& text) const { (void)text; }
  // The offsets fast path, on ASCII text: normalize() when it keeps the text ASCII with each
  // character kept, changed into one ASCII character, or removed; src[i] (the original byte of
  // text[i]) follows its character, which is then what HF's alignments say. false when this
  // normalizer may do anything else to this text (text and src are then unspecified).
  virtual bool normalize_ascii_aligned(std::string& text, std::vector<uint32_t>& src) const {
    (void)text, (void)src;
    return false;
  }
  // The offsets fast path on any text: normalize() with HF's alignments (align: one original
  // byte range per byte of text, updated as NormalizedString's alignments would be), for the
  // normalizers that say so with has_aligned(). false: this text takes the general path (text
  // and align are then unspecified), where HF's alignments would leave the simple forms kept
  // here (an empty alignment at the start, which NormalizedString::transform treats apart).
  virtual bool has_aligned() const { return false; }
  virtual bool normalize_aligned(std::string& text, std::vector<ByteRange>& align) const {
    (void)text, (void)align;
    return false;
  }
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(PreTokenizedString& s) const = 0;
  // The fast path: the pieces pre_tokenize() makes of one normalized piece `text` (empty ones
  // left out), appended to `pieces` as byte ranges of `arena`, where the text (possibly edited)
  // is appended. at_start: the piece begins the original text (Metaspace's prepend_scheme
  // "first"); uses_position() says whether the result depends on it.
  virtual bool has_plain() const { return false; }
  virtual bool uses_position() const { return false; }
  virtual void pre_tokenize_plain(std::string_view text, bool at_start, std::string& arena,
                                  std::vector<ByteRange>& pieces) const {
    (void)text, (void)at_start, (void)arena, (void)pieces;
  }
  // Whether pre_tokenize_plain appends text to the arena as it is and its pieces are the splits
  // pre_tokenize() makes, at the same offsets (no character edited, added or moved): then a
  // piece's offsets in the arena are offsets in the normalized text (the offsets fast path).
  virtual bool plain_keeps_text() const { return false; }
  // The offsets fast path for a pre-tokenizer that edits the text (Metaspace): what
  // pre_tokenize_plain does, and where each arena byte it appends comes from in `text` (runs,
  // in arena order), as NormalizedString's edits would align it, for the pre-tokenizers that
  // say so with has_aligned().
  struct AlignRun {
    size_t arena;  // from this arena byte to the next run's: text byte from + (k - arena), or
    size_t from;   // from alone when single (a character made of one, as a replacement)
    bool single;
  };
  virtual bool has_aligned() const { return false; }
  virtual void pre_tokenize_aligned(std::string_view text, bool at_start, std::string& arena,
                                    std::vector<AlignRun>& runs, std::vector<ByteRange>& pieces) const {
    (void)text, (void)at_start, (void)arena, (void)runs, (void)pieces;
  }
};

class Model {
 public:
  virtual ~Model() = default;
  // The tokens of one piece (offsets: bytes of `text`). Throws rc::Error when HF's model would
  // fail (an unknown character with no unk token).
  virtual void tokenize(std::string_view text, std::vector<Token>& out) const = 0;
  // The ids tokenize() gives, appended to out (the fast path: no token strings, no offsets).
  virtual void tokenize_ids(std::string_view text, std::vector<int32_t>& out) const;
  // The ids and byte ranges (of `text`) tokenize() gives, appended (the offsets fast path: no
  // token strings).
  virtual void tokenize_spans(std::string_view text, std::vector<int32_t>& ids, std::vector<ByteRange>& spans) const;
  virtual int32_t token_to_id(std::string_view token) const = 0;  // -1 when unknown
  virtual const std::string* id_to_token(int32_t id) const = 0;   // null when unknown
  virtual int64_t vocab_size() const = 0;
  virtual std::string unk_token() const { return {}; }
};

// HF Encoding, the part of it the interface gives back.
struct Encoding {
  std::vector<int32_t> ids, type_ids;
  std::vector<std::string> tokens;
  std::vector<ByteRange> offsets;  // code points of the original text
  std::vector<uint8_t> special_tokens_mask;
  std::vector<int32_t> word_ids;  // -1: none
  size_t size() const { return ids.size(); }
  void push(int32_t id, int32_t type_id, std::string token, ByteRange offset, uint8_t special, int32_t word) {
    ids.push_back(id);
    type_ids.push_back(type_id);
    tokens.push_back(std::move(token));
    offsets.push_back(offset);
    special_tokens_mask.push_back(special);
    word_ids.push_back(word);
  }
  void append(const Encoding& e) {
    for (size_t i = 0; i < e.size(); ++i)
      push(e.ids[i], e.type_ids[i], e.tokens[i], e.offsets[i], e.special_tokens_mask[i], e.word_ids[i]);
  }
  // Keeps n tokens: the first n (right truncation) or the last n (left).
  void truncate(size_t n, bool left);
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Tokens it adds to one sequence (pair = false) or a pair.
  virtual size_t added_tokens(bool pair) const = 0;
  // HF process_encodings: specials around the encodings, type ids, offsets trimmed; the caller
  // then concatenates what is left (HF Encoding::merge).
  virtual void process_encodings(std::vector<Encoding>& encodings, bool add_special_tokens) const = 0;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  // HF decode_chain: token strings in, strings out (joined with "" by the caller).
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
};

// HF ByteLevel's process_offsets (trim_offsets): leading/trailing spaces of a token's string
// (whitespace or 'Ġ') cut off its offsets.
void trim_byte_level_offsets(Encoding& e, bool add_prefix_space);

}  // namespace rc::tokenizer::pipeline
