// Text pairs against Hugging Face's ids: tests/data/tokenizer/pairs.jsonl, made with HF's Rust
// tokenizers by tools/make_pair_goldens.mjs (encode(a, b), truncation longest_first with both
// directions, and left truncation of single texts), from tokenizer.json and from
// vocab.json + merges.txt (transformers' RobertaTokenizer pair layout).
#include <gtest/gtest.h>

#include "golden_cases.h"
#include "roberta/error.h"
#include "roberta/tokenizer.h"

namespace rc::test {
namespace {

TruncationSide truncation_side_of(const nlohmann::json& c) {
  return c.value("direction", std::string("Right")) == "Left" ? TruncationSide::left : TruncationSide::right;
}

void check_goldens(const Tokenizer& tok) {
  const auto cases = read_jsonl(tokenizer_data_dir() / "pairs.jsonl");
  ASSERT_GE(cases.size(), 200u);
  int pairs = 0, truncated = 0, mismatches = 0;
  for (const auto& c : cases) {
    const std::string a = c["text"].get<std::string>();
    const int max_length = c.value("max_length", 0);
    std::vector<int32_t> got;
    if (c.contains("text_pair")) {
      got = tok.encode_pair(a, c["text_pair"].get<std::string>(), max_length, truncation_side_of(c));
      ++pairs;
    } else {
      got = tok.encode(a, max_length, truncation_side_of(c));
    }
    if (max_length > 0) ++truncated;
    const auto want = c["ids"].get<std::vector<int32_t>>();
    if (got != want && ++mismatches <= 5) ADD_FAILURE() << c.dump() << "\n got " << ids_str(got);
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(pairs, 150);
  EXPECT_GT(truncated, 150);
}

TEST(TokenizerPairs, GoldensFromTokenizerJson) { check_goldens(*Tokenizer::from_dir(roberta_tokenizer_dir())); }

TEST(TokenizerPairs, GoldensFromVocabMerges) {
  check_goldens(*Tokenizer::from_files(roberta_tokenizer_dir() / "vocab.json", roberta_tokenizer_dir() / "merges.txt"));
}

TEST(TokenizerPairs, TemplateAndBudget) {
  auto tok = Tokenizer::from_dir(roberta_tokenizer_dir());
  // <s> a </s></s> b </s>: each text on its own (no prefix space), the RoBERTa pair template.
  const auto a = tok->encode("a", false), b = tok->encode("b", false);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(tok->encode_pair("a", "b"), (std::vector<int32_t>{0, a[0], 2, 2, b[0], 2}));
  // Four specials: a budget under 4 is refused with a hint, exactly 4 leaves both texts empty.
  EXPECT_THROW(tok->encode_pair("a", "b", 3), Error);
  EXPECT_EQ(tok->encode_pair("a", "b", 4), (std::vector<int32_t>{0, 2, 2, 2}));
  // Right truncation of a single text with the side overload is the plain encode's.
  EXPECT_EQ(tok->encode("one two three four five", 4, TruncationSide::right),
            tok->encode("one two three four five", true, 4));
  const auto left = tok->encode("one two three four five", 4, TruncationSide::left);
  const auto full = tok->encode("one two three four five", true, 0);
  EXPECT_EQ(left, (std::vector<int32_t>{0, full[full.size() - 3], full[full.size() - 2], 2}));
}

}  // namespace
}  // namespace rc::test
