// The bf16 training step's weight copy (model/bf16_weights.h): made once per optimizer step,
// written by AdamW in the pass that writes the fp32 master, reused by every micro-batch of the
// step, and never read stale. On the tiny checkpoint, with dropout and 2 micro-batches a step.
//
// The end-to-end check is bitwise: an engine with the copy and one without (every GEMM
// converting its weight per call, as before the copy existed) take the same steps and must
// agree on every loss and every parameter. A copy that AdamW did not refresh (or a forward
// that read an old one) multiplies by last step's weights and breaks it from step 2 on.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "kernels/matmul.h"
#include "model/checkpoint.h"
#include "train/train_step.h"

using namespace rc;

namespace {

struct TrainRun {
  std::unique_ptr<model::RobertaModel> model;
  std::unique_ptr<train::TrainEngine> engine;
};

TrainRun make_run(bool with_copy) {
  TrainRun r;
  r.model = model::load_checkpoint(std::filesystem::path(RC_TEST_DATA_DIR) / "tiny", {});
  train::OptimConfig oc;
  oc.weight_decay = 0.01;
  oc.schedule = train::LrSchedule{train::LrScheduleKind::linear, 5e-3, 1, 10};
  kernels::ExecCtx ctx;
  ctx.matmul_precision = kernels::MatmulPrecision::bf16;
  r.engine = std::make_unique<train::TrainEngine>(*r.model, oc, ctx, model::DropoutConfig{0.1f, 0.1f, 0.1f}, 7, 4, 24);
  if (!with_copy) r.engine->drop_bf16_weights();
  return r;
}

struct Batches {
  std::vector<int32_t> ids, lens{24, 10, 3, 17}, labels_a{0, 1, 2, 1}, labels_b{2, 2, 0, 1};
  std::vector<model::Batch> micro;
  std::vector<const int32_t*> labels;
  Batches() {
    const int64_t B = 4, T = 24;
    ids.assign(size_t(B * T), 1);
    for (int64_t b = 0; b < B; ++b) {
      ids[size_t(b * T)] = 0;
      for (int32_t t = 1; t + 1 < lens[size_t(b)]; ++t) ids[size_t(b * T + t)] = 100 + int32_t(b * 31 + t);
      ids[size_t(b * T + lens[size_t(b)] - 1)] = 2;
    }
    micro = {{B, T, ids.data(), lens.data(), nullptr}, {B, T, ids.data(), lens.data(), nullptr}};
    labels = {labels_a.data(), labels_b.data()};
  }
};

// Every GEMM weight's copy is bf16 of the current master, bitwise.
void expect_copy_matches(const model::RobertaModel& m, const model::Bf16WeightCopy& copy) {
  const auto& c = m.config();
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  kernels::ExecCtx ctx;
  const float* P = m.params();
  for (const auto& L : m.offsets().layers)
    for (auto [off, n] : {std::pair{L.qkv_w, 3 * C * C}, std::pair{L.attn_out_w, C * C}, std::pair{L.ffn_in_w, I * C},
                          std::pair{L.ffn_out_w, C * I}}) {
      std::vector<uint16_t> want(static_cast<size_t>(n));
      kernels::convert_to_bf16(ctx, want.data(), P + off, n);
      const uint16_t* got = copy.copy_of(off, n);
      ASSERT_NE(got, nullptr);
      ASSERT_EQ(std::memcmp(got, want.data(), size_t(n) * 2), 0) << "stale bf16 copy at parameter offset " << off;
    }
}

}  // namespace

TEST(Bf16WeightCopy, AdamWRefreshesItAndMicroBatchesReuseIt) {
  TrainRun r = make_run(true);
  const model::Bf16WeightCopy* copy = r.engine->bf16_weights();
  ASSERT_NE(copy, nullptr);
  EXPECT_FALSE(copy->fresh(*r.model));
  Batches b;
  r.engine->step(b.micro, b.labels);
  // The first micro-batch converted (the copy did not exist); the second reused it; AdamW
  // wrote the new one in its pass.
  EXPECT_EQ(copy->conversions(), 1);
  EXPECT_TRUE(copy->fresh(*r.model));
  expect_copy_matches(*r.model, *copy);
  for (int i = 0; i < 2; ++i) r.engine->step(b.micro, b.labels);
  EXPECT_EQ(copy->conversions(), 1) << "AdamW's pass should leave nothing for the forward to convert";
  expect_copy_matches(*r.model, *copy);
}

TEST(Bf16WeightCopy, AnyWriteToTheParametersMakesItStale) {
  TrainRun r = make_run(true);
  Batches b;
  r.engine->step(b.micro, b.labels);
  const model::Bf16WeightCopy* copy = r.engine->bf16_weights();
  ASSERT_TRUE(copy->fresh(*r.model));
  // A write outside the optimizer (a checkpoint load, a broadcast from rank 0, a test).
  const int64_t off = r.model->offsets().layers[0].ffn_in_w;
  r.model->params()[off] += 0.5f;
  EXPECT_FALSE(copy->fresh(*r.model));
  r.engine->step(b.micro, b.labels);
  EXPECT_EQ(copy->conversions(), 2);
  expect_copy_matches(*r.model, *copy);
}

TEST(Bf16WeightCopy, TrainingIsBitwiseTheSameWithoutIt) {
  TrainRun with = make_run(true), without = make_run(false);
  ASSERT_EQ(without.engine->bf16_weights(), nullptr);
  Batches b;
  for (int step = 0; step < 4; ++step) {
    const auto a = with.engine->step(b.micro, b.labels);
    const auto w = without.engine->step(b.micro, b.labels);
    EXPECT_EQ(a.loss, w.loss) << "step " << step;
    EXPECT_EQ(a.grad_norm, w.grad_norm) << "step " << step;
  }
  const int64_t n = with.model->num_params();
  const model::RobertaModel& mw = *with.model;
  const model::RobertaModel& mo = *without.model;
  EXPECT_EQ(std::memcmp(mw.params(), mo.params(), size_t(n) * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(with.engine->exp_avg(), without.engine->exp_avg(), size_t(n) * sizeof(float)), 0);
}

TEST(Bf16WeightCopy, NoneForFp32) {
  auto model = model::load_checkpoint(std::filesystem::path(RC_TEST_DATA_DIR) / "tiny", {});
  train::TrainEngine engine(*model, train::OptimConfig{}, kernels::ExecCtx{}, model::DropoutConfig{}, 7, 4, 24);
  EXPECT_EQ(engine.bf16_weights(), nullptr);
}
