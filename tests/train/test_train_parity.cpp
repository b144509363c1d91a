// The trainer's optimizer step against the PyTorch reference (tests/data/tiny/golden.safetensors,
// tools/make_golden.py): 20 steps of forward + backward + clip + AdamW + linear warmup
// schedule on fixed batches, dropout off. fp32 within 1e-5 abs per step loss (the issue's
// bar); bf16 GEMMs against torch.autocast bf16 within a measured tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "kernels/cpu/onednn_matmul.h"
#include "device/cpu_isa.h"
#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "support/files.h"
#include "support/golden_optim.h"
#include "train/train_step.h"

namespace fs = std::filesystem;
using namespace rc;

namespace {

using rc::test::kTiny;

struct GoldenStep {
  int64_t B = 0, T = 0;
  std::vector<int32_t> ids, lens, labels;
};

std::vector<int64_t> i64(const io::TensorSource& src, const std::string& name) {
  const auto* info = src.find(name);
  EXPECT_NE(info, nullptr) << name;
  EXPECT_EQ(info->dtype, DType::i64) << name;
  auto bytes = src.data(name);
  std::vector<int64_t> v(size_t(info->numel()));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}
std::vector<float> f32(const io::TensorSource& src, const std::string& name) {
  const auto* info = src.find(name);
  EXPECT_NE(info, nullptr) << name;
  auto bytes = src.data(name);
  std::vector<float> v(size_t(info->numel()));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

GoldenStep golden_step(const io::TensorSource& src, int s) {
  const std::string p = "train." + std::to_string(s) + ".";
  const auto* info = src.find(p + "input_ids");
  GoldenStep g;
  g.B = info->shape[0];
  g.T = info->shape[1];
  for (int64_t v : i64(src, p + "input_ids")) g.ids.push_back(int32_t(v));
  const auto mask = i64(src, p + "attention_mask");
  for (int64_t b = 0; b < g.B; ++b) {
    int32_t n = 0;
    for (int64_t t = 0; t < g.T; ++t) n += int32_t(mask[size_t(b * g.T + t)]);
    g.lens.push_back(n);
  }
  for (int64_t v : i64(src, p + "labels")) g.labels.push_back(int32_t(v));
  return g;
}

struct Curve {
  std::vector<double> loss, lr, norm;
  std::unique_ptr<model::RobertaModel> model;
};

Curve run_golden_curve(kernels::MatmulPrecision precision) {
  auto src = io::open_safetensors(kTiny / "golden.safetensors");
  const auto& meta = src->metadata();
  EXPECT_EQ(meta.at("fixture_version"), "1") << "HINT: /usr/bin/python3 tools/make_golden.py";
  Curve c;
  c.model = model::load_checkpoint(kTiny, {});
  const int steps = std::stoi(meta.at("train_steps"));
  const train::OptimConfig oc = test::golden_optim([&](const char* k) { return meta.at(k); }, steps);
  kernels::ExecCtx ctx;
  ctx.matmul_precision = precision;
  train::TrainEngine engine(*c.model, oc, ctx, model::DropoutConfig{}, /*seed=*/0, 4, 128);
  for (int s = 0; s < steps; ++s) {
    const GoldenStep g = golden_step(*src, s);
    const model::Batch b{g.B, g.T, g.ids.data(), g.lens.data(), nullptr};
    const int32_t* labels = g.labels.data();
    const auto r = engine.step(std::span(&b, 1), std::span(&labels, 1));
    c.loss.push_back(r.loss);
    c.lr.push_back(r.lr);
    c.norm.push_back(r.grad_norm);
  }
  return c;
}

}  // namespace

TEST(TrainParity, DecayGroupsAreHfs) {
  auto m = model::load_checkpoint(kTiny, {});
  for (const auto& e : m->layout().entries()) {
    const bool hf_no_decay =
        e.name.find("bias") != std::string::npos || e.name.find("LayerNorm.weight") != std::string::npos;
    EXPECT_EQ(e.decay, !hf_no_decay) << e.name;
  }
  const auto segs = train::adamw_segments(m->layout(), true);
  int64_t covered = 0;
  for (const auto& s : segs) covered += s.n;
  EXPECT_EQ(covered, m->num_params());
  EXPECT_EQ(train::adamw_segments(m->layout(), false).size(), 1u);
}

TEST(TrainParity, Fp32TwentyStepsMatchPyTorch) {
  auto src = io::open_safetensors(kTiny / "golden.safetensors");
  const auto want_loss = f32(*src, "train_losses_fp32");
  const auto want_lr = f32(*src, "train_lrs");
  const auto want_norm = f32(*src, "train_grad_norms");
  Curve c = run_golden_curve(kernels::MatmulPrecision::fp32);
  double max_loss = 0, max_norm_rel = 0;
  for (size_t s = 0; s < want_loss.size(); ++s) {
    max_loss = std::max(max_loss, std::fabs(c.loss[s] - want_loss[s]));
    max_norm_rel = std::max(max_norm_rel, std::fabs(c.norm[s] - want_norm[s]) / want_norm[s]);
    EXPECT_NEAR(c.loss[s], want_loss[s], 1e-5) << "step " << s;  // the bar; measured 2.4e-7
    EXPECT_NEAR(c.lr[s], want_lr[s], 1e-9) << "step " << s;
    EXPECT_NEAR(c.norm[s], want_norm[s], 1e-4 * want_norm[s]) << "step " << s;  // measured 5.4e-7 rel
  }
  std::printf("fp32 20-step curve: max |loss - torch| = %.3g, max rel grad-norm diff = %.3g\n", max_loss, max_norm_rel);
  // Final weights after 20 AdamW steps (every parameter; word embeddings: the stored rows).
  double max_w = 0;
  std::string worst;
  for (const auto& e : c.model->layout().entries()) {
    const std::string key = "train_final." + e.name;
    if (!src->find(key)) continue;
    // The key bias has a zero true gradient (it shifts every score of a query row by the same
    // amount, and softmax ignores that), so both sides step on rounding noise that AdamW
    // normalises to +-lr: its values are arbitrary. Checked separately, loosely.
    if (e.name.find("attention.self.key.bias") != std::string::npos) {
      const auto want = f32(*src, key);
      auto got = c.model->param(e.name);
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 20 * 1e-3) << e.name;  // 20 steps x lr
      continue;
    }
    const auto want = f32(*src, key);
    auto got = c.model->param(e.name);
    if (e.name == "roberta.embeddings.word_embeddings.weight") {
      const auto rows = i64(*src, "train_final_word_rows");
      const int64_t C = e.shape[1];
      for (size_t r = 0; r < rows.size(); ++r)
        for (int64_t k = 0; k < C; ++k) {
          const double d = std::fabs(got[size_t(rows[r] * C + k)] - want[r * size_t(C) + size_t(k)]);
          if (d > max_w) max_w = d, worst = e.name;
        }
      continue;
    }
    ASSERT_EQ(int64_t(want.size()), e.numel) << e.name;
    for (size_t i = 0; i < want.size(); ++i) {
      const double d = std::fabs(got[i] - want[i]);
      if (d > max_w) max_w = d, worst = e.name;
    }
  }
  std::printf("fp32 final weights: max |w - torch| = %.3g (%s)\n", max_w, worst.c_str());
  EXPECT_LT(max_w, 5e-5) << worst;  // measured 6.4e-6 (word embeddings); AdamW amplifies tiny grad diffs
}

TEST(TrainParity, Bf16TwentyStepsMatchAutocast) {
  if (!cpu_has_bf16() && !kernels::cpu::onednn::bf16_runs_on_fp32_gemm())
    GTEST_SKIP() << "no AVX512-BF16 / AMX on this CPU, and oneDNN runs no fp32 GEMM for it";
  auto src = io::open_safetensors(kTiny / "golden.safetensors");
  const auto want = f32(*src, "train_losses_bf16");
  const auto want32 = f32(*src, "train_losses_fp32");
  Curve c = run_golden_curve(kernels::MatmulPrecision::bf16);
  double max_d = 0, ref_gap = 0;
  for (size_t s = 0; s < want.size(); ++s) {
    max_d = std::max(max_d, std::fabs(c.loss[s] - want[s]));
    ref_gap = std::max(ref_gap, std::fabs(double(want[s]) - want32[s]));
  }
  std::printf("bf16 20-step curve: max |loss - torch autocast| = %.3g (torch bf16 vs fp32: %.3g)\n", max_d, ref_gap);
  EXPECT_LT(max_d, 5e-3);  // measured 1.8e-3 (torch autocast itself is 1.1e-3 from fp32)
}
