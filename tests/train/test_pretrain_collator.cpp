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

// What masking did to each token: an unmasked one keeps its id; a masked one is labelled with
// its original id and became <mask>, stayed, or became another id.
struct MaskTally {
  int64_t masked = 0, to_mask = 0, kept = 0, random = 0;
  void add(int32_t label, int32_t now, int32_t was) {
    if (label == -100) {
      EXPECT_EQ(now, was);
      return;
    }
    EXPECT_EQ(label, was);
    ++masked;
    if (now == 50264)
      ++to_mask;
    else if (now == was)
      ++kept;
    else
      ++random;
  }
  void expect_eighty_ten_ten() const {
    EXPECT_NEAR(double(to_mask) / double(masked), 0.80, 0.03);
    EXPECT_NEAR(double(random) / double(masked), 0.10, 0.03);
    EXPECT_NEAR(double(kept) / double(masked), 0.10, 0.03);
  }
};

}  // namespace

TEST(MlmCollator, RatesAre15ThenEightyTenTen) {
  const int64_t B = 400, T = 100;
  train::PaddedBatch pb = batch(B, T);
  const train::PaddedBatch orig = pb;
  std::vector<int64_t> ex(static_cast<size_t>(B));
  for (int64_t i = 0; i < B; ++i) ex[size_t(i)] = i;
  std::vector<int32_t> labels;
  const int64_t masked = train::mask_batch(masking(), 42, 7, ex, pb, labels);
  MaskTally tally;
  for (size_t i = 0; i < labels.size(); ++i) {
    const bool special = orig.ids[i] == 0 || orig.ids[i] == 2;
    if (special) {
      EXPECT_EQ(labels[i], -100);
    }
    tally.add(labels[i], pb.ids[i], orig.ids[i]);
  }
  EXPECT_EQ(tally.masked, masked);
  const double eligible = double(B * (T - 2));
  // 39,200 eligible tokens: binomial sd of the 15% rate is 0.18 points; bars at ~5 sd.
  EXPECT_NEAR(double(masked) / eligible, 0.15, 0.01);
  tally.expect_eighty_ten_ten();
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

namespace {

// A split of `rows` examples, each <s> w… </s> with words of the given token counts, ids from
// 1000; word starts as mlm_word_starts gives them.
train::MlmSplit word_split(int64_t rows, const std::vector<int>& word_lengths) {
  train::MlmSplit s;
  for (int64_t r = 0; r < rows; ++r) {
    s.examples.offsets.push_back(int64_t(s.examples.ids.size()));
    s.examples.ids.push_back(0);
    s.word_starts.push_back(1);
    int32_t id = 1000;
    for (int n : word_lengths)
      for (int k = 0; k < n; ++k) {
        s.examples.ids.push_back(id++);
        s.word_starts.push_back(k == 0);
      }
    s.examples.ids.push_back(2);
    s.word_starts.push_back(1);
    s.examples.lengths.push_back(int32_t(s.examples.ids.size() - size_t(s.examples.offsets.back())));
    s.examples.labels.push_back(0);
  }
  s.examples.offsets.push_back(int64_t(s.examples.ids.size()));
  return s;
}

train::PaddedBatch fill(const train::MlmSplit& s, const std::vector<int64_t>& ex) {
  train::PaddedBatch pb;
  train::fill_batch(s.examples, ex, 1, pb);
  return pb;
}

std::vector<int64_t> iota_rows(int64_t n) {
  std::vector<int64_t> ex(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i) ex[size_t(i)] = i;
  return ex;
}

}  // namespace

// DataCollatorForWholeWordMask: whole words only, max(1, round(len·p)) tokens a row (Python's
// round: half to even), the 80/10/10 after.
TEST(WholeWordMask, ChoosesWholeWordsUpToTheBudgetThenEightyTenTen) {
  const std::vector<int> lengths = {1, 3, 2, 1, 4, 1, 2, 1, 1, 3, 2, 1, 1, 1};  // 24 tokens + <s> </s> = 26
  const int64_t rows = 3000;
  const train::MlmSplit s = word_split(rows, lengths);
  const std::vector<int64_t> ex = iota_rows(rows);
  train::PaddedBatch pb = fill(s, ex);
  const train::PaddedBatch orig = pb;
  std::vector<int32_t> labels;
  const int64_t masked = train::mask_split_batch(masking(), 42, 5, ex, s, pb, labels);
  const int64_t T = pb.T;
  const int64_t budget = 4;  // round(26 · 0.15 = 3.9)
  MaskTally tally;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t masked_before = tally.masked;
    size_t t = 1;  // after <s>
    EXPECT_EQ(labels[size_t(r * T)], -100);
    EXPECT_EQ(labels[size_t(r * T + 25)], -100);
    for (int n : lengths) {
      int chosen = 0;
      for (int k = 0; k < n; ++k) chosen += labels[size_t(r * T) + t + size_t(k)] != -100;
      EXPECT_TRUE(chosen == 0 || chosen == n) << "row " << r << " splits a word of " << n;
      for (int k = 0; k < n; ++k, ++t) {
        const size_t i = size_t(r * T) + t;
        tally.add(labels[i], pb.ids[i], orig.ids[i]);
      }
    }
    // Single-token words are always there to top the budget up: it is met exactly.
    EXPECT_EQ(tally.masked - masked_before, budget) << "row " << r;
  }
  EXPECT_EQ(masked, tally.masked);
  // 12,000 masked tokens: binomial sd of the 80% share is 0.37 points; bars at ~8 sd.
  tally.expect_eighty_ten_ten();
}

TEST(WholeWordMask, AWordThatWouldOvershootIsSkippedNotCut) {
  // Words of 3 and 1 tokens, budget round(12 · 0.5) = 6. A 3-token word is masked whole or not
  // at all; the row never goes over the budget; when the four 1-token words come first (4), both
  // 3-token words are skipped (7 > 6) and the row stays under it, as HF's loop does.
  const std::vector<int> lengths = {3, 1, 3, 1, 1, 1};  // 10 tokens + 2 = 12
  const int64_t rows = 4000;
  const train::MlmSplit s = word_split(rows, lengths);
  train::MlmMasking m = masking();
  m.mlm_probability = 0.5;
  const std::vector<int64_t> ex = iota_rows(rows);
  train::PaddedBatch pb = fill(s, ex);
  std::vector<int32_t> labels;
  train::mask_split_batch(m, 7, 0, ex, s, pb, labels);
  int64_t long_words = 0, short_words = 0, rows_of_four = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* l = labels.data() + r * pb.T;
    for (int first : {1, 5}) {
      const int n = (l[first] != -100) + (l[first + 1] != -100) + (l[first + 2] != -100);
      EXPECT_TRUE(n == 0 || n == 3) << "row " << r;
      long_words += n == 3;
    }
    for (int t : {4, 8, 9, 10}) short_words += l[t] != -100;
    int64_t n = 0;
    for (int64_t t = 0; t < pb.T; ++t) n += l[t] != -100;
    EXPECT_TRUE(n == 6 || n == 4) << "row " << r << ": " << n;
    rows_of_four += n == 4;
  }
  // Four 1-token words before any 3-token one: 4!·2!/6! = 1/15 of the orders (267 of 4,000 rows
  // expected; sd 16).
  EXPECT_NEAR(double(rows_of_four), 4000.0 / 15, 80);
  EXPECT_GT(long_words, 2000);
  EXPECT_GT(short_words, 4000);
}

TEST(WholeWordMask, BudgetRoundsHalfToEvenAndIsAtLeastOne) {
  train::MlmMasking m = masking();
  auto count = [&](const std::vector<int>& lengths, double p) {
    m.mlm_probability = p;
    const train::MlmSplit s = word_split(1, lengths);
    const std::vector<int64_t> ex = {0};
    train::PaddedBatch pb = fill(s, ex);
    std::vector<int32_t> labels;
    return train::mask_split_batch(m, 3, 0, ex, s, pb, labels);
  };
  const std::vector<int> eight(8, 1), eighteen(18, 1), one(1, 1);
  EXPECT_EQ(count(eight, 0.15), 2);      // 10 · 0.15 = 1.5 -> 2
  EXPECT_EQ(count(eighteen, 0.25), 5);   // 20 · 0.25 = 5
  EXPECT_EQ(count(eighteen, 0.125), 2);  // 20 · 0.125 = 2.5 -> 2 (half to even)
  EXPECT_EQ(count(one, 0.15), 1);        // 3 · 0.15 = 0.45 -> 0, at least 1
}

TEST(WholeWordMask, MasksDependOnSeedStepAndExampleOnly) {
  const std::vector<int> lengths = {2, 1, 3, 1, 2, 1, 1, 2, 1, 1, 3, 1, 1, 2, 1, 1, 1, 2, 1};
  const train::MlmSplit s = word_split(10, lengths);
  const std::vector<int64_t> ex = {5, 9, 1, 7};
  train::PaddedBatch a = fill(s, ex), b = fill(s, ex), c = fill(s, ex);
  std::vector<int32_t> l1, l2, l3;
  train::mask_split_batch(masking(), 42, 3, ex, s, a, l1);
  train::mask_split_batch(masking(), 42, 3, ex, s, b, l2);
  train::mask_split_batch(masking(), 42, 4, ex, s, c, l3);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_NE(l1, l3);
  const std::vector<int64_t> just9 = {9};
  train::PaddedBatch one = fill(s, just9);
  std::vector<int32_t> lone;
  train::mask_split_batch(masking(), 42, 3, just9, s, one, lone);
  EXPECT_TRUE(std::equal(lone.begin(), lone.end(), l1.begin() + a.T));
}

// Words from the text's whitespace, for a byte-level BPE (roberta-base's) and a SentencePiece
// Unigram (the demo's) tokenizer: one start per whitespace-delimited word.
TEST(WholeWordMask, WordStartsFollowTheTextsWhitespace) {
  const std::vector<std::string> texts = {"Covid cases are increasing fast!", "  lol   #blessed 😂😂 @user wtf?!",
                                          "supercalifragilistic antidisestablishmentarianism",
                                          "x\xff y"};  // invalid UTF-8 repaired as encode() does
  const std::vector<std::string> words_expected = {"5", "5", "2", "2"};
  for (const std::string& dir :
       {std::string(RC_TEST_DATA_DIR) + "/tiny", std::string(RC_SOURCE_DIR) + "/assets/tokenizer/tweets-unigram-8k"}) {
    SCOPED_TRACE(dir);
    auto tok = Tokenizer::from_dir(dir);
    for (const bool group : {false, true}) {
      const train::TokenizedSplit split = train::mlm_examples(*tok, texts, group ? 4 : 64, group);
      const std::vector<uint8_t> starts = train::mlm_word_starts(*tok, texts, group ? 4 : 64, group, split);
      ASSERT_EQ(starts.size(), split.ids.size());
      if (group) {
        for (int64_t b = 0; b < split.size(); ++b) EXPECT_EQ(starts[size_t(split.offsets[size_t(b)])], 1);
        continue;
      }
      for (size_t i = 0; i < texts.size(); ++i) {
        SCOPED_TRACE(texts[i]);
        int words = 0;
        // A token of spaces alone (byte-level BPE's "Ġ" for a run of them) is a word of its own.
        for (int64_t t = split.offsets[i] + 1; t + 1 < split.offsets[i + 1]; ++t) {
          const std::string piece = tok->decode(std::span<const int32_t>(&split.ids[size_t(t)], 1));
          words += starts[size_t(t)] && piece.find_first_not_of(" ") != std::string::npos;
        }
        EXPECT_EQ(std::to_string(words), words_expected[i]);
      }
    }
  }
}
