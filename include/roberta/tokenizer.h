// Tokenizers giving the ids Hugging Face's `tokenizers` gives. Two implementations behind one
// interface: byte-level BPE as RoBERTa/GPT-2 use it (a fast path, from tokenizer.json or
// vocab.json + merges.txt), and a general pipeline of HF's components (normalizer,
// pre-tokenizer, model, post-processor, decoder: BERT's WordPiece, XLM-R's Unigram, ...) for
// every other tokenizer.json, a BERT vocab.txt or a SentencePiece sentencepiece.bpe.model.
// The comments below state the semantics for RoBERTa; the pipeline follows HF's for its files
// (its special tokens, its post-processor's template, its decoder).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rc {

// A right-padded batch: ids and attention_mask are (batch, max_len) row-major.
struct EncodedBatch {
  int64_t batch = 0, max_len = 0;
  std::vector<int32_t> ids;             // (batch, max_len), padded with pad_id
  std::vector<int32_t> attention_mask;  // (batch, max_len), 1 for real tokens
  std::vector<int32_t> lengths;         // (batch) real tokens per row
};

// Which end of a too-long text truncation cuts (HF's truncation_side / TEI's
// truncation_direction): right keeps the beginning, left keeps the end.
enum class TruncationSide { right, left };

// One pre-split sentence's ids and the word each id came from (HF's BatchEncoding.word_ids()).
struct WordsEncoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> word_ids;  // one per id: index into the words, -1 for <s> and </s>
};

// Where a token came from in its text: [start, end) in Unicode code points (Python str
// indices), as HF's return_offsets_mapping gives them; <s> and </s> get (0, 0).
struct TokenOffset {
  int32_t start = 0, end = 0;
  friend bool operator==(const TokenOffset&, const TokenOffset&) = default;
};

// One text's ids with their offsets and special-tokens mask (HF's fast tokenizer with
// return_offsets_mapping=True, return_special_tokens_mask=True).
struct OffsetsEncoding {
  std::vector<int32_t> ids;
  std::vector<TokenOffset> offsets;          // one per id
  std::vector<uint8_t> special_tokens_mask;  // one per id: 1 for the post-processor's <s> </s>
};

// A pair's ids and HF's token_type_ids (the post-processor template's type of each id: BERT
// gives 0 to [CLS] A [SEP] and 1 to B [SEP]; RoBERTa gives 0 to all).
struct PairEncoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;  // one per id
};

class Tokenizer {
 public:
  // The folder's tokenizer: tokenizer.json (byte-level BPE files the fast path handles, the
  // pipeline for the rest), else vocab.json + merges.txt (byte-level BPE), else vocab.txt
  // (BERT, converted as transformers' BertConverter does, reading tokenizer_config.json), else
  // sentencepiece.bpe.model (XLM-R; CamemBERT when tokenizer_config.json says
  // CamembertTokenizer; converted as transformers' XLMRobertaConverter / CamembertConverter do).
  // Throws rc::Error (not_found / format) naming the file when the folder has none of them, or
  // when a file is malformed; (unsupported) naming the component type and file when a
  // tokenizer.json uses a component the pipeline does not implement.
  static std::unique_ptr<Tokenizer> from_dir(const std::filesystem::path& dir);
  // vocab.json + merges.txt alone, with RoBERTa's special tokens (<s> </s> <unk> <pad>,
  // <mask> with lstrip); from_dir also reads tokenizer_config.json / special_tokens_map.json.
  static std::unique_ptr<Tokenizer> from_files(const std::filesystem::path& vocab_json,
                                               const std::filesystem::path& merges_txt);
  virtual ~Tokenizer() = default;

  // Ids with <s> ... </s> when add_special_tokens (special/added tokens written literally in
  // the text, like "a <mask>", are recognised as HF does, honouring their lstrip/rstrip).
  // max_length > 0 truncates so that the result (specials included) has at most max_length ids, keeping </s> (HF's
  // truncation=True, longest_first). Invalid UTF-8 bytes are replaced by U+FFFD, as
  // Python's errors="replace" decoding does, before tokenizing: one U+FFFD per maximal
  // ill-formed subpart ("\xE2\x82" -> 1, "\xC0\xAF" -> 2, "\xED\xA0\x80" -> 3).
  // Thread-safe: may be called from several threads at once. Throws invalid_argument when
  // max_length < 0 or leaves no room for the special tokens.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true,
                                      int max_length = 0) const = 0;
  // encode() with the truncation side chosen (left keeps the text's last tokens).
  virtual std::vector<int32_t> encode(std::string_view text, int max_length, TruncationSide side) const = 0;
  // HF's tokenizer(text, text_pair): each text tokenized on its own, then the post-processor's
  // pair template (RoBERTa: <s> text </s></s> text_pair </s>). max_length > 0 truncates as HF's
  // truncation="longest_first" does (tokenizers' truncate_encodings: the shorter text keeps
  // what fits, else both get half the budget, the second the odd token), from `side`.
  virtual std::vector<int32_t> encode_pair(std::string_view text, std::string_view text_pair, int max_length = 0,
                                           TruncationSide side = TruncationSide::right) const = 0;
  // encode_pair() with each id's token type (HF's return_token_type_ids=True).
  virtual PairEncoding encode_pair_with_types(std::string_view text, std::string_view text_pair, int max_length = 0,
                                              TruncationSide side = TruncationSide::right) const = 0;
  // HF's tokenizer(words, is_split_into_words=True, truncation=True, max_length=max_length)
  // with add_prefix_space=True, what run_ner.py requires of RoBERTa, whatever the loaded
  // files say (tokenizers' Tokenizer::encode_single_sequence, InputSequence::PreTokenized):
  // each word is tokenized alone as encode(word, add_special_tokens=false) would be with a
  // space put before it (before each of its pieces, when it holds an added token like
  // "<mask>"; none when it starts with a space), the ids are joined, cut to max_length - 2
  // when max_length > 0, and put between <s> and </s>. A word may give no ids ("") or several.
  // Words with invalid UTF-8 are repaired as encode() does. Throws invalid_argument as encode().
  // The pipeline runs each word alone through its own files' steps (no forced prefix space),
  // as HF's pre-tokenized input does.
  virtual WordsEncoding encode_words(std::span<const std::string> words, int max_length = 0) const = 0;
  // encode(text, true, max_length) with each id's offsets in `text` and HF's special-tokens
  // mask, as HF's fast tokenizer gives them (tokenizers' encode_char_offsets):
  //  - offsets count code points, not bytes. When text is invalid UTF-8 they count code points
  //    of the repaired text (each maximal ill-formed subpart is one U+FFFD, as in encode());
  //    text_span() reads a range back either way;
  //  - a token covers whole characters: a byte-level token holding part of a character (an
  //    emoji split in two ids) gets the whole character; the space the pre-tokenizer puts
  //    before a piece (add_prefix_space) counts as that piece's first character;
  //  - an added token matched in the text ("<mask>", lstrip) covers the whitespace it took;
  //  - then the post-processor's trim_offsets (RobertaProcessing / ByteLevel,
  //    tokenizers' process_offsets): leading and trailing spaces of a token's string are cut
  //    off its range, except the one space add_prefix_space put before the first token (HF's
  //    quirks kept: "a<mask>b" with add_prefix_space gives "b" the empty range (8, 8));
  //  - <s> and </s> get (0, 0) and mask 1; every other token mask 0 ("<mask>" written in the
  //    text included).
  virtual OffsetsEncoding encode_with_offsets(std::string_view text, int max_length = 0) const = 0;
  // encode() of each text, right-padded to the longest row.
  virtual EncodedBatch encode_batch(std::span<const std::string> texts, int max_length = 0) const = 0;
  // HF tokenizers' decode with the ByteLevel decoder (no clean_up_tokenization_spaces):
  // unknown ids are dropped, invalid UTF-8 in the result becomes U+FFFD.
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const = 0;

  virtual int32_t token_to_id(std::string_view token) const = 0;  // -1 when unknown
  virtual std::string id_to_token(int32_t id) const = 0;          // "" when unknown; byte-level form ("Ġthe")
  virtual int64_t vocab_size() const = 0;                         // including added tokens
  // Special ids (-1 when the tokenizer has none); BERT's are [CLS] [SEP] [PAD] [UNK] [MASK].
  virtual int32_t bos_id() const = 0;   // <s>
  virtual int32_t eos_id() const = 0;   // </s>
  virtual int32_t pad_id() const = 0;   // <pad>
  virtual int32_t unk_id() const = 0;   // <unk>
  virtual int32_t mask_id() const = 0;  // <mask>
};

// The characters [start, end) (code points, as TokenOffset counts them) of text, as UTF-8.
// Invalid UTF-8 in text is first repaired as encode() does, so the offsets of
// encode_with_offsets(text) read back what they cover. Throws invalid_argument when
// 0 <= start <= end <= (code points of text) does not hold.
std::string text_span(std::string_view text, int32_t start, int32_t end);

}  // namespace rc
