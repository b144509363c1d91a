// FillMaskPipeline's `targets` (transformers/pipelines/fill_mask.py, get_target_ids and
// postprocess): the candidates are the targets' ids, scored by their softmax probability over
// the WHOLE vocabulary (not renormalised), best first, top_k capped at their count. The oracle
// is the untargeted answer over every token: the targeted list must be its restriction.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "core/check.h"
#include "roberta/fill_mask.h"
#include "roberta/tokenizer.h"

namespace {

namespace fs = std::filesystem;

struct TinyMlm : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("rc_fill_targets_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path src = RC_SOURCE_DIR;
    for (const char* f : {"config.json", "model.safetensors"})
      fs::copy_file(src / "assets/pretrained/tweets-tiny-mlm" / f, dir / f);
    for (const char* f : {"vocab.json", "merges.txt"})
      fs::copy_file(src / "assets/tokenizer/roberta-base" / f, dir / f);
  }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(TinyMlm, TargetsRestrictTheWholeVocabularyAnswer) {
  auto fm = rc::FillMasker::load(dir);
  auto tok = rc::Tokenizer::from_dir(dir);
  const std::string text = "I feel so <mask> today";
  const auto all = fm->fill(text, 1000000)[0];  // every token, best first
  std::map<int32_t, float> score_of;
  for (const auto& c : all) score_of[c.token] = c.score;

  // In the vocabulary as written ("Ġhappy"), and not ("happy" is its own token too; " sad"
  // is not a vocabulary string: its first token, "Ġsad", stands in; "Ġhappy" repeated once).
  const std::vector<std::string> targets = {"Ġhappy", "happy", " sad", "Ġhappy", "zzzzqqq"};
  std::vector<int32_t> want_ids = {tok->token_to_id("Ġhappy"), tok->token_to_id("happy"), tok->encode(" sad", false)[0],
                                   tok->encode("zzzzqqq", false)[0]};
  ASSERT_EQ(tok->id_to_token(want_ids[2]), "Ġsad");
  std::sort(want_ids.begin(), want_ids.end());
  want_ids.erase(std::unique(want_ids.begin(), want_ids.end()), want_ids.end());
  ASSERT_EQ(want_ids.size(), 4u);

  const auto got = fm->fill(text, 10, targets)[0];
  ASSERT_EQ(got.size(), 4u);  // top_k 10 capped at the 4 distinct targets
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_TRUE(std::binary_search(want_ids.begin(), want_ids.end(), got[k].token)) << got[k].token;
    EXPECT_EQ(got[k].score, score_of.at(got[k].token)) << "the probability over the whole vocabulary";
    if (k) {
      EXPECT_GE(got[k - 1].score, got[k].score);
    }
  }
  // The untargeted answer's order, restricted to the targets, is the targeted answer.
  std::vector<int32_t> restricted;
  for (const auto& c : all)
    if (std::binary_search(want_ids.begin(), want_ids.end(), c.token)) restricted.push_back(c.token);
  for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k].token, restricted[k]);
  const auto two = fm->fill(text, 2, targets)[0];
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].token, restricted[0]);
  EXPECT_EQ(two[1].token, restricted[1]);
  EXPECT_EQ(two[0].sequence, got[0].sequence);

  // A target that tokenizes to nothing is skipped; none left is an error, as HF's ValueError.
  EXPECT_EQ(fm->fill(text, 5, {"", "Ġhappy"})[0].size(), 1u);
  try {
    fm->fill(text, 5, {""});
    ADD_FAILURE() << "no usable target accepted";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("At least one target"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fm->fill(text, 5, std::vector<std::string>(rc::FillMasker::max_targets + 1, "a")), rc::Error);
}

}  // namespace
