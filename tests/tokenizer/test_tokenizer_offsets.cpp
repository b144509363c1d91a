// encode_with_offsets and encode_words against Hugging Face's own Rust tokenizers:
// tests/data/tokenizer/offsets.jsonl and words.jsonl, made by tools/make_offset_goldens.mjs
// (return_offsets_mapping / return_special_tokens_mask in code points, and
// tokenizer(words, is_split_into_words=True) with add_prefix_space=True).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "golden_cases.h"
#include "roberta/error.h"
#include "roberta/tokenizer.h"

namespace rc::test {
namespace {

namespace fs = std::filesystem;

// roberta-base as AutoTokenizer.from_pretrained(..., add_prefix_space=True) has it:
// add_prefix_space set in the ByteLevel pre-tokenizer and in RobertaProcessing.
const Tokenizer& prefix_space_tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    nlohmann::json j;
    std::ifstream(roberta_tokenizer_dir() / "tokenizer.json") >> j;
    j["pre_tokenizer"]["add_prefix_space"] = true;
    j["post_processor"]["add_prefix_space"] = true;
    const fs::path dir = fs::temp_directory_path() / ("rc_tok_prefix_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "tokenizer.json") << j.dump();
    auto t = Tokenizer::from_dir(dir);
    fs::remove_all(dir);
    return t;
  }();
  return *tok;
}

const Tokenizer& plain_tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = Tokenizer::from_dir(roberta_tokenizer_dir());
  return *tok;
}

std::string case_text(const nlohmann::json& c) {
  return c.contains("hex") ? from_hex(c["hex"].get<std::string>()) : c["text"].get<std::string>();
}

std::string offsets_str(const std::vector<TokenOffset>& o) {
  std::string s = "[";
  for (size_t i = 0; i < o.size(); ++i)
    s += (i ? ",[" : "[") + std::to_string(o[i].start) + "," + std::to_string(o[i].end) + "]";
  return s + "]";
}

TEST(TokenizerOffsets, GoldensMatchEveryField) {
  const auto cases = read_jsonl(tokenizer_data_dir() / "offsets.jsonl");
  ASSERT_GE(cases.size(), 500u);
  int mismatches = 0, with_prefix = 0, truncated = 0, invalid_utf8 = 0;
  for (const auto& c : cases) {
    const bool prefix = c["add_prefix_space"].get<bool>();
    const Tokenizer& tok = prefix ? prefix_space_tokenizer() : plain_tokenizer();
    const std::string text = case_text(c);
    const int max_length = c.value("max_length", 0);
    const OffsetsEncoding got = tok.encode_with_offsets(text, max_length);
    std::vector<TokenOffset> want_offsets;
    for (const auto& o : c["offsets"]) want_offsets.push_back({o[0].get<int32_t>(), o[1].get<int32_t>()});
    const auto want_ids = c["ids"].get<std::vector<int32_t>>();
    const auto want_mask = c["special_tokens_mask"].get<std::vector<uint8_t>>();
    const bool same = got.ids == want_ids && got.offsets == want_offsets && got.special_tokens_mask == want_mask;
    if (!same && ++mismatches <= 8)
      ADD_FAILURE() << c.dump() << "\n got ids " << ids_str(got.ids) << " offsets " << offsets_str(got.offsets);
    // The ids are encode()'s.
    if (got.ids != tok.encode(text, true, max_length) && ++mismatches <= 8)
      ADD_FAILURE() << "encode differs: " << c.dump();
    with_prefix += prefix;
    truncated += max_length > 0;
    invalid_utf8 += c.contains("hex");
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(with_prefix, 200);
  EXPECT_GT(truncated, 50);
  EXPECT_GT(invalid_utf8, 50);
}

// The same rules from vocab.json + merges.txt (RobertaConverter: trim_offsets=True, the
// post-processor's add_prefix_space from the config, false here).
TEST(TokenizerOffsets, VocabMergesTrimsAsTokenizerJson) {
  auto tok = Tokenizer::from_files(roberta_tokenizer_dir() / "vocab.json", roberta_tokenizer_dir() / "merges.txt");
  for (const auto& c : read_jsonl(tokenizer_data_dir() / "offsets.jsonl")) {
    if (c["add_prefix_space"].get<bool>()) continue;
    const OffsetsEncoding got = tok->encode_with_offsets(case_text(c), c.value("max_length", 0));
    std::vector<TokenOffset> want;
    for (const auto& o : c["offsets"]) want.push_back({o[0].get<int32_t>(), o[1].get<int32_t>()});
    ASSERT_EQ(got.offsets, want) << c.dump();
  }
}

TEST(TokenizerOffsets, HandPickedRanges) {
  // "hello world": the space before "world" is trimmed off its token; specials are (0, 0).
  const OffsetsEncoding e = plain_tokenizer().encode_with_offsets("hello world");
  ASSERT_EQ(e.offsets.size(), 4u);
  EXPECT_EQ(e.offsets[1], (TokenOffset{0, 5}));
  EXPECT_EQ(e.offsets[2], (TokenOffset{6, 11}));
  EXPECT_EQ(e.offsets[3], (TokenOffset{0, 0}));
  EXPECT_EQ(e.special_tokens_mask, (std::vector<uint8_t>{1, 0, 0, 1}));
  // Code points, not bytes: "é" is one character (two bytes), "😀" one (four bytes).
  const OffsetsEncoding u = plain_tokenizer().encode_with_offsets("é😀 x");
  EXPECT_EQ(u.offsets.back(), (TokenOffset{0, 0}));
  EXPECT_EQ(u.offsets[u.offsets.size() - 2], (TokenOffset{3, 4}));
}

TEST(TokenizerOffsets, TextSpanReadsOffsetsBack) {
  // The spans, with the gaps between them (the spaces that trimming took off), are the text.
  const std::string words = "Zoë went to São Paulo";
  const OffsetsEncoding w = plain_tokenizer().encode_with_offsets(words);
  std::string joined;
  int32_t last_end = 0;
  for (size_t i = 1; i + 1 < w.ids.size(); ++i) {
    const std::string gap = text_span(words, last_end, w.offsets[i].start);
    EXPECT_TRUE(gap.empty() || gap == " ") << i << ": '" << gap << "'";
    joined += gap + text_span(words, w.offsets[i].start, w.offsets[i].end);
    last_end = w.offsets[i].end;
  }
  EXPECT_EQ(joined, words);
  const std::string text = "Zoë went to 東京 😀!";
  EXPECT_EQ(text_span(text, 0, 3), "Zoë");
  EXPECT_EQ(text_span(text, 12, 14), "東京");
  EXPECT_EQ(text_span(text, 15, 17), "😀!");
  EXPECT_EQ(text_span(text, 17, 17), "");
  // Invalid UTF-8: offsets count characters of the repaired text ("a\xFF" -> "a\uFFFD").
  EXPECT_EQ(text_span("a\xFF"
                      "b",
                      1, 2),
            "\xEF\xBF\xBD");
  EXPECT_EQ(text_span("a\xFF"
                      "b",
                      2, 3),
            "b");
  EXPECT_THROW(text_span(text, 0, 18), Error);
  EXPECT_THROW(text_span(text, 3, 2), Error);
  EXPECT_THROW(text_span(text, -1, 2), Error);
}

TEST(TokenizerOffsets, MaxLengthChecked) {
  EXPECT_THROW(plain_tokenizer().encode_with_offsets("x", 1), Error);
  EXPECT_THROW(plain_tokenizer().encode_with_offsets("x", -1), Error);
  const OffsetsEncoding e = plain_tokenizer().encode_with_offsets("one two three", 2);
  EXPECT_EQ(e.ids, (std::vector<int32_t>{0, 2}));
}

std::vector<int32_t> word_ids_of(const nlohmann::json& c) {
  std::vector<int32_t> out;
  for (const auto& w : c["word_ids"]) out.push_back(w.is_null() ? -1 : w.get<int32_t>());
  return out;
}

void check_words(const Tokenizer& tok) {
  const auto cases = read_jsonl(tokenizer_data_dir() / "words.jsonl");
  ASSERT_GE(cases.size(), 300u);
  int mismatches = 0, truncated = 0;
  for (const auto& c : cases) {
    const auto words = c["words"].get<std::vector<std::string>>();
    const int max_length = c.value("max_length", 0);
    const WordsEncoding got = tok.encode_words(words, max_length);
    const auto want_ids = c["ids"].get<std::vector<int32_t>>();
    const auto want_words = word_ids_of(c);
    if ((got.ids != want_ids || got.word_ids != want_words) && ++mismatches <= 8)
      ADD_FAILURE() << c.dump() << "\n got ids " << ids_str(got.ids) << " word_ids " << ids_str(got.word_ids);
    truncated += max_length > 0;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(truncated, 20);
}

// encode_words puts the prefix space itself: the stock roberta-base files
// (add_prefix_space=false) and the add_prefix_space=True ones give the same answer.
TEST(TokenizerWords, GoldensFromStockTokenizer) { check_words(plain_tokenizer()); }
TEST(TokenizerWords, GoldensFromPrefixSpaceTokenizer) { check_words(prefix_space_tokenizer()); }

TEST(TokenizerWords, EmptyWordsAndLimits) {
  const std::vector<std::string> none;
  const WordsEncoding e = plain_tokenizer().encode_words(none);
  EXPECT_EQ(e.ids, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(e.word_ids, (std::vector<int32_t>{-1, -1}));
  const std::vector<std::string> words{"a", "", "b"};
  const WordsEncoding w = plain_tokenizer().encode_words(words);
  ASSERT_EQ(w.word_ids.size(), 4u);
  EXPECT_EQ(w.word_ids[1], 0);
  EXPECT_EQ(w.word_ids[2], 2);  // "" gives no id, so word 1 owns none
  EXPECT_THROW(plain_tokenizer().encode_words(words, 1), Error);
  EXPECT_THROW(plain_tokenizer().encode_words(words, -3), Error);
  // Invalid UTF-8 in a word is repaired as encode() repairs it.
  const std::vector<std::string> bad{"a\xFF"}, good{"a\xEF\xBF\xBD"};
  EXPECT_EQ(plain_tokenizer().encode_words(bad).ids, plain_tokenizer().encode_words(good).ids);
}

}  // namespace
}  // namespace rc::test
