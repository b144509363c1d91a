// DataCollatorForLanguageModeling's masking and run_mlm.py's group_texts (mlm_collator.h).
#include <gtest/gtest.h>

#include <filesystem>

#include "roberta/error.h"
#include "roberta/tokenizer.h"
#include "train/mlm_collator.h"

using namespace rc;

namespace {

std::unique_ptr<Tokenizer> tokenizer() { return Tokenizer::from_dir(std::string(RC_TEST_DATA_DIR) + "/tiny"); }

train::MlmMasking masking() {
  train::MlmMasking m;
  m.mask_id = 50264;
  m.random_vocab = 50265;
  m.special_ids = {0, 2, 1, 3, 50264};
  return m;
}

// B rows of length T: <s> ids... </s>, ids in [1000, 1000 + T).
train::PaddedBatch batch(int64_t B, int64_t T) {
  train::PaddedBatch pb;
  pb.B = B;
  pb.T = T;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) pb.ids.push_back(t == 0 ? 0 : (t == T - 1 ? 2 : int32_t(1000 + t)));
    pb.seq_lens.push_back(int32_t(T));
  }
  return pb;
}

}  // namespace

TEST(MlmCollator, RatesAre15ThenEightyTenTen) {
  const int64_t B = 400, T = 100;
  train::PaddedBatch pb = batch(B, T);
  const train::PaddedBatch orig = pb;
  std::vector<int64_t> ex(static_cast<size_t>(B));
  for (int64_t i = 0; i < B; ++i) ex[size_t(i)] = i;
  std::vector<int32_t> labels;
  const int64_t masked = train::mask_batch(masking(), 42, 7, ex, pb, labels);
  int64_t to_mask = 0, kept = 0, random = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const bool special = orig.ids[i] == 0 || orig.ids[i] == 2;
    if (special) {
      EXPECT_EQ(labels[i], -100);
      EXPECT_EQ(pb.ids[i], orig.ids[i]);
      continue;
    }
    if (labels[i] == -100) {
      EXPECT_EQ(pb.ids[i], orig.ids[i]);
      continue;
    }
    EXPECT_EQ(labels[i], orig.ids[i]);
    if (pb.ids[i] == 50264)
      ++to_mask;
    else if (pb.ids[i] == orig.ids[i])
      ++kept;
    else
      ++random;
  }
  const double eligible = double(B * (T - 2));
  // 39,200 eligible tokens: binomial sd of the 15% rate is 0.18 points; bars at ~5 sd.
  EXPECT_NEAR(double(masked) / eligible, 0.15, 0.01);
  EXPECT_NEAR(double(to_mask) / double(masked), 0.80, 0.03);
  EXPECT_NEAR(double(random) / double(masked), 0.10, 0.03);
  EXPECT_NEAR(double(kept) / double(masked), 0.10, 0.03);
}

TEST(MlmCollator, SameSeedStepExampleSameMasksAndNewOnesEachStep) {
  const int64_t B = 8, T = 40;
  std::vector<int64_t> ex = {5, 9, 1, 7, 3, 2, 8, 6};
  std::vector<int32_t> l1, l2, l3;
  train::PaddedBatch a = batch(B, T), b = batch(B, T), c = batch(B, T);
  train::mask_batch(masking(), 42, 3, ex, a, l1);
  train::mask_batch(masking(), 42, 3, ex, b, l2);
  train::mask_batch(masking(), 42, 4, ex, c, l3);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_NE(l1, l3);  // another step (another epoch's visit) masks anew
  // A row's masks depend on its example, not on its place in the batch or its padding.
  train::PaddedBatch one = batch(1, T);
  std::vector<int32_t> lone;
  const std::vector<int64_t> just9 = {9};
  train::mask_batch(masking(), 42, 3, just9, one, lone);
  EXPECT_TRUE(std::equal(lone.begin(), lone.end(), l1.begin() + T));
}

TEST(MlmCollator, PaddingIsNeverMasked) {
  train::PaddedBatch pb = batch(2, 30);
  pb.seq_lens[1] = 10;
  for (int64_t t = 10; t < 30; ++t) pb.ids[size_t(30 + t)] = 1;
  std::vector<int32_t> labels;
  std::vector<int64_t> ex = {0, 1};
  for (int step = 0; step < 50; ++step) {
    train::PaddedBatch p = pb;
    train::mask_batch(masking(), 1, step, ex, p, labels);
    for (int64_t t = 10; t < 30; ++t) {
      EXPECT_EQ(labels[size_t(30 + t)], -100);
      EXPECT_EQ(p.ids[size_t(30 + t)], 1);
    }
  }
}

TEST(MlmCollator, GroupTextsPacksWholeTextsIntoBlocksAndDropsTheRest) {
  auto tok = tokenizer();
  const std::vector<std::string> texts = {"hello world", "a b c d e f", "the quick brown fox", "x"};
  size_t total = 0;
  std::vector<int32_t> all;
  for (const auto& t : texts) {
    auto ids = tok->encode(t);
    total += ids.size();
    all.insert(all.end(), ids.begin(), ids.end());
  }
  const int block = 5;
  const train::TokenizedSplit s = train::mlm_examples(*tok, texts, block, true);
  ASSERT_EQ(s.size(), int64_t(total / block));
  for (int64_t i = 0; i < s.size(); ++i) EXPECT_EQ(s.lengths[size_t(i)], block);
  EXPECT_TRUE(std::equal(s.ids.begin(), s.ids.end(), all.begin()));
  // line by line: one example per text, truncated with </s> kept
  const train::TokenizedSplit lines = train::mlm_examples(*tok, texts, 4, false);
  ASSERT_EQ(lines.size(), 4);
  EXPECT_EQ(lines.ids[size_t(lines.offsets[1] + 3)], 2);
  const std::vector<std::string> one = {"x"};
  EXPECT_THROW(train::mlm_examples(*tok, one, 100, true), Error);
}
