// `roberta pretrain` on BERT's and DistilBERT's masked-LM checkpoints (with a WordPiece
// tokenizer, [MASK] as the mask): a few steps run, and the output is the family's own
// *ForMaskedLM folder in HF's names (cls.predictions.* / vocab_transform, vocab_layer_norm,
// vocab_projector; no RoBERTa lm_head.*) that fill-mask loads. The head's math against
// PyTorch is tests/model/test_family_golden.cpp and test_family_train_parity.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/tensor_source.h"
#include "roberta/fill_mask.h"
#include "roberta/pretrain.h"

namespace fs = std::filesystem;
using namespace rc;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("rc_family_pretrain_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

struct FamilyCase {
  const char* dir;
  const char* architecture;
  const char* head_tensor;
};

TEST(FamilyPretrain, BertAndDistilBertSaveTheirOwnMaskedLmFolders) {
  TempDir tmp;
  const fs::path data = tmp.path / "texts.txt";
  {
    std::ofstream f(data);
    for (int i = 0; i < 8; ++i)
      f << "the man plays the guitar in the park " << i << "\nhello world, the dog runs and someone is playing music\n";
  }
  for (const FamilyCase& c : {FamilyCase{"bert-mlm-fill", "BertForMaskedLM", "cls.predictions.bias"},
                              FamilyCase{"distilbert-mlm-fill", "DistilBertForMaskedLM", "vocab_projector.bias"}}) {
    PretrainOptions o;
    o.model_dir = fs::path(RC_TEST_DATA_DIR) / "tiny_families" / c.dir;
    o.data = data;
    o.output_dir = tmp.path / c.dir;
    o.max_steps = 2;
    o.batch_size = 4;
    o.max_length = 16;
    o.validation_split_percentage = 25;
    o.progress = 0;
    const PretrainSummary s = pretrain(o);
    EXPECT_EQ(s.global_step, 2) << c.dir;
    EXPECT_TRUE(std::isfinite(s.train_loss) && s.train_loss > 0) << c.dir;
    ASSERT_TRUE(s.eval_loss) << c.dir;
    EXPECT_TRUE(std::isfinite(*s.eval_loss)) << c.dir;

    std::ifstream cf(o.output_dir / "config.json");
    const auto config = nlohmann::json::parse(cf);
    EXPECT_EQ(config.at("architectures"), nlohmann::json::array({c.architecture})) << c.dir;
    const auto weights = io::open_safetensors(o.output_dir / "model.safetensors");
    EXPECT_TRUE(weights->find(c.head_tensor)) << c.dir;
    for (const auto& t : weights->tensors()) EXPECT_FALSE(t.name.starts_with("lm_head.")) << c.dir << ": " << t.name;
    const auto filled = FillMasker::load(o.output_dir)->fill("the man [MASK] the guitar.", 3);
    ASSERT_EQ(filled.size(), 1u) << c.dir;
    EXPECT_EQ(filled[0].size(), 3u) << c.dir;
  }
}

}  // namespace
