// The training workspace that saves the encoder GEMMs' inputs in bf16 (TrainWorkspace made with
// a bf16 context, model/roberta_model.h) against one that saves them in fp32, both run with bf16
// GEMMs: the GEMMs round their inputs to bf16 anyway, so the loss, the logits and every gradient
// must agree BIT FOR BIT. A bf16 copy written from the wrong rows (a layer's x_in slot taken by
// the next layer, a stale attention context, the GELU of another layer) breaks it at once.
// Classifier and masked-LM heads, with dropout, with and without the weights' bf16 copy.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "model/bf16_weights.h"
#include "model/checkpoint.h"
#include "model/mlm_head.h"
#include "model/roberta_model.h"
#include "roberta/error.h"

using namespace rc;
namespace fs = std::filesystem;

namespace {

kernels::ExecCtx bf16_ctx() {
  kernels::ExecCtx ctx;
  ctx.matmul_precision = kernels::MatmulPrecision::bf16;
  return ctx;
}

struct Inputs {
  int64_t B = 4, T = 24;
  std::vector<int32_t> ids, lens{24, 10, 3, 17}, labels{0, 1, 2, 1};
  Inputs() {
    ids.assign(size_t(B * T), 1);
    for (int64_t b = 0; b < B; ++b) {
      ids[size_t(b * T)] = 0;
      for (int32_t t = 1; t + 1 < lens[size_t(b)]; ++t) ids[size_t(b * T + t)] = 100 + int32_t(b * 31 + t);
      ids[size_t(b * T + lens[size_t(b)] - 1)] = 2;
    }
  }
  model::Batch batch() const { return {B, T, ids.data(), lens.data(), nullptr}; }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(TrainBf16Activations, OnlyABf16CpuWorkspaceSavesThem) {
  auto m = model::load_checkpoint(fs::path(RC_TEST_DATA_DIR) / "tiny", {});
  EXPECT_TRUE(model::TrainWorkspace(bf16_ctx(), m->config(), 2, 8).saves_bf16_activations());
  EXPECT_FALSE(model::TrainWorkspace(kernels::ExecCtx{}, m->config(), 2, 8).saves_bf16_activations());
  EXPECT_FALSE(model::TrainWorkspace(m->config(), 2, 8).saves_bf16_activations());
}

TEST(TrainBf16Activations, ClassifierGradientsAreBitwiseThoseOfFp32SavedInputs) {
  auto m = model::load_checkpoint(fs::path(RC_TEST_DATA_DIR) / "tiny", {});
  const kernels::ExecCtx ctx = bf16_ctx();
  const Inputs in;
  const model::DropoutConfig dropout{0.1f, 0.1f, 0.1f};
  const int64_t K = m->config().num_labels();
  for (bool weight_copy : {false, true}) {
    model::Bf16WeightCopy copy(*m);
    model::TrainWorkspace ws16(ctx, m->config(), in.B, in.T), ws32(m->config(), in.B, in.T);
    ASSERT_TRUE(ws16.saves_bf16_activations());
    ASSERT_FALSE(ws32.saves_bf16_activations());
    if (weight_copy) ws16.bf16_weights = ws32.bf16_weights = &copy;
    std::vector<float> g16(size_t(m->num_params()), 0.0f), g32 = g16, l16(size_t(in.B * K)), l32 = l16;
    // Two calls: the second accumulates, and reads slots the first wrote for other layers.
    float loss16 = 0, loss32 = 0;
    for (uint64_t seed : {7u, 8u}) {
      loss16 = model::forward_backward(ctx, *m, in.batch(), in.labels.data(), dropout, seed, 0.5f, g16.data(), ws16,
                                       l16.data());
      loss32 = model::forward_backward(ctx, *m, in.batch(), in.labels.data(), dropout, seed, 0.5f, g32.data(), ws32,
                                       l32.data());
    }
    EXPECT_EQ(loss16, loss32) << "weight copy " << weight_copy;
    EXPECT_TRUE(same_bits(l16, l32)) << "weight copy " << weight_copy;
    EXPECT_TRUE(same_bits(g16, g32)) << "weight copy " << weight_copy;
    EXPECT_NE(g16, std::vector<float>(g16.size(), 0.0f));
  }
}

TEST(TrainBf16Activations, MaskedLmGradientsAreBitwiseThoseOfFp32SavedInputs) {
  model::CheckpointLoadOptions o;
  o.head = model::HeadKind::masked_lm;
  auto m = model::load_checkpoint(fs::path(RC_TEST_DATA_DIR) / "mlm_tiny", o);
  const kernels::ExecCtx ctx = bf16_ctx();
  const Inputs in;
  std::vector<int32_t> labels(size_t(in.B * in.T), model::kIgnoreLabel);
  for (int64_t i = 1; i < in.B * in.T; i += 5) labels[size_t(i)] = int32_t(50 + i);
  model::TrainWorkspace ws16(ctx, m->config(), in.B, in.T), ws32(m->config(), in.B, in.T);
  model::MlmWorkspace mlm16(m->config(), in.B * in.T), mlm32(m->config(), in.B * in.T);
  std::vector<float> g16(size_t(m->num_params()), 0.0f), g32 = g16;
  const model::DropoutConfig dropout{0.1f, 0.1f, 0.0f};
  const auto a =
      model::mlm_forward_backward(ctx, *m, in.batch(), labels.data(), dropout, 3, 1.0f, g16.data(), ws16, mlm16);
  const auto b =
      model::mlm_forward_backward(ctx, *m, in.batch(), labels.data(), dropout, 3, 1.0f, g32.data(), ws32, mlm32);
  EXPECT_GT(a.count, 0);
  EXPECT_EQ(a.mean(), b.mean());
  EXPECT_TRUE(same_bits(g16, g32));
}

TEST(TrainBf16Activations, ABf16WorkspaceRefusesAnFp32Context) {
  auto m = model::load_checkpoint(fs::path(RC_TEST_DATA_DIR) / "tiny", {});
  const Inputs in;
  model::TrainWorkspace ws16(bf16_ctx(), m->config(), in.B, in.T);
  std::vector<float> g(size_t(m->num_params()), 0.0f);
  EXPECT_THROW(model::forward_backward(kernels::ExecCtx{}, *m, in.batch(), in.labels.data(), {}, 1, 1.0f, g.data(),
                                       ws16, nullptr),
               rc::Error);
}
