// roberta pretrain end to end on the tiny checkpoint: the output is a RobertaForMaskedLM
// folder, eval loss and perplexity are reported, and a run resumed from checkpoint-3 ends with
// the same bits as the uninterrupted run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <cmath>
#include <fstream>

#include "io/atomic_file.h"
#include "model/checkpoint.h"
#include "roberta/error.h"
#include "roberta/fill_mask.h"
#include "roberta/tokenizer.h"
#include "roberta/pretrain.h"
#include "support/files.h"

namespace fs = std::filesystem;
using namespace rc;

namespace {

struct ResumeTempDir {
  fs::path path = fs::temp_directory_path() / ("rc_pretrain_" + std::to_string(::getpid()));
  ResumeTempDir() { fs::create_directories(path); }
  ~ResumeTempDir() { fs::remove_all(path); }
};

PretrainOptions options(const fs::path& data, const fs::path& out) {
  PretrainOptions o;
  o.model_dir = fs::path(RC_TEST_DATA_DIR) / "tiny";
  o.data = data;
  o.output_dir = out;
  o.max_steps = 6;
  o.batch_size = 4;
  o.max_length = 24;
  o.lr = 1e-3;
  o.warmup_steps = 2;
  o.eval_every = 3;
  o.validation_split_percentage = 20;
  o.logging_steps = 1;
  o.progress = 0;
  return o;
}

}  // namespace

TEST(PretrainResume, OutputIsMaskedLmAndResumeIsBitIdentical) {
  ResumeTempDir tmp;
  const fs::path data = tmp.path / "texts.txt";
  {
    std::ofstream f(data);
    for (int i = 0; i < 40; ++i) f << "tweet number " << i << " about covid cases and the weather #" << (i % 7) << "\n";
    f << "   \n";  // blank lines are dropped
  }
  const PretrainSummary a = pretrain(options(data, tmp.path / "a"));
  EXPECT_EQ(a.global_step, 6);
  ASSERT_TRUE(a.eval_loss.has_value());
  EXPECT_GT(*a.eval_loss, 0);
  EXPECT_NEAR(*a.perplexity, std::exp(*a.eval_loss), 1e-6 * *a.perplexity);
  EXPECT_NE(io::read_file(tmp.path / "a" / "config.json").find("RobertaForMaskedLM"), std::string::npos);
  {  // eval_results.json as run_mlm.py saves it: eval_loss, and perplexity without a prefix
    const auto r = nlohmann::json::parse(io::read_file(tmp.path / "a" / "eval_results.json"));
    EXPECT_EQ(r.at("eval_loss").get<double>(), *a.eval_loss);
    EXPECT_NEAR(r.at("perplexity").get<double>(), *a.perplexity, 1e-9 * *a.perplexity);
  }
  ASSERT_TRUE(fs::exists(tmp.path / "a" / "checkpoint-3" / "optimizer.safetensors"));

  // Resume from checkpoint-3 in a fresh folder.
  rc::test::copy_checkpoint(tmp.path / "a", tmp.path / "b", 3);
  PretrainOptions ob = options(data, tmp.path / "b");
  ob.resume = true;
  const PretrainSummary b = pretrain(ob);
  EXPECT_EQ(b.global_step, 6);
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::masked_lm;
  auto ma = model::load_checkpoint(tmp.path / "a", lo), mb = model::load_checkpoint(tmp.path / "b", lo);
  ASSERT_EQ(ma->num_params(), mb->num_params());
  EXPECT_TRUE(std::equal(ma->params(), ma->params() + ma->num_params(), mb->params())) << "resume is not bit-identical";
  EXPECT_EQ(*a.eval_loss, *b.eval_loss);

  // Other flags than the checkpoint's are refused.
  rc::test::copy_checkpoint(tmp.path / "a", tmp.path / "c", 3);
  PretrainOptions oc = options(data, tmp.path / "c");
  oc.resume = true;
  oc.lr = 2e-3;
  EXPECT_THROW(pretrain(oc), Error);
}

// --whole-word-mask: its own masks (other weights than token masking's), a bit-identical
// resume, and part of the run's identity: a checkpoint of the other masking is not resumed.
TEST(PretrainResume, WholeWordMaskResumesBitIdenticallyAndIsPartOfTheRun) {
  ResumeTempDir tmp;
  const fs::path data = tmp.path / "texts.txt";
  {
    std::ofstream f(data);
    for (int i = 0; i < 40; ++i)
      f << "supercalifragilistic tweet " << i << " antidisestablishment #covid" << (i % 7) << "\n";
  }
  PretrainOptions oa = options(data, tmp.path / "a");
  oa.whole_word_mask = true;
  const PretrainSummary a = pretrain(oa);
  EXPECT_EQ(a.global_step, 6);
  const PretrainSummary plain = pretrain(options(data, tmp.path / "plain"));
  ASSERT_TRUE(a.eval_loss && plain.eval_loss);
  EXPECT_NE(*a.eval_loss, *plain.eval_loss);

  rc::test::copy_checkpoint(tmp.path / "a", tmp.path / "b", 3);
  PretrainOptions ob = options(data, tmp.path / "b");
  ob.whole_word_mask = true;
  ob.resume = true;
  const PretrainSummary b = pretrain(ob);
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::masked_lm;
  auto ma = model::load_checkpoint(tmp.path / "a", lo), mb = model::load_checkpoint(tmp.path / "b", lo),
       mp = model::load_checkpoint(tmp.path / "plain", lo);
  EXPECT_TRUE(std::equal(ma->params(), ma->params() + ma->num_params(), mb->params())) << "resume is not bit-identical";
  EXPECT_FALSE(std::equal(ma->params(), ma->params() + ma->num_params(), mp->params()));
  EXPECT_EQ(*a.eval_loss, *b.eval_loss);

  // Resuming the whole-word run without the flag, or the plain run with it, is refused.
  for (const auto& [from, wwm] : {std::pair{"a", false}, std::pair{"plain", true}}) {
    const fs::path dir = tmp.path / (std::string("c-") + from);
    rc::test::copy_checkpoint(tmp.path / from, dir, 3);
    PretrainOptions oc = options(data, dir);
    oc.whole_word_mask = wwm;
    oc.resume = true;
    EXPECT_THROW(pretrain(oc), Error) << from;
  }
}

TEST(PretrainResume, FillMaskOnThePretrainedFolder) {
  ResumeTempDir tmp;
  const fs::path data = tmp.path / "texts.txt";
  {
    std::ofstream f(data);
    for (int i = 0; i < 20; ++i) f << "the cat sat on the mat " << i << "\n";
  }
  PretrainOptions o = options(data, tmp.path / "m");
  o.max_steps = 2;
  pretrain(o);
  const auto fm = FillMasker::load(tmp.path / "m");
  const auto res = fm->fill("the cat <mask> on the <mask>", 3);
  ASSERT_EQ(res.size(), 2u);  // one list per <mask>
  const auto tok = Tokenizer::from_dir(tmp.path / "m");
  for (const auto& cands : res) {
    ASSERT_EQ(cands.size(), 3u);
    double sum = 0;
    for (size_t k = 0; k < cands.size(); ++k) {
      if (k) {
        EXPECT_GE(cands[k - 1].score, cands[k].score);
      }
      const int32_t id[] = {cands[k].token};
      EXPECT_EQ(cands[k].token_str, tok->decode(id));  // the pipeline's decode([id])
      // Several masks: the others stay, specials are not skipped (FillMaskPipeline).
      EXPECT_NE(cands[k].sequence.find("<mask>"), std::string::npos);
      EXPECT_EQ(cands[k].sequence.rfind("<s>", 0), 0u);
      sum += cands[k].score;
    }
    EXPECT_GT(sum, 0);
    EXPECT_LE(sum, 1.0 + 1e-6);
  }
  const auto single = fm->fill("the cat <mask> on the mat", 2);
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0][0].sequence.find("<s>"), std::string::npos);  // one mask: specials skipped
  EXPECT_THROW(fm->fill("no mask here"), Error);
  // A classifier folder is not a masked LM.
  EXPECT_THROW(FillMasker::load(fs::path(RC_TEST_DATA_DIR) / "tiny"), Error);
}

// --generator: ELECTRA's replaced-token detection. The output is a two-label token classifier
// (original, replaced) that `train --task text-classification` starts from; the eval loss is
// the detector's (no perplexity); resume is bit-identical; the generator is part of the run's
// identity; a generator that is not a masked LM, or has another vocabulary, is refused.
TEST(PretrainResume, ReplacedTokenDetectionWithAFrozenGenerator) {
  ResumeTempDir tmp;
  const fs::path data = tmp.path / "texts.txt";
  {
    std::ofstream f(data);
    for (int i = 0; i < 40; ++i) f << "tweet number " << i << " about covid cases and the weather #" << (i % 7) << "\n";
  }
  PretrainOptions og = options(data, tmp.path / "gen");
  og.max_steps = 2;
  pretrain(og);  // a masked-LM folder to generate with

  PretrainOptions oa = options(data, tmp.path / "a");
  oa.generator = tmp.path / "gen";
  const PretrainSummary a = pretrain(oa);
  EXPECT_EQ(a.global_step, 6);
  ASSERT_TRUE(a.eval_loss.has_value());
  EXPECT_GT(*a.eval_loss, 0);
  EXPECT_LT(*a.eval_loss, 2.0);  // two classes: ln 2 = 0.69 at chance
  EXPECT_FALSE(a.perplexity.has_value());
  const auto cfg = nlohmann::json::parse(io::read_file(tmp.path / "a" / "config.json"));
  EXPECT_EQ(cfg.at("architectures").at(0).get<std::string>(), "RobertaForTokenClassification");
  EXPECT_EQ(cfg.at("id2label").at("0").get<std::string>(), "original");
  EXPECT_EQ(cfg.at("id2label").at("1").get<std::string>(), "replaced");
  {
    const auto r = nlohmann::json::parse(io::read_file(tmp.path / "a" / "eval_results.json"));
    EXPECT_EQ(r.at("eval_loss").get<double>(), *a.eval_loss);
    EXPECT_TRUE(r.contains("eval_replaced_f1")) << r.dump();
  }

  rc::test::copy_checkpoint(tmp.path / "a", tmp.path / "b", 3);
  PretrainOptions ob = oa;
  ob.output_dir = tmp.path / "b";
  ob.resume = true;
  const PretrainSummary b = pretrain(ob);
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::token_classifier;
  auto ma = model::load_checkpoint(tmp.path / "a", lo), mb = model::load_checkpoint(tmp.path / "b", lo);
  ASSERT_EQ(ma->num_params(), mb->num_params());
  EXPECT_TRUE(std::equal(ma->params(), ma->params() + ma->num_params(), mb->params())) << "resume is not bit-identical";
  EXPECT_EQ(*a.eval_loss, *b.eval_loss);

  // Resuming it as masked LM is refused.
  rc::test::copy_checkpoint(tmp.path / "a", tmp.path / "c", 3);
  PretrainOptions oc = options(data, tmp.path / "c");
  oc.resume = true;
  EXPECT_THROW(pretrain(oc), Error);

  // A classifier is no generator; nor is a masked LM with another vocabulary.
  PretrainOptions od = options(data, tmp.path / "d");
  od.generator = fs::path(RC_TEST_DATA_DIR) / "tiny";
  EXPECT_THROW(pretrain(od), Error);
  EXPECT_FALSE(fs::exists(tmp.path / "d" / "model.safetensors"));
  {
    auto j = nlohmann::json::parse(io::read_file(tmp.path / "gen" / "config.json"));
    j["vocab_size"] = j.at("vocab_size").get<int64_t>() + 8;
    fs::create_directories(tmp.path / "gen-other");
    for (const auto& e : fs::directory_iterator(tmp.path / "gen"))
      if (e.is_regular_file()) fs::copy(e.path(), tmp.path / "gen-other" / e.path().filename());
    std::ofstream(tmp.path / "gen-other" / "config.json") << j.dump();
  }
  od.generator = tmp.path / "gen-other";
  EXPECT_THROW(pretrain(od), Error);
}
