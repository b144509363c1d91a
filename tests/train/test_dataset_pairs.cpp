// Text pairs in training and evaluation data: a text_pair column (CSV/TSV) or field (JSONL)
// makes every example a pair, tokenized as HF's tokenizer(text, text_pair).
#include <gtest/gtest.h>

#include <filesystem>

#include "roberta/error.h"
#include "roberta/tokenizer.h"
#include "train/data_order.h"
#include "train/dataset.h"

namespace rc::test {
namespace {

TEST(DatasetPairs, CsvAndJsonlColumns) {
  const auto csv = train::parse_delimited("text,text_pair,label\npremise one,\"hyp, one\",entailment\nb,c,neutral\n",
                                          ',', {}, "nli.csv");
  ASSERT_EQ(csv.size(), 2u);
  EXPECT_EQ(csv.text_pairs, (std::vector<std::string>{"hyp, one", "c"}));
  const auto singles = train::parse_delimited("text,label\na,0\n", ',', {}, "s.csv");
  EXPECT_TRUE(singles.text_pairs.empty());

  const auto jl = train::parse_jsonl(
      "{\"text\": \"a\", \"text_pair\": \"b\", \"label\": 1}\n{\"text\": \"c\", \"text_pair\": \"d\", \"label\": 0}\n",
      {}, "nli.jsonl");
  EXPECT_EQ(jl.text_pairs, (std::vector<std::string>{"b", "d"}));
  // All or nothing, either way round.
  EXPECT_THROW(
      train::parse_jsonl("{\"text\": \"a\", \"label\": 1}\n{\"text\": \"c\", \"text_pair\": \"d\", \"label\": 0}\n", {},
                         "x.jsonl"),
      Error);
  EXPECT_THROW(
      train::parse_jsonl("{\"text\": \"a\", \"text_pair\": \"b\", \"label\": 1}\n{\"text\": \"c\", \"label\": 0}\n", {},
                         "x.jsonl"),
      Error);
  EXPECT_THROW(train::parse_jsonl("{\"text\": \"a\", \"text_pair\": 3, \"label\": 1}\n", {}, "x.jsonl"), Error);
}

TEST(DatasetPairs, TokenizedAsHfPairs) {
  auto tok = Tokenizer::from_dir(std::filesystem::path(RC_SOURCE_DIR) / "assets/tokenizer/roberta-base");
  const std::vector<std::string> texts = {"A man plays.", "Hello"}, pairs = {"Someone plays music.", "world"};
  const std::vector<int32_t> labels = {0, 1};
  const auto split = train::tokenize_split(*tok, texts, labels, 8, pairs);
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto want = tok->encode_pair(texts[i], pairs[i], 8);
    const std::vector<int32_t> got(split.ids.begin() + split.offsets[i], split.ids.begin() + split.offsets[i + 1]);
    EXPECT_EQ(got, want);
    EXPECT_EQ(got[0], 0);
  }
  EXPECT_EQ(split.lengths[0], 8);  // truncated longest_first to the budget
  // Without pairs the rows are the single-text encodings.
  const auto solo = train::tokenize_split(*tok, texts, labels, 0);
  EXPECT_EQ(solo.lengths[1], int32_t(tok->encode("Hello").size()));
}

// Token types do not reach the training batch yet: pairs whose tokenizer gives the second text
// type 1 (BERT's template) are refused rather than trained as type 0; singles still train.
TEST(DatasetPairs, BertStylePairsAreRefusedUntilTokenTypesReachTheBatch) {
  auto bert = Tokenizer::from_dir(std::filesystem::path(RC_TEST_DATA_DIR) / "tokenizer/pipeline/bert-uncased");
  ASSERT_EQ(bert->encode_pair_with_types("a", "b").type_ids.back(), 1);
  const std::vector<std::string> texts = {"a man plays"}, pairs = {"someone plays music"};
  const std::vector<int32_t> labels = {0};
  try {
    train::tokenize_split(*bert, texts, labels, 16, pairs);
    ADD_FAILURE() << "BERT-style pairs tokenized for training without their token types";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::unsupported);
    EXPECT_NE(std::string(e.what()).find("token type 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(train::tokenize_split(*bert, texts, labels, 16).lengths[0], int32_t(bert->encode(texts[0]).size()));
}

}  // namespace
}  // namespace rc::test
