// HF Trainer's AdamW steps (dropout off) for every encoder family × head against the PyTorch
// reference (tests/data/tiny_families/<case>/golden.safetensors, tools/make_golden_families.py):
// the loss, learning rate and gradient norm of each step through train::TrainEngine, token
// types included (BERT). The forward, loss and gradients themselves are
// tests/model/test_family_golden.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "support/golden_optim.h"
#include "train/train_step.h"

namespace fs = std::filesystem;
using namespace rc;

namespace {

const fs::path kRoot = fs::path(RC_TEST_DATA_DIR) / "tiny_families";

class FamilyTrainParity : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyTrainParity, AdamWStepsMatchPyTorch) {
  const fs::path dir = kRoot / GetParam();
  const auto g = io::open_safetensors(dir / "golden.safetensors");
  auto i32 = [&](const std::string& n) {
    const io::TensorInfo* t = g->find(n);
    EXPECT_TRUE(t && t->dtype == DType::i32) << n;
    std::vector<int32_t> v(size_t(t->numel()));
    std::memcpy(v.data(), g->data(n).data(), v.size() * sizeof(int32_t));
    return v;
  };
  auto f32 = [&](const std::string& n) {
    const io::TensorInfo* t = g->find(n);
    EXPECT_TRUE(t) << n;
    std::vector<float> v(size_t(t->numel()));
    io::convert_to_f32(t->dtype, g->data(n), v.data(), t->numel());
    return v;
  };
  auto meta = [&](const char* k) { return g->metadata().at(k); };
  model::CheckpointLoadOptions o;
  o.head = model::checkpoint_head_kind(dir);
  auto m = model::load_checkpoint(dir, o);
  const int steps = std::stoi(meta("steps"));
  train::TrainEngine engine(*m, test::golden_optim(meta, steps), kernels::ExecCtx{}, model::DropoutConfig{}, 0, 4, 16);
  const auto want_loss = f32("train.losses"), want_lr = f32("train.lrs"), want_norm = f32("train.grad_norms");
  ASSERT_EQ(int(want_loss.size()), steps);
  double worst = 0;
  for (int s = 0; s < steps; ++s) {
    const std::string p = "train." + std::to_string(s) + ".";
    const auto ids = i32(p + "input_ids"), mask = i32(p + "attention_mask"), labels = i32(p + "labels");
    const io::TensorInfo* info = g->find(p + "input_ids");
    const int64_t B = info->shape[0], T = info->shape[1];
    std::vector<int32_t> lens, types;
    for (int64_t b = 0; b < B; ++b)
      lens.push_back(int32_t(std::count(mask.begin() + b * T, mask.begin() + (b + 1) * T, 1)));
    if (g->find(p + "token_type_ids")) types = i32(p + "token_type_ids");
    const model::Batch batch{B, T, ids.data(), lens.data(), types.empty() ? nullptr : types.data()};
    const model::Targets target(labels.data());
    const auto r = engine.step(std::span(&batch, 1), std::span(&target, 1));
    EXPECT_NEAR(r.loss, want_loss[size_t(s)], 1e-5 * std::max(1.0f, want_loss[size_t(s)])) << "step " << s;
    EXPECT_NEAR(r.lr, want_lr[size_t(s)], 1e-9) << "step " << s;
    EXPECT_NEAR(r.grad_norm, want_norm[size_t(s)], 1e-4 * want_norm[size_t(s)]) << "step " << s;
    worst = std::max(worst, std::fabs(r.loss - want_loss[size_t(s)]) / std::max(1.0f, want_loss[size_t(s)]));
  }
  std::printf("%s: max |loss - torch| / max(1, loss) over %d steps = %.3g\n", GetParam().c_str(), steps, worst);
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyTrainParity,
                         ::testing::Values("bert-seq", "bert-token", "bert-mlm", "distilbert-seq", "distilbert-token",
                                           "distilbert-mlm", "xlm-roberta-seq", "camembert-mlm", "bert-seq-gelu_new",
                                           "distilbert-token-relu", "bert-mlm-gelu_new", "distilbert-mlm-relu"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
