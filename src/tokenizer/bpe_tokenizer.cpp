// rc::Tokenizer for byte-level BPE (RoBERTa / GPT-2): the pipeline HF tokenizers runs for
// roberta-base, step by step:
//   1. repair invalid UTF-8 (U+FFFD per maximal subpart, as Python's errors="replace");
//   2. split out added/special tokens (AddedVocab, lstrip/rstrip/single_word);
//   3. GPT-2 pre-tokenization of the other pieces (gpt2_split), ByteLevel add_prefix_space;
//   4. BPE of each word on its raw bytes (BpeModel, cached);
//   5. post-processing <s> ... </s> (ids from the post_processor), truncation keeping </s>.
// encode_with_offsets() walks the same steps keeping where each token came from, and
// encode_words() runs steps 2-4 on each word of a pre-split sentence.
// decode() is the ByteLevel decoder: token strings back to bytes, invalid UTF-8 replaced.
#include <algorithm>
#include <climits>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"
#include "core/regular_file.h"
#include "roberta/tokenizer.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pipeline/pipeline_tokenizer.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/utf8.h"

namespace rc {
namespace {

namespace tk = rc::tokenizer;

// ByteLevel decoder for one token string: each character back to its byte; a token with a
// character outside the byte map is kept as its UTF-8 (HF decode_chain does the same).
std::string token_bytes(const std::string& token) {
  std::string out;
  const auto* s = reinterpret_cast<const unsigned char*>(token.data());
  for (size_t i = 0; i < token.size();) {
    int consumed;
    const int len = tk::utf8_sequence_length(s + i, token.size() - i, &consumed);
    const int b = len > 0 ? tk::codepoint_to_byte(tk::utf8_decode(s + i, len)) : -1;
    if (b < 0) return token;
    out.push_back(char(b));
    i += size_t(len);
  }
  return out;
}

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(tk::TokenizerSpec spec)
      : model_(tk::byte_ids_of(spec.vocab), tk::resolve_merges(spec)),
        added_(spec.added),
        prefix_(spec.prefix_ids),
        suffix_(spec.suffix_ids),
        pair_prefix_(spec.pair_prefix_ids),
        pair_middle_(spec.pair_middle_ids),
        pair_suffix_(spec.pair_suffix_ids),
        pair_second_type_(spec.pair_second_type),
        add_prefix_space_(spec.add_prefix_space),
        trim_offsets_(spec.trim_offsets),
        trim_add_prefix_space_(spec.trim_add_prefix_space) {
    int64_t size = 0;
    for (const auto& [t, id] : spec.vocab) size = std::max<int64_t>(size, int64_t(id) + 1);
    for (const auto& a : spec.added) size = std::max<int64_t>(size, int64_t(a.id) + 1);
    tokens_.assign(size_t(size), {});
    for (const auto& [t, id] : spec.vocab) tokens_[size_t(id)] = {t, token_bytes(t), true, false};
    model_token_bytes_.resize(tokens_.size());  // before added tokens shadow any entry
    for (size_t id = 0; id < tokens_.size(); ++id) model_token_bytes_[id] = tokens_[id].bytes.size();
    to_id_ = std::move(spec.vocab);     // the spec's own map, not a 50k-entry copy
    for (const auto& a : spec.added) {  // an added token shadows the model's (HF id_to_token)
      tokens_[size_t(a.id)] = {a.content, token_bytes(a.content), true, false};
      to_id_[a.content] = a.id;
    }
    for (const auto& a : spec.added)  // HF: special if the token string is a special token
      if (a.special)
        for (auto& t : tokens_)
          if (t.present && t.text == a.content) t.special = true;
    for (int32_t id : prefix_) check_special_id(id, "post-processor");
    for (int32_t id : suffix_) check_special_id(id, "post-processor");
    for (const auto* ids : {&pair_prefix_, &pair_middle_, &pair_suffix_})
      for (int32_t id : *ids) check_special_id(id, "post-processor (pair)");
    bos_ = prefix_.empty() ? token_to_id(spec.bos) : prefix_.front();
    eos_ = suffix_.empty() ? token_to_id(spec.eos) : suffix_.back();
    pad_ = spec.pad_id.value_or(token_to_id(spec.pad));
    unk_ = token_to_id(spec.unk);
    mask_ = token_to_id(spec.mask);
    for (const auto& a : spec.added)
      if (!a.content.empty()) added_first_bytes_[static_cast<unsigned char>(a.content[0])] = true;
  }

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens, int max_length) const override {
    RC_CHECK(max_length >= 0, Errc::invalid_argument, "max_length must be >= 0 (0: no limit), got ", max_length);
    const size_t n_special = add_special_tokens ? prefix_.size() + suffix_.size() : 0;
    size_t budget = SIZE_MAX;
    if (max_length > 0) {
      RC_CHECK(size_t(max_length) >= n_special, Errc::invalid_argument, "max_length ", max_length,
               " leaves no room for the ", n_special, " special tokens", "\nHINT: use max_length >= ", n_special,
               ", or 0 for no limit");
      budget = size_t(max_length) - n_special;
    }
    std::string repaired;
    std::string_view t = text;
    if (!tk::is_valid_utf8(text)) {
      repaired = tk::repair_utf8(text);
      t = repaired;
    }
    std::vector<int32_t> out;
    out.reserve(std::min(t.size() / 4 + 8, budget) + n_special);  // ~0.28 tokens/byte in tweets
    if (add_special_tokens) out = prefix_;
    const size_t limit = budget == SIZE_MAX ? SIZE_MAX : out.size() + budget;
    encode_text(t, out, limit, add_prefix_space_);
    if (out.size() > limit) out.resize(limit);
    if (add_special_tokens) out.insert(out.end(), suffix_.begin(), suffix_.end());
    return out;
  }

  WordsEncoding encode_words(std::span<const std::string> words, int max_length) const override {
    RC_CHECK(words.size() < size_t(INT32_MAX), Errc::invalid_argument, "encode_words: ", words.size(),
             " words is more than a word index holds");
    const size_t budget = body_budget(max_length);
    WordsEncoding out;
    out.ids = prefix_;
    out.word_ids.assign(prefix_.size(), -1);
    const size_t limit = budget == SIZE_MAX ? SIZE_MAX : out.ids.size() + budget;
    std::string repaired;
    for (size_t w = 0; w < words.size() && out.ids.size() < limit; ++w) {
      std::string_view word = words[w];
      if (!tk::is_valid_utf8(word)) {
        repaired = tk::repair_utf8(word);
        word = repaired;
      }
      // HF pre-tokenized input: every word through the pipeline alone, with the ByteLevel
      // prefix space whatever the loaded files say (run_ner.py's add_prefix_space=True).
      encode_text(word, out.ids, limit, /*prefix_space=*/true);
      out.word_ids.resize(out.ids.size(), int32_t(w));
    }
    if (out.ids.size() > limit) out.ids.resize(limit), out.word_ids.resize(limit);
    out.ids.insert(out.ids.end(), suffix_.begin(), suffix_.end());
    out.word_ids.resize(out.ids.size(), -1);
    return out;
  }

  OffsetsEncoding encode_with_offsets(std::string_view text, int max_length) const override {
    const size_t budget = body_budget(max_length);
    // Repair gives at most one code point per byte: int32 offsets hold any text under 2 GiB.
    RC_CHECK(text.size() < size_t(INT32_MAX), Errc::invalid_argument, "encode_with_offsets: a text of ", text.size(),
             " bytes is past what an int32 offset counts");
    std::string repaired;
    if (!tk::is_valid_utf8(text)) {
      repaired = tk::repair_utf8(text);
      text = repaired;
    }
    std::vector<SourcedToken> tokens = sourced_tokens(text, budget);
    // char_of[b]: the code point holding byte b; char_of[size] = the number of code points.
    std::vector<int32_t> char_of(text.size() + 1);
    int32_t chars = -1;
    for (size_t b = 0; b < text.size(); ++b) {
      if ((static_cast<unsigned char>(text[b]) & 0xC0) != 0x80) ++chars;
      char_of[b] = chars;
    }
    char_of[text.size()] = chars + 1;
    OffsetsEncoding out;
    const size_t n = prefix_.size() + tokens.size() + suffix_.size();
    out.ids.reserve(n);
    out.offsets.reserve(n);
    out.special_tokens_mask.reserve(n);
    auto special = [&](int32_t id) {
      out.ids.push_back(id);
      out.offsets.push_back({0, 0});
      out.special_tokens_mask.push_back(1);
    };
    for (int32_t id : prefix_) special(id);
    for (size_t i = 0; i < tokens.size(); ++i) {
      const SourcedToken& t = tokens[i];
      // Whole characters: from the one holding the first byte to the end of the one holding the last.
      TokenOffset o{char_of[t.begin], t.end > t.begin ? char_of[t.end - 1] + 1 : char_of[t.begin]};
      if (trim_offsets_) {  // tokenizers/src/pre_tokenizers/byte_level.rs, process_offsets
        int32_t leading = t.leading_spaces;
        if (leading > 0) {
          // "If user uses is_pretokenized=True we might have offsets that might begin at the
          // start of the string but are NOT the first token": HF's test, kept as it is.
          const bool is_first = i == 0 || o.start == 0;
          if (is_first && trim_add_prefix_space_ && leading == 1) leading = 0;
          o.start = std::min(o.start + leading, o.end);
        }
        if (t.trailing_spaces > 0 && o.end >= t.trailing_spaces) o.end = std::max(o.end - t.trailing_spaces, o.start);
      }
      out.ids.push_back(t.id);
      out.offsets.push_back(o);
      out.special_tokens_mask.push_back(0);
    }
    for (int32_t id : suffix_) special(id);
    return out;
  }

  std::vector<int32_t> encode(std::string_view text, int max_length, TruncationSide side) const override {
    if (side == TruncationSide::right || max_length == 0) return encode(text, true, max_length);
    const size_t n_special = prefix_.size() + suffix_.size();
    check_room(max_length, n_special);
    std::vector<int32_t> body = encode_body(text);
    cut(body, size_t(max_length) - n_special, side);
    std::vector<int32_t> out = prefix_;
    out.insert(out.end(), body.begin(), body.end());
    out.insert(out.end(), suffix_.begin(), suffix_.end());
    return out;
  }

  std::vector<int32_t> encode_pair(std::string_view text, std::string_view text_pair, int max_length,
                                   TruncationSide side) const override {
    return encode_pair_at(text, text_pair, max_length, side, nullptr);
  }
  // encode_pair, and where the second text's ids begin (after pair_middle) in *second.
  std::vector<int32_t> encode_pair_at(std::string_view text, std::string_view text_pair, int max_length,
                                      TruncationSide side, size_t* second) const {
    RC_CHECK(max_length >= 0, Errc::invalid_argument, "max_length must be >= 0 (0: no limit), got ", max_length);
    const size_t n_special = pair_prefix_.size() + pair_middle_.size() + pair_suffix_.size();
    std::vector<int32_t> a = encode_body(text), b = encode_body(text_pair);
    if (max_length > 0) {
      check_room(max_length, n_special);
      // tokenizers' truncate_encodings, LongestFirst, on the budget left after the specials.
      const size_t budget = size_t(max_length) - n_special;
      if (a.size() + b.size() > budget) {
        size_t n1 = a.size(), n2 = b.size();
        const bool swapped = n1 > n2;
        if (swapped) std::swap(n1, n2);  // n1: the shorter
        n2 = n1 > budget ? n1 : std::max(n1, budget - n1);
        if (n1 + n2 > budget) {
          n1 = budget / 2;
          n2 = n1 + budget % 2;
        }
        if (swapped) std::swap(n1, n2);
        cut(a, n1, side);
        cut(b, n2, side);
      }
    }
    std::vector<int32_t> out;
    out.reserve(a.size() + b.size() + n_special);
    out = pair_prefix_;
    out.insert(out.end(), a.begin(), a.end());
    out.insert(out.end(), pair_middle_.begin(), pair_middle_.end());
    if (second) *second = out.size();
    out.insert(out.end(), b.begin(), b.end());
    out.insert(out.end(), pair_suffix_.begin(), pair_suffix_.end());
    return out;
  }

  // Every type id is 0 (read_tokenizer_json sends the files whose post-processor gives other
  // types, BertProcessing or a template with type_id 1, to the pipeline), except the second
  // text's when no post-processor sets types (pair_second_type_ 1, which has no specials).
  PairEncoding encode_pair_with_types(std::string_view text, std::string_view text_pair, int max_length,
                                      TruncationSide side) const override {
    PairEncoding out;
    size_t second = 0;
    out.ids = encode_pair_at(text, text_pair, max_length, side, &second);
    out.type_ids.assign(out.ids.size(), 0);
    if (pair_second_type_ != 0)
      std::fill(out.type_ids.begin() + std::ptrdiff_t(second), out.type_ids.end(), pair_second_type_);
    return out;
  }

  EncodedBatch encode_batch(std::span<const std::string> texts, int max_length) const override {
    std::vector<std::vector<int32_t>> rows;
    rows.reserve(texts.size());
    EncodedBatch b;
    b.batch = int64_t(texts.size());
    for (const std::string& text : texts) {
      rows.push_back(encode(text, true, max_length));
      b.max_len = std::max<int64_t>(b.max_len, int64_t(rows.back().size()));
    }
    b.ids.assign(size_t(b.batch * b.max_len), pad_);
    b.attention_mask.assign(size_t(b.batch * b.max_len), 0);
    b.lengths.resize(size_t(b.batch));
    for (size_t r = 0; r < rows.size(); ++r) {
      std::copy(rows[r].begin(), rows[r].end(), b.ids.begin() + int64_t(r) * b.max_len);
      std::fill_n(b.attention_mask.begin() + int64_t(r) * b.max_len, rows[r].size(), 1);
      b.lengths[r] = int32_t(rows[r].size());
    }
    return b;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    std::string bytes;
    for (int32_t id : ids) {
      if (id < 0 || size_t(id) >= tokens_.size()) continue;  // HF drops unknown ids
      const Entry& e = tokens_[size_t(id)];
      if (!e.present || (skip_special_tokens && e.special)) continue;
      bytes += e.bytes;
    }
    return tk::is_valid_utf8(bytes) ? bytes : tk::repair_utf8(bytes);
  }

  int32_t token_to_id(std::string_view token) const override {
    auto it = to_id_.find(std::string(token));
    return it != to_id_.end() ? it->second : -1;
  }
  std::string id_to_token(int32_t id) const override {
    if (id < 0 || size_t(id) >= tokens_.size()) return {};
    return tokens_[size_t(id)].text;
  }
  int64_t vocab_size() const override { return int64_t(tokens_.size()); }
  int32_t bos_id() const override { return bos_; }
  int32_t eos_id() const override { return eos_; }
  int32_t pad_id() const override { return pad_; }
  int32_t unk_id() const override { return unk_; }
  int32_t mask_id() const override { return mask_; }

 private:
  struct Entry {
    std::string text;   // token string (byte-level characters, or an added token's content)
    std::string bytes;  // what decode() emits for it
    bool present = false, special = false;
  };

  // A token of encode_with_offsets: the bytes [begin, end) of the (repaired) text it came from,
  // whole characters, and the spaces its string starts and ends with as tokenizers'
  // process_offsets counts them ('Ġ' or a whitespace character of the token's string).
  struct SourcedToken {
    int32_t id;
    size_t begin, end;
    int32_t leading_spaces, trailing_spaces;
  };

  // The ids left for the text once the single-sequence specials are in: SIZE_MAX for no limit.
  size_t body_budget(int max_length) const {
    RC_CHECK(max_length >= 0, Errc::invalid_argument, "max_length must be >= 0 (0: no limit), got ", max_length);
    if (max_length == 0) return SIZE_MAX;
    const size_t n_special = prefix_.size() + suffix_.size();
    check_room(max_length, n_special);
    return size_t(max_length) - n_special;
  }

  // encode_text()'s tokens of valid UTF-8 `text` (at most `limit`) with where they came from.
  std::vector<SourcedToken> sourced_tokens(std::string_view text, size_t limit) const {
    std::vector<SourcedToken> out;
    if (text.empty()) return out;
    std::vector<tk::Segment> segments;
    added_.split(text, segments);
    std::vector<int32_t> ids;
    std::string prefixed;
    for (const tk::Segment& seg : segments) {
      if (out.size() >= limit) break;
      if (seg.id >= 0) {  // an added token: the text it matched, lstrip/rstrip whitespace included
        const std::string_view matched = text.substr(seg.begin, seg.end - seg.begin);
        out.push_back({seg.id, seg.begin, seg.end, count_spaces(matched, false), count_spaces(matched, true)});
        continue;
      }
      std::string_view piece_text = text.substr(seg.begin, seg.end - seg.begin);
      // The prefix space stands for the segment's first character (tokenizers'
      // NormalizedString::prepend aligns it there): view byte q is text byte source(q).
      const bool prefixed_space = add_prefix_space_ && piece_text.front() != ' ';
      if (prefixed_space) {
        prefixed.assign(1, ' ');
        prefixed.append(piece_text);
        piece_text = prefixed;
      }
      const size_t shift = prefixed_space ? 1 : 0;
      auto source = [&](size_t q) { return seg.begin + (q < shift ? 0 : q - shift); };
      tk::gpt2_split(piece_text, [&](size_t b, size_t e) {
        if (out.size() >= limit) return;
        ids.clear();
        model_.encode_word(piece_text.substr(b, e - b), ids);
        size_t q = b;
        for (int32_t id : ids) {
          // Each model token stands for its bytes of the word, in order (a byte missing from
          // the vocabulary is dropped by the model: clamp so that offsets stay in the piece).
          const size_t q0 = std::min(q, e), q1 = std::min(q + model_token_bytes_[size_t(id)], e);
          q = q1;
          const std::string_view bytes = piece_text.substr(q0, q1 - q0);
          out.push_back({id, source(q0), q1 > q0 ? source(q1 - 1) + 1 : source(q0), count_ascii_spaces(bytes, false),
                         count_ascii_spaces(bytes, true)});
        }
      });
    }
    if (out.size() > limit) out.resize(limit);
    return out;
  }

  // Leading (or trailing) spaces of a byte-level token: its 'Ġ' characters are its 0x20 bytes,
  // and no other byte's character is whitespace.
  static int32_t count_ascii_spaces(std::string_view bytes, bool trailing) {
    int32_t n = 0;
    if (trailing)
      for (size_t i = bytes.size(); i > 0 && bytes[i - 1] == ' '; --i) ++n;
    else
      for (size_t i = 0; i < bytes.size() && bytes[i] == ' '; ++i) ++n;
    return n;
  }
  // Leading (or trailing) characters of an added token's matched text that are 'Ġ' or
  // whitespace (Rust's char::is_whitespace), as process_offsets counts them.
  static int32_t count_spaces(std::string_view text, bool trailing) {
    std::vector<uint32_t> cps;
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    for (size_t i = 0; i < text.size();) {
      const int len = tk::utf8_lead_length(s[i]);
      cps.push_back(tk::utf8_decode(s + i, len));
      i += size_t(len);
    }
    auto space = [](uint32_t cp) { return cp == 0x120 || tk::is_unicode_whitespace(cp); };
    int32_t n = 0;
    if (trailing)
      for (size_t i = cps.size(); i > 0 && space(cps[i - 1]); --i) ++n;
    else
      for (size_t i = 0; i < cps.size() && space(cps[i]); ++i) ++n;
    return n;
  }

  static void check_room(int max_length, size_t n_special) {
    RC_CHECK(size_t(max_length) >= n_special, Errc::invalid_argument, "max_length ", max_length,
             " leaves no room for the ", n_special, " special tokens", "\nHINT: use max_length >= ", n_special,
             ", or 0 for no limit");
  }
  // Keeps n ids: the first n (right truncation) or the last n (left).
  static void cut(std::vector<int32_t>& ids, size_t n, TruncationSide side) {
    if (ids.size() <= n) return;
    if (side == TruncationSide::left)
      ids.erase(ids.begin(), ids.end() - std::ptrdiff_t(n));
    else
      ids.resize(n);
  }
  // The ids of one text without special tokens or truncation (UTF-8 repaired first).
  std::vector<int32_t> encode_body(std::string_view text) const {
    std::string repaired;
    if (!tk::is_valid_utf8(text)) {
      repaired = tk::repair_utf8(text);
      text = repaired;
    }
    std::vector<int32_t> out;
    out.reserve(text.size() / 4 + 8);
    encode_text(text, out, SIZE_MAX, add_prefix_space_);
    return out;
  }

  void check_special_id(int32_t id, const char* where) const {
    RC_CHECK(id >= 0 && size_t(id) < tokens_.size() && tokens_[size_t(id)].present, Errc::format, "tokenizer ", where,
             " uses id ", id, ", which is not in the vocabulary",
             "\nHINT: the tokenizer files are inconsistent; re-export them with transformers");
  }

  // Appends the ids of text (valid UTF-8, no specials) to out; stops once out holds
  // `limit` ids (the pieces before a cut do not depend on the text after it). prefix_space:
  // the ByteLevel pre-tokenizer's add_prefix_space, per piece of text between added tokens.
  void encode_text(std::string_view text, std::vector<int32_t>& out, size_t limit, bool prefix_space) const {
    bool maybe_added = false;
    for (unsigned char c : text)
      if (added_first_bytes_[c]) {
        maybe_added = true;
        break;
      }
    if (!maybe_added) {
      encode_plain(text, out, limit, prefix_space);
      return;
    }
    thread_local std::vector<tk::Segment> segments;
    segments.clear();
    added_.split(text, segments);
    for (const tk::Segment& s : segments) {
      if (out.size() >= limit) return;
      if (s.id >= 0)
        out.push_back(s.id);
      else
        encode_plain(text.substr(s.begin, s.end - s.begin), out, limit, prefix_space);
    }
  }

  void encode_plain(std::string_view text, std::vector<int32_t>& out, size_t limit, bool prefix_space) const {
    if (text.empty()) return;
    std::string prefixed;
    if (prefix_space && text.front() != ' ') {
      prefixed.reserve(text.size() + 1);
      prefixed.push_back(' ');
      prefixed.append(text);
      text = prefixed;
    }
    tk::gpt2_split(text, [&](size_t b, size_t e) {
      if (out.size() >= limit) return;  // truncated: skip the rest cheaply
      model_.encode_word(text.substr(b, e - b), out);
    });
  }

  tk::BpeModel model_;
  tk::AddedVocab added_;
  std::vector<int32_t> prefix_, suffix_;
  std::vector<int32_t> pair_prefix_, pair_middle_, pair_suffix_;
  int32_t pair_second_type_ = 0;
  bool add_prefix_space_, trim_offsets_, trim_add_prefix_space_;
  std::vector<size_t> model_token_bytes_;  // by id: bytes of the model's token (offsets)
  std::vector<Entry> tokens_;              // by id
  std::unordered_map<std::string, int32_t> to_id_;
  std::array<bool, 256> added_first_bytes_{};
  int32_t bos_ = -1, eos_ = -1, pad_ = -1, unk_ = -1, mask_ = -1;
};

}  // namespace

std::string text_span(std::string_view text, int32_t start, int32_t end) {
  std::string repaired;
  if (!tk::is_valid_utf8(text)) {
    repaired = tk::repair_utf8(text);
    text = repaired;
  }
  auto is_lead = [&](size_t b) { return (static_cast<unsigned char>(text[b]) & 0xC0) != 0x80; };
  int64_t chars = 0;
  for (size_t b = 0; b < text.size(); ++b) chars += is_lead(b);
  RC_CHECK(start >= 0 && start <= end && end <= chars, Errc::invalid_argument, "text_span: [", start, ", ", end,
           ") is not a range of the text's ", chars, " characters");
  // The bytes where code points `start` and `end` begin (text.size() for the end of the text).
  size_t begin_byte = text.size(), end_byte = text.size();
  int32_t k = 0;
  for (size_t b = 0; b < text.size() && k <= end; ++b) {
    if (!is_lead(b)) continue;
    if (k == start) begin_byte = b;
    if (k == end) end_byte = b;
    ++k;
  }
  return std::string(text.substr(begin_byte, end_byte - begin_byte));
}

std::unique_ptr<Tokenizer> Tokenizer::from_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  RC_CHECK(fs::is_directory(dir, ec), Errc::not_found, "tokenizer folder '", dir.string(), "' does not exist",
           "\nHINT: pass the folder of a Hugging Face tokenizer (tokenizer.json, or vocab.json + "
           "merges.txt), e.g. assets/tokenizer/roberta-base");
  // Present also when it cannot be looked at (a symlink loop): the reader then says why,
  // rather than the other layout being read in its place.
  if (path_present(dir / "tokenizer.json")) {
    // The byte-level BPE fast path for the files it handles; the pipeline for the rest
    // (the fast reader refuses them as unsupported).
    try {
      return std::make_unique<BpeTokenizer>(tk::read_tokenizer_json(dir / "tokenizer.json"));
    } catch (const Error& e) {
      if (e.errc() != Errc::unsupported) throw;
    }
    const std::string file = (dir / "tokenizer.json").string();
    return tk::pipeline::make_pipeline_tokenizer(tk::pipeline::read_tokenizer_document(dir / "tokenizer.json"), file,
                                                 tk::pipeline::read_roles(dir));
  }
  const bool has_vocab = path_present(dir / "vocab.json"), has_merges = path_present(dir / "merges.txt");
  if (!has_vocab && !has_merges) {
    // transformers' slow-tokenizer files, converted as its convert_slow_tokenizer.py does.
    if (path_present(dir / "vocab.txt"))
      return tk::pipeline::make_pipeline_tokenizer(tk::pipeline::convert_bert_vocab(dir), (dir / "vocab.txt").string(),
                                                   tk::pipeline::read_roles(dir));
    if (path_present(dir / "sentencepiece.bpe.model")) {
      const tk::pipeline::Roles roles = tk::pipeline::read_roles(dir);
      const bool camembert = tk::pipeline::is_camembert_config(dir);
      return tk::pipeline::make_pipeline_tokenizer(
          tk::pipeline::convert_sentencepiece(dir / "sentencepiece.bpe.model", camembert),
          (dir / "sentencepiece.bpe.model").string(), roles);
    }
  }
  RC_CHECK(has_vocab && has_merges, Errc::not_found, "tokenizer folder '", dir.string(),
           "' has no tokenizer.json, vocab.json + merges.txt, vocab.txt or sentencepiece.bpe.model",
           (has_vocab    ? " (merges.txt is missing)"
            : has_merges ? " (vocab.json is missing)"
                         : ""),
           "\nHINT: copy the tokenizer files of the model (tokenizer.json, or vocab.json and "
           "merges.txt) into this folder");
  return std::make_unique<BpeTokenizer>(tk::read_vocab_merges(dir / "vocab.json", dir / "merges.txt", dir));
}

std::unique_ptr<Tokenizer> Tokenizer::from_files(const std::filesystem::path& vocab_json,
                                                 const std::filesystem::path& merges_txt) {
  return std::make_unique<BpeTokenizer>(tk::read_vocab_merges(vocab_json, merges_txt, {}));
}

}  // namespace rc
