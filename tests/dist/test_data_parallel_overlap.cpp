// The overlap protocol of train::DataParallel against a recording collective, on the tiny model
// (CPU context, no peers): each encoder layer's gradients are reduced on the communication
// thread, from the top layer down, and — for a collective whose buffers live on a device —
// only through allreduce_sum_after with the mark the backward recorded for that very layer.
// The NCCL side of the same contract (the reduce waits on its stream for the mark) is
// NcclCollectiveGpu.OverlappedAllReduceWaitsForTheMark.
#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <span>
#include <vector>

#include "dist/collective.h"
#include "model/checkpoint.h"
#include "train/data_parallel.h"
#include "train/train_step.h"

namespace {

using namespace rc;

// Records every collective; sums are the identity (a world of 2 whose peer sends zeros).
class RecordingCollective final : public dist::Collective {
 public:
  struct Reduce {
    const float* data;
    int64_t n;
    int64_t mark;  // -1: a plain allreduce_sum
  };
  explicit RecordingCollective(bool device) : device_(device) {}
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  void allreduce_sum(float* data, int64_t n) override { record({data, n, -1}); }
  void allreduce_sum(double*, int64_t) override {}
  void allreduce_max(uint64_t*, int64_t) override {}
  void allreduce_max(uint8_t*, int64_t) override {}
  void broadcast(void*, int64_t, int) override {}
  void barrier() override {}
  bool device_buffers() const override { return device_; }
  int64_t mark_ready() override {
    if (!device_) return Collective::mark_ready();
    std::lock_guard<std::mutex> lock(mu);
    return marks_made++;
  }
  void allreduce_sum_after(int64_t mark, float* data, int64_t n) override {
    if (!device_) return Collective::allreduce_sum_after(mark, data, n);
    {
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_LT(mark, marks_made) << "a reduce used a mark not made yet";
    }
    record({data, n, mark});
  }

  std::mutex mu;
  std::vector<Reduce> reduces;
  int64_t marks_made = 0;

 private:
  void record(const Reduce& r) {
    std::lock_guard<std::mutex> lock(mu);
    reduces.push_back(r);
  }
  bool device_;
};

struct StepRecord {
  std::vector<RecordingCollective::Reduce> reduces;
  int64_t marks = 0;
  int64_t layers = 0;
};

StepRecord one_step(bool device_buffers, bool overlap) {
  auto model = model::load_checkpoint(std::filesystem::path(RC_TEST_DATA_DIR) / "tiny", {});
  train::OptimConfig oc;
  oc.schedule = train::LrSchedule{train::LrScheduleKind::linear, 1e-3, 0, 10};
  kernels::ExecCtx ctx;
  const int64_t B = 2, T = 12;
  train::TrainEngine engine(*model, oc, ctx, model::DropoutConfig{}, 7, B, T);
  auto owned = std::make_unique<RecordingCollective>(device_buffers);
  RecordingCollective* rec = owned.get();
  StepRecord run;
  {
    train::DataParallel dp(std::move(owned), ctx);
    engine.set_grad_sync(dp.hook());
    if (overlap) {
      dp.enable_overlap(*model, engine.grads());
      EXPECT_TRUE(dp.overlapping());
      engine.set_layer_grads_ready(dp.layer_ready());
    }
    std::vector<int32_t> ids(size_t(B * T), 1), lens{12, 7}, labels{0, 2};
    for (int64_t b = 0; b < B; ++b) {
      ids[size_t(b * T)] = 0;
      for (int32_t t = 1; t + 1 < lens[size_t(b)]; ++t) ids[size_t(b * T + t)] = 40 + int32_t(b * 13 + t);
      ids[size_t(b * T + lens[size_t(b)] - 1)] = 2;
    }
    const model::Batch batch{B, T, ids.data(), lens.data(), nullptr};
    const int32_t* lab = labels.data();
    dp.before_step(B * T, false);
    engine.step(std::span(&batch, 1), std::span(&lab, 1));
    run.reduces = rec->reduces;  // rec lives as long as dp
    run.marks = rec->marks_made;
  }
  run.layers = int64_t(model->offsets().layers.size());
  return run;
}

TEST(DataParallelOverlap, DeviceCollectiveReducesEachLayerAfterItsOwnMark) {
  const StepRecord r = one_step(/*device_buffers=*/true, /*overlap=*/true);
  ASSERT_GT(r.layers, 1);
  EXPECT_EQ(r.marks, r.layers) << "one mark per encoder layer, recorded by the backward";
  // Marks are made top layer first (mark 0 = layer NL-1); every reduce with a mark comes
  // before the plain ones (the hook's rest), in mark order.
  int64_t last_mark = -1;
  bool plain_seen = false;
  int64_t marked = 0;
  for (const auto& x : r.reduces) {
    if (x.mark < 0) {
      plain_seen = true;
      continue;
    }
    EXPECT_FALSE(plain_seen) << "a layer reduce after the hook's own";
    EXPECT_GE(x.mark, last_mark) << "layers out of order";
    last_mark = x.mark;
    ++marked;
  }
  EXPECT_GE(marked, r.layers);
  EXPECT_TRUE(plain_seen) << "head, embeddings and the loss are reduced by the hook";
  // Marked reduces of a later mark lie at lower offsets (lower layers come first in the
  // flat buffer): the reduce with mark k covers layer NL-1-k's gradients only.
  for (const auto& a : r.reduces) {
    for (const auto& b : r.reduces) {
      if (a.mark >= 0 && b.mark > a.mark) {
        EXPECT_LT(b.data, a.data);
      }
    }
  }
}

TEST(DataParallelOverlap, HostCollectiveNeedsNoMarks) {
  const StepRecord r = one_step(/*device_buffers=*/false, /*overlap=*/true);
  EXPECT_EQ(r.marks, 0);
  for (const auto& x : r.reduces) EXPECT_EQ(x.mark, -1);
  // The same floats travel as without overlap, in a different grouping.
  const StepRecord plain = one_step(false, false);
  int64_t a = 0, b = 0;
  for (const auto& x : r.reduces) a += x.n;
  for (const auto& x : plain.reduces) b += x.n;
  EXPECT_EQ(a, b);
}

TEST(DataParallelOverlap, DeviceCollectiveCoversTheSameFloatsAsWithoutOverlap) {
  const StepRecord with = one_step(true, true);
  const StepRecord without = one_step(true, false);
  EXPECT_EQ(without.marks, 0);
  int64_t a = 0, b = 0;
  for (const auto& x : with.reduces) a += x.n;
  for (const auto& x : without.reduces) b += x.n;
  EXPECT_EQ(a, b);
}

}  // namespace
