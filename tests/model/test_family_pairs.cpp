// BERT-style text pairs through rc::Classifier: tokenizer(text, text_pair) gives the second text
// token type 1, and predict_pairs carries those types to the model, against HF's ids, types and
// logits (tests/data/tiny_families/bert-seq-pair, tools/make_golden_families.py).
#include <gtest/gtest.h>

#include <cmath>

#include "roberta/classifier.h"
#include "support/allclose.h"
#include "support/bert_pair_case.h"

namespace rc {
namespace {

std::unique_ptr<Classifier> load_fp32(const test::BertPairCase& c) {
  LoadOptions o;
  o.precision = Precision::fp32;
  return Classifier::load(c.dir, o);
}

TEST(BertPairs, TokenizerGivesHfIdsAndTokenTypes) {
  const test::BertPairCase c;
  ASSERT_TRUE(c.has_type_one());
  auto clf = load_fp32(c);
  EXPECT_EQ(clf->max_length(), 24);  // max_position_embeddings: the long pair is cut longest_first
  for (int64_t b = 0; b < c.B; ++b) {
    const PairEncoding e =
        clf->tokenizer().encode_pair_with_types(c.texts[size_t(b)], c.text_pairs[size_t(b)], clf->max_length());
    EXPECT_EQ(e.ids, c.row_ids(b)) << "pair " << b;
    EXPECT_EQ(e.type_ids, c.row_types(b)) << "pair " << b;
  }
}

TEST(BertPairs, PredictPairsGivesTheReferenceLogits) {
  const test::BertPairCase c;
  auto clf = load_fp32(c);
  for (int batch_size : {1, 3, 8}) {
    const std::vector<Prediction> preds = clf->predict_pairs(c.texts, c.text_pairs, batch_size);
    ASSERT_EQ(int64_t(preds.size()), c.B);
    for (int64_t b = 0; b < c.B; ++b)
      EXPECT_ALLCLOSE(preds[size_t(b)].logits.data(), c.logits.data() + b * c.K, c.K, (test::Tol{1e-4, 0}))
          << "pair " << b << " batch " << batch_size;
  }
}

// predict_ids with the rows' types is the batch path the server's batcher runs; the same rows
// without types (every token type 0) answer differently, so the types are what made the match.
TEST(BertPairs, PredictIdsCarriesTokenTypes) {
  const test::BertPairCase c;
  auto clf = load_fp32(c);
  std::vector<std::vector<int32_t>> rows, types;
  for (int64_t b = 0; b < c.B; ++b) {
    rows.push_back(c.row_ids(b));
    types.push_back(c.row_types(b));
  }
  const auto typed = clf->predict_ids(rows, types);
  const auto untyped = clf->predict_ids(rows);
  double typed_diff = 0, untyped_diff = 0;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t k = 0; k < c.K; ++k) {
      const float want = c.logits[size_t(b * c.K + k)];
      typed_diff = std::max(typed_diff, double(std::fabs(typed[size_t(b)].logits[size_t(k)] - want)));
      untyped_diff = std::max(untyped_diff, double(std::fabs(untyped[size_t(b)].logits[size_t(k)] - want)));
    }
  EXPECT_LE(typed_diff, 1e-4);
  EXPECT_GT(untyped_diff, 1e-3);  // measured 9.8e-3, ~100x the tolerance above

  // Types must match their rows: a count or a length that differs is refused.
  types.pop_back();
  EXPECT_THROW(clf->predict_ids(rows, types), Error);
  types.push_back(std::vector<int32_t>(rows.back().size() + 1, 0));
  EXPECT_THROW(clf->predict_ids(rows, types), Error);
  types.back().assign(rows.back().size(), 2);  // type_vocab_size 2
  EXPECT_THROW(clf->predict_ids(rows, types), Error);
}

}  // namespace
}  // namespace rc
