// Layer-wise lr decay (train_step.h: OptimConfig::layer_lr_decay, `train --layer-lr-decay`):
// torch param groups with lr · d^(L+1-depth). On the tiny checkpoint (2 layers).
//
// The end-to-end check is bitwise: AdamW is elementwise and the first step's gradient depends
// only on the starting weights and the batch, so after one step every parameter of the group
// with scale s must equal, bit for bit, the same parameter of an engine without decay whose
// peak lr is lr · s. With d = 0.5 every scale is a power of two, so lr · s is exact both ways.
// An engine that gave a group the wrong lr, or left a group (or a bf16 copy) out, fails it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "model/checkpoint.h"
#include "support/model_batches.h"
#include "train/train_step.h"

using namespace rc;

namespace {

const std::filesystem::path kLlrdTiny = std::filesystem::path(RC_TEST_DATA_DIR) / "tiny";
constexpr double kLlrdPeak = 4e-3;

train::OptimConfig llrd_optim(double peak, double decay) {
  train::OptimConfig oc;
  oc.weight_decay = 0.05;  // decay scales with the group's lr, as torch's p ← p·(1 - lr·wd)
  oc.layer_lr_decay = decay;
  oc.schedule = train::LrSchedule{train::LrScheduleKind::linear, peak, 0, 10};
  return oc;
}

// The tiny checkpoint's parameters after one step with `oc` at `precision`.
std::vector<float> llrd_one_step(const train::OptimConfig& oc, kernels::MatmulPrecision precision) {
  auto m = model::load_checkpoint(kLlrdTiny, {});
  kernels::ExecCtx ctx;
  ctx.matmul_precision = precision;
  train::TrainEngine engine(*m, oc, ctx, model::DropoutConfig{0.1f, 0.1f, 0.1f}, 11, 4, 24);
  const test::Ids in = test::random_batch(m->config(), 4, 24, 5);
  const std::vector<int32_t> labels{0, 1, 2, 1};
  const model::Batch batch{in.B, in.T, in.ids.data(), in.lens.data(), nullptr};
  const int32_t* label_ptr = labels.data();
  engine.step(std::span(&batch, 1), std::span(&label_ptr, 1));
  return {m->params(), m->params() + m->num_params()};
}

}  // namespace

TEST(LayerLrDecay, ScalesFollowDepthAndGroupsCoverEveryParameterOnce) {
  auto m = model::load_checkpoint(kLlrdTiny, {});
  const int64_t L = m->config().num_hidden_layers;
  ASSERT_EQ(L, 2);
  for (const auto& e : m->layout().entries()) {
    const double s = train::layer_lr_scale(e, 0.8, L);
    if (e.is_head)
      EXPECT_EQ(s, 1.0) << e.name;
    else if (e.layer == 1)
      EXPECT_DOUBLE_EQ(s, 0.8) << e.name;
    else if (e.layer == 0)
      EXPECT_DOUBLE_EQ(s, 0.64) << e.name;
    else
      EXPECT_DOUBLE_EQ(s, 0.8 * 0.8 * 0.8) << e.name;  // the embeddings
  }
  const auto groups = train::adamw_lr_groups(m->layout(), true, 0.8, L);
  EXPECT_EQ(groups.size(), 4u);  // embeddings, layer 0, layer 1, head
  std::vector<int> seen(size_t(m->num_params()), 0);
  for (const auto& g : groups)
    for (const auto& s : g.segments)
      for (int64_t i = s.offset; i < s.offset + s.n; ++i) ++seen[size_t(i)];
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "parameter " << i;

  // Off: one group at the full lr, one segment per run of entries with the same decay flag.
  const auto off = train::adamw_lr_groups(m->layout(), true, 1.0, L);
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0].lr_scale, 1.0);
  size_t runs = 0;
  bool last = false;
  for (size_t i = 0; i < m->layout().entries().size(); ++i) {
    const bool d = m->layout().entries()[i].decay;
    if (i == 0 || d != last) ++runs;
    last = d;
  }
  ASSERT_EQ(off[0].segments.size(), runs);
  for (const auto& seg : off[0].segments) EXPECT_GT(seg.n, 0);
  EXPECT_THROW(train::adamw_lr_groups(m->layout(), true, 0.0, L), Error);
  EXPECT_THROW(train::adamw_lr_groups(m->layout(), true, 1.5, L), Error);
}

TEST(LayerLrDecay, OneStepIsEachGroupStepsAtItsOwnLr) {
  auto m = model::load_checkpoint(kLlrdTiny, {});
  const int64_t L = m->config().num_hidden_layers;
  for (const auto precision : {kernels::MatmulPrecision::fp32, kernels::MatmulPrecision::bf16}) {
    SCOPED_TRACE(precision == kernels::MatmulPrecision::bf16 ? "bf16" : "fp32");
    const std::vector<float> got = llrd_one_step(llrd_optim(kLlrdPeak, 0.5), precision);
    std::map<double, std::vector<float>> by_scale;  // scale → one step at peak · scale, no decay
    int64_t checked = 0;
    for (const auto& e : m->layout().entries()) {
      const double s = train::layer_lr_scale(e, 0.5, L);
      if (!by_scale.count(s)) by_scale[s] = llrd_one_step(llrd_optim(kLlrdPeak * s, 1.0), precision);
      const std::vector<float>& want = by_scale[s];
      ASSERT_EQ(std::memcmp(got.data() + e.offset, want.data() + e.offset, size_t(e.numel) * sizeof(float)), 0)
          << e.name << " (scale " << s << ") did not step at lr " << kLlrdPeak * s;
      checked += e.numel;
    }
    EXPECT_EQ(checked, m->num_params());
    EXPECT_EQ(by_scale.size(), 4u);
    // And the decay did something: the bottom groups moved less than without it.
    const std::vector<float> flat = llrd_one_step(llrd_optim(kLlrdPeak, 1.0), precision);
    const int64_t emb = m->offsets().wte;
    EXPECT_NE(std::memcmp(got.data() + emb, flat.data() + emb, 64 * sizeof(float)), 0);
  }
}
