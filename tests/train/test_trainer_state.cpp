// The run state (src/train/trainer_state.h) and data-parallel sharding (data_parallel.h):
// trainer_state.json round-trips; a resume with another split of the same global batch is
// accepted and another global batch refused; shards cover each step's micro-batches once.
#include <gtest/gtest.h>

#include <set>

#include "roberta/error.h"
#include "train/data_parallel.h"
#include "train/trainer_state.h"

using namespace rc::train;

namespace {

RunIdentity identity(int64_t batch, int64_t accum, int64_t world) {
  RunIdentity id;
  id.seed = 7;
  id.batch_size = batch;
  id.grad_accum = accum;
  id.world_size = world;
  id.max_length = 64;
  id.total_steps = 20;
  id.data_fingerprint = "123";
  return id;
}

}  // namespace

TEST(TrainerState, RoundTripsAndChecksTheGlobalBatch) {
  TrainState s;
  s.global_step = 5;
  s.epoch = 1;
  s.update_in_epoch = 2;
  s.samples_in_epoch = 48;
  s.loss_sum_total = 3.5;
  s.log_count = 1;
  s.best_metric = 0.25;
  s.best_checkpoint = "/out/checkpoint-5";
  const StateLayout layout{4, 5, 1, 20, 5, 8};
  const std::string text = state_to_json(s, identity(8, 1, 2), layout).dump();
  // 2 ranks x 8 -> 1 process x 8 x accum 2: the same global batch of 16.
  const TrainState back = state_from_json(text, "t.json", identity(8, 2, 1));
  EXPECT_EQ(back.global_step, 5);
  EXPECT_EQ(back.epoch, 1);
  EXPECT_EQ(back.update_in_epoch, 2);
  EXPECT_EQ(back.samples_in_epoch, 48);
  EXPECT_EQ(back.best_metric, 0.25);
  EXPECT_EQ(back.best_checkpoint, "/out/checkpoint-5");
  try {
    state_from_json(text, "t.json", identity(8, 1, 1));  // global batch 8
    FAIL() << "another global batch was accepted";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("global batch"), std::string::npos) << e.what();
  }
  RunIdentity other_seed = identity(8, 2, 1);
  other_seed.seed = 8;
  EXPECT_THROW(state_from_json(text, "t.json", other_seed), rc::Error);
  EXPECT_THROW(state_from_json("{\"no\": 1}", "t.json", identity(8, 2, 1)), rc::Error);
  EXPECT_THROW(state_from_json("{not json", "t.json", identity(8, 2, 1)), rc::Error);
}

TEST(TrainerState, CheckpointsBeforeDataParallelCompareThePerProcessBatch) {
  nlohmann::json st = state_to_json(TrainState{}, identity(8, 2, 1), StateLayout{});
  st["rc_resume"].erase("global_batch_size");
  st["rc_resume"].erase("world_size");
  EXPECT_NO_THROW(state_from_json(st.dump(), "t.json", identity(8, 2, 1)));
  EXPECT_THROW(state_from_json(st.dump(), "t.json", identity(8, 1, 2)), rc::Error);
}

TEST(StepShard, EveryMicroBatchOnceAcrossRanks) {
  // 19 micro-batches per epoch, accum 2, 3 ranks: 6 per step, the last step has 1.
  for (int64_t u = 0; u < 4; ++u) {
    std::multiset<int64_t> seen;
    int64_t total = 0;
    for (int r = 0; r < 3; ++r) {
      const StepShard s = step_shard(u, 19, 2, r, 3);
      total = s.layout.total;
      for (int64_t k = 0; k < s.local_count(); ++k) seen.insert(s.m0 + s.layout.first + k * s.layout.stride);
    }
    EXPECT_EQ(total, u < 3 ? 6 : 1);
    ASSERT_EQ(int64_t(seen.size()), total);
    int64_t expect = u * 6;
    for (int64_t m : seen) EXPECT_EQ(m, expect++);
  }
  EXPECT_EQ(step_shard(3, 19, 2, 1, 3).local_count(), 0);  // rank 1 idles at the epoch's end
}
