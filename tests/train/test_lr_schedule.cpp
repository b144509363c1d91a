// LR schedules against transformers' formulas, and against the golden run's lrs
// (tests/data/tiny/golden.safetensors train_lrs: linear, warmup 2, total 20, lr 1e-3).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "io/tensor_source.h"
#include "roberta/error.h"
#include "train/lr_schedule.h"

using namespace rc::train;

TEST(LrSchedule, LinearWithWarmupMatchesGolden) {
  auto src = rc::io::open_safetensors(std::filesystem::path(RC_TEST_DATA_DIR) / "tiny/golden.safetensors");
  const auto* info = src->find("train_lrs");
  ASSERT_NE(info, nullptr);
  const float* want = reinterpret_cast<const float*>(src->data("train_lrs").data());
  const auto& meta = src->metadata();
  LrSchedule s{LrScheduleKind::linear, std::stod(meta.at("lr")), std::stoll(meta.at("warmup_steps")),
               std::stoll(meta.at("train_steps"))};
  for (int64_t i = 0; i < info->numel(); ++i)
    EXPECT_NEAR(s.lr(i), want[i], 1e-9) << "step " << i;  // fp32 storage of the golden: ~5e-11
}

TEST(LrSchedule, Shapes) {
  LrSchedule lin{LrScheduleKind::linear, 1.0, 0, 10};
  EXPECT_DOUBLE_EQ(lin.multiplier(0), 1.0);
  EXPECT_DOUBLE_EQ(lin.multiplier(5), 0.5);
  EXPECT_DOUBLE_EQ(lin.multiplier(10), 0.0);
  LrSchedule cons{LrScheduleKind::constant, 2.0, 4, 10};
  EXPECT_DOUBLE_EQ(cons.lr(1), 0.5);
  EXPECT_DOUBLE_EQ(cons.lr(4), 2.0);
  EXPECT_DOUBLE_EQ(cons.lr(9), 2.0);
  LrSchedule cos{LrScheduleKind::cosine, 1.0, 2, 12};
  EXPECT_DOUBLE_EQ(cos.multiplier(1), 0.5);
  EXPECT_DOUBLE_EQ(cos.multiplier(2), 1.0);
  EXPECT_NEAR(cos.multiplier(7), 0.5, 1e-12);
  EXPECT_NEAR(cos.multiplier(12), 0.0, 1e-12);
  EXPECT_EQ(warmup_steps_for(100, 0.06, 0), 6);
  EXPECT_EQ(warmup_steps_for(101, 0.06, 0), 7);  // ceil, as TrainingArguments.get_warmup_steps
  EXPECT_EQ(warmup_steps_for(100, 0.5, 3), 3);
  EXPECT_THROW(parse_lr_schedule("polynomial"), rc::Error);
}
