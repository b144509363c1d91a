// ELECTRA's corruption with a frozen generator (train/replaced_tokens.h): the draw follows the
// generator's softmax, only chosen positions change, labels say exactly which tokens differ,
// special tokens are never drawn, and the draws are a function of (seed, step, example).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "roberta/tokenizer.h"
#include "train/replaced_tokens.h"

using namespace rc;
using namespace rc::train;

namespace {

std::shared_ptr<model::RobertaModel> tiny_generator() {
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::masked_lm;
  lo.init_head = true;  // tests/data/tiny is a classifier: a fresh lm_head
  lo.seed = 7;
  return model::load_checkpoint(std::string(RC_TEST_DATA_DIR) + "/tiny", lo);
}

struct RtdFixture {
  std::unique_ptr<Tokenizer> tok = Tokenizer::from_dir(std::string(RC_TEST_DATA_DIR) + "/tiny");
  std::vector<std::string> texts{"covid cases are increasing fast in the city today", "i love this phone",
                                 "the weather is bad and the trains are late again this morning", "ok"};
  MlmSplit split{mlm_examples(*tok, texts, 32, false), {}};
  std::vector<int64_t> idx{0, 1, 2, 3};
  PaddedBatch batch(int32_t pad) const {
    PaddedBatch pb;
    pb.reserve(4, 32);
    fill_batch(split.examples, idx, pad, pb);
    return pb;
  }
};

}  // namespace

TEST(SampleFromLogits, FollowsTheSoftmaxOfTheAllowedIds) {
  const std::vector<float> logits{0.f, 1.f, 2.f, 50.f, -1.f};
  const std::vector<uint8_t> allowed{1, 1, 1, 0, 1};  // id 3 would take all the mass
  double z = 0;
  for (size_t v = 0; v < logits.size(); ++v)
    if (allowed[v]) z += std::exp(double(logits[v]));
  // u on an even grid: each id's share of the grid is its probability, to 1/N.
  const int N = 100000;
  std::vector<int> count(logits.size(), 0);
  for (int i = 0; i < N; ++i) ++count[size_t(sample_from_logits(logits, allowed, (i + 0.5) / N))];
  EXPECT_EQ(count[3], 0);
  for (size_t v = 0; v < logits.size(); ++v)
    if (allowed[v]) {
      EXPECT_NEAR(double(count[v]) / N, std::exp(double(logits[v])) / z, 2.0 / N) << v;
    }
  EXPECT_EQ(sample_from_logits(logits, allowed, 0.0), 0);
  EXPECT_EQ(sample_from_logits(logits, allowed, std::nextafter(1.0, 0.0)), 4);  // the last allowed
}

TEST(TokenReplacer, ChangesOnlyChosenPositionsAndLabelsEveryDifference) {
  RtdFixture f;
  auto gen = tiny_generator();
  const MlmMasking masking = MlmMasking::for_tokenizer(*f.tok, 0.3);
  TokenReplacer r(gen, masking, 42, 4, 32);
  const int32_t pad = gen->config().pad_token_id;
  const PaddedBatch orig = f.batch(pad);
  PaddedBatch pb = f.batch(pad);
  std::vector<int32_t> labels;
  const int64_t replaced = r.corrupt(5, f.idx, f.split, pb, labels);

  // The masked-LM collator's choice for the same (seed, step, examples).
  PaddedBatch masked = f.batch(pad);
  std::vector<int32_t> mlm_labels;
  mask_split_batch(masking, 42, 5, f.idx, f.split, masked, mlm_labels);

  int64_t differing = 0, chosen = 0;
  ASSERT_EQ(labels.size(), size_t(pb.B * pb.T));
  for (int64_t b = 0; b < pb.B; ++b)
    for (int64_t t = 0; t < pb.T; ++t) {
      const size_t p = size_t(b * pb.T + t);
      if (t >= pb.seq_lens[size_t(b)]) {
        EXPECT_EQ(labels[p], -100);
        EXPECT_EQ(pb.ids[p], pad);
        continue;
      }
      const bool was_chosen = mlm_labels[p] != -100;
      chosen += was_chosen;
      if (!was_chosen) {
        EXPECT_EQ(pb.ids[p], orig.ids[p]) << b << "," << t;
      }
      EXPECT_EQ(labels[p], pb.ids[p] != orig.ids[p] ? kReplacedToken : kOriginalToken);
      differing += pb.ids[p] != orig.ids[p];
      for (int32_t s : masking.special_ids)
        if (was_chosen) {
          EXPECT_NE(pb.ids[p], s) << "a special token was drawn";
        }
    }
  EXPECT_EQ(replaced, differing);
  EXPECT_GT(chosen, 0);
  EXPECT_GT(differing, 0);  // a random generator over the whole vocabulary rarely draws the original

  // The same (seed, step, examples) corrupt the same way; another step differently.
  PaddedBatch again = f.batch(pad);
  std::vector<int32_t> labels2;
  r.corrupt(5, f.idx, f.split, again, labels2);
  EXPECT_EQ(again.ids, pb.ids);
  EXPECT_EQ(labels2, labels);
  PaddedBatch other = f.batch(pad);
  r.corrupt(6, f.idx, f.split, other, labels2);
  EXPECT_NE(other.ids, pb.ids);
}

TEST(TokenReplacer, DrawsFromTheGeneratorsDistribution) {
  // A generator whose decoder bias puts all the mass on one ordinary token, save what it puts on
  // a special token: every chosen position becomes the ordinary one.
  RtdFixture f;
  auto gen = tiny_generator();
  int32_t favourite = f.tok->token_to_id("the");
  if (favourite < 0) favourite = 100;
  std::span<float> bias = gen->param("lm_head.bias");
  ASSERT_GT(bias.size(), size_t(favourite));
  bias[size_t(favourite)] = 1000.f;
  bias[size_t(f.tok->eos_id())] = 2000.f;  // more still on </s>, which may never be drawn
  const MlmMasking masking = MlmMasking::for_tokenizer(*f.tok, 0.3);
  TokenReplacer r(gen, masking, 1, 4, 32);
  const int32_t pad = gen->config().pad_token_id;
  PaddedBatch pb = f.batch(pad), masked = f.batch(pad);
  std::vector<int32_t> labels, mlm_labels;
  r.corrupt(0, f.idx, f.split, pb, labels);
  mask_split_batch(masking, 1, 0, f.idx, f.split, masked, mlm_labels);
  int64_t chosen = 0;
  for (size_t p = 0; p < mlm_labels.size(); ++p)
    if (mlm_labels[p] != -100) {
      ++chosen;
      EXPECT_EQ(pb.ids[p], favourite);
    }
  EXPECT_GT(chosen, 0);
}
