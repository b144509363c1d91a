// Checks shared by the tokenizer targets: what every loaded tokenizer must do with text.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "roberta/tokenizer.h"
#include "tokenizer/utf8.h"

namespace rc::fuzz {

// Encodes text every way the CLI and server do and checks the results against each other.
// `exact_round_trip`: the tokenizer is byte-level with a complete byte alphabet, so
// decode(encode(text)) gives back the (repaired) text whenever no added token can match.
inline void check_tokenizer_on(const Tokenizer& tok, std::string_view text, int max_length, bool exact_round_trip) {
  const int64_t vocab = tok.vocab_size();
  std::vector<int32_t> plain;
  if (!expect_rc_error([&] { plain = tok.encode(text, false, 0); })) return;  // e.g. a byte with no token
  for (int32_t id : plain) RC_FUZZ_REQUIRE(id >= 0 && id < vocab);

  // With specials: prefix + content + suffix, where prefix + suffix is what "" encodes to.
  const std::vector<int32_t> specials = tok.encode("", true, 0);
  const std::vector<int32_t> full = tok.encode(text, true, 0);
  for (int32_t id : full) RC_FUZZ_REQUIRE(id >= 0 && id < vocab);
  RC_FUZZ_REQUIRE(full.size() == plain.size() + specials.size());
  auto wraps = [&](const std::vector<int32_t>& got, size_t content) {  // some split of specials fits
    for (size_t p = 0; p <= specials.size(); ++p)
      if (std::equal(specials.begin(), specials.begin() + ptrdiff_t(p), got.begin()) &&
          std::equal(plain.begin(), plain.begin() + ptrdiff_t(content), got.begin() + ptrdiff_t(p)) &&
          std::equal(specials.begin() + ptrdiff_t(p), specials.end(), got.begin() + ptrdiff_t(p + content)))
        return true;
    return false;
  };
  RC_FUZZ_REQUIRE(wraps(full, plain.size()));

  // Truncation keeps a prefix of the content and every special (HF truncation=True).
  if (max_length > 0 && size_t(max_length) >= specials.size()) {
    const std::vector<int32_t> cut = tok.encode(text, true, max_length);
    const size_t content = std::min(plain.size(), size_t(max_length) - specials.size());
    RC_FUZZ_REQUIRE(cut.size() == content + specials.size());
    RC_FUZZ_REQUIRE(wraps(cut, content));
  }

  // Offsets (HF's return_offsets_mapping): encode()'s ids, specials at (0, 0) with mask 1,
  // every other range inside the (repaired) text and readable back with text_span().
  if (max_length == 0 || size_t(max_length) >= specials.size()) {
    const OffsetsEncoding o = tok.encode_with_offsets(text, max_length);
    RC_FUZZ_REQUIRE(o.ids == tok.encode(text, true, max_length));
    RC_FUZZ_REQUIRE(o.offsets.size() == o.ids.size() && o.special_tokens_mask.size() == o.ids.size());
    const std::string repaired = tokenizer::is_valid_utf8(text) ? std::string(text) : tokenizer::repair_utf8(text);
    const int32_t chars = int32_t(std::count_if(repaired.begin(), repaired.end(),
                                                [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
    size_t n_special = 0;
    for (size_t i = 0; i < o.ids.size(); ++i) {
      const TokenOffset r = o.offsets[i];
      if (o.special_tokens_mask[i]) {
        ++n_special;
        RC_FUZZ_REQUIRE(r.start == 0 && r.end == 0);
        continue;
      }
      RC_FUZZ_REQUIRE(0 <= r.start && r.start <= r.end && r.end <= chars);
      (void)text_span(text, r.start, r.end);
    }
    RC_FUZZ_REQUIRE(n_special == specials.size());

    // The text's space-separated words, pre-split (HF is_split_into_words): one word id per
    // id, -1 as many times as there are specials, the others in word order.
    std::vector<std::string> words;
    for (size_t start = 0; start <= text.size();) {
      const size_t space = std::min(text.find(' ', start), text.size());
      words.emplace_back(text.substr(start, space - start));
      start = space + 1;
    }
    const WordsEncoding w = tok.encode_words(words, max_length);
    RC_FUZZ_REQUIRE(w.word_ids.size() == w.ids.size());
    RC_FUZZ_REQUIRE(max_length == 0 || w.ids.size() <= size_t(max_length));
    int32_t last_word = 0;
    size_t n_none = 0;
    for (size_t i = 0; i < w.ids.size(); ++i) {
      RC_FUZZ_REQUIRE(w.ids[i] >= 0 && w.ids[i] < vocab);
      if (w.word_ids[i] == -1) {
        ++n_none;
        continue;
      }
      RC_FUZZ_REQUIRE(w.word_ids[i] >= last_word && w.word_ids[i] < int32_t(words.size()));
      last_word = w.word_ids[i];
    }
    RC_FUZZ_REQUIRE(n_none == specials.size());
  }

  const std::string decoded = tok.decode(plain, false);
  RC_FUZZ_REQUIRE(tokenizer::is_valid_utf8(decoded));
  if (exact_round_trip && text.find('<') == std::string_view::npos) {
    const std::string want = tokenizer::is_valid_utf8(text) ? std::string(text) : tokenizer::repair_utf8(text);
    RC_FUZZ_REQUIRE(decoded == want);
  }
  (void)tok.decode(full, true);
  for (int32_t id : plain) (void)tok.id_to_token(id);
  (void)tok.token_to_id(text);

  // A batch of the halves pads to the longest row and masks the padding.
  const std::string texts[2] = {std::string(text.substr(0, text.size() / 2)),
                                std::string(text.substr(text.size() / 2))};
  const EncodedBatch b = tok.encode_batch(texts, 0);
  RC_FUZZ_REQUIRE(b.batch == 2 && b.ids.size() == size_t(b.batch * b.max_len));
  for (int r = 0; r < 2; ++r) {
    RC_FUZZ_REQUIRE(b.lengths[size_t(r)] <= b.max_len);
    for (int64_t c = 0; c < b.max_len; ++c)
      RC_FUZZ_REQUIRE(b.attention_mask[size_t(r * b.max_len + c)] == (c < b.lengths[size_t(r)] ? 1 : 0));
  }
}

}  // namespace rc::fuzz
