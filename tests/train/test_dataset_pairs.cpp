// Text pairs in training and evaluation data: a text_pair column (CSV/TSV) or field (JSONL)
// makes every example a pair, tokenized as HF's tokenizer(text, text_pair).
#include <gtest/gtest.h>

#include <filesystem>

#include "roberta/error.h"
#include "roberta/tokenizer.h"
#include "train/data_order.h"
#include "train/dataset.h"
#include "support/bert_pair_case.h"

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

// BERT-style pairs keep their token types (1 for the second text) from the tokenizer to the
// padded training batch, as HF's tokenizer(text, text_pair) and DataCollatorWithPadding give
// them (tests/data/tiny_families/bert-seq-pair); RoBERTa's all-zero types are not stored.
TEST(DatasetPairs, BertPairsKeepTheirTokenTypesInTheBatch) {
  const BertPairCase c;
  ASSERT_TRUE(c.has_type_one());
  auto bert = Tokenizer::from_dir(c.dir);
  const auto split = train::tokenize_split(*bert, c.texts, c.labels, 24, c.text_pairs);
  ASSERT_EQ(split.token_types.size(), split.ids.size());
  std::vector<int64_t> idx;
  for (int64_t b = 0; b < c.B; ++b) {
    const auto at = [&](const std::vector<int32_t>& v) {
      return std::vector<int32_t>(v.begin() + split.offsets[size_t(b)], v.begin() + split.offsets[size_t(b) + 1]);
    };
    EXPECT_EQ(at(split.ids), c.row_ids(b)) << "pair " << b;
    EXPECT_EQ(at(split.token_types), c.row_types(b)) << "pair " << b;
    idx.push_back(b);
  }
  train::PaddedBatch pb;
  pb.reserve(c.B, c.T);
  train::fill_batch(split, idx, 0, pb);
  ASSERT_EQ(pb.T, c.T);
  EXPECT_EQ(pb.ids, c.ids);
  EXPECT_EQ(pb.token_types, c.types);  // padding type 0

  // Singles, and pairs of a tokenizer that types both texts 0, carry no types (the batch's null).
  EXPECT_TRUE(train::tokenize_split(*bert, c.texts, c.labels, 24).token_types.empty());
  auto roberta = Tokenizer::from_dir(std::filesystem::path(RC_SOURCE_DIR) / "assets/tokenizer/roberta-base");
  const auto rob = train::tokenize_split(*roberta, c.texts, c.labels, 24, c.text_pairs);
  EXPECT_TRUE(rob.token_types.empty());
  train::fill_batch(rob, idx, 1, pb);
  EXPECT_TRUE(pb.token_types.empty());
}

}  // namespace
}  // namespace rc::test
