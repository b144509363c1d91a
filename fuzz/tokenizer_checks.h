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
