// The optimizer step allocates nothing once warm: operator new is counted around
// TrainEngine::step (forward + backward + clip + fused AdamW) on the tiny model, fp32 and
// bf16, with dropout on. Every buffer comes from the engine / workspace made up front.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>

#include "device/cpu_isa.h"
#include "model/checkpoint.h"
#include "train/train_step.h"

namespace {
std::atomic<long> g_allocs{0};
std::atomic<bool> g_counting{false};
}  // namespace

void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace rc;

static long allocations_per_step(kernels::MatmulPrecision precision) {
  auto model = model::load_checkpoint(std::filesystem::path(RC_TEST_DATA_DIR) / "tiny", {});
  train::OptimConfig oc;
  oc.weight_decay = 0.01;
  oc.schedule = train::LrSchedule{train::LrScheduleKind::linear, 1e-3, 2, 10};
  kernels::ExecCtx ctx;
  ctx.matmul_precision = precision;
  model::DropoutConfig dropout{0.1f, 0.1f, 0.1f};
  const int64_t B = 4, T = 24;
  train::TrainEngine engine(*model, oc, ctx, dropout, 7, B, T);
  std::vector<int32_t> ids(B * T, 1), lens{24, 10, 3, 17}, labels{0, 1, 2, 1};
  for (int64_t b = 0; b < B; ++b) {
    ids[b * T] = 0;
    for (int32_t t = 1; t + 1 < lens[b]; ++t) ids[b * T + t] = 100 + int32_t(b * 31 + t);
    ids[b * T + lens[b] - 1] = 2;
  }
  const model::Batch batch{B, T, ids.data(), lens.data(), nullptr};
  const int32_t* lab = labels.data();
  engine.step(std::span(&batch, 1), std::span(&lab, 1));  // warm-up (lazy library init)
  g_allocs = 0;
  g_counting = true;
  for (int i = 0; i < 3; ++i) engine.step(std::span(&batch, 1), std::span(&lab, 1));
  g_counting = false;
  return g_allocs.load();
}

TEST(TrainStep, NoAllocationPerStepFp32) { EXPECT_EQ(allocations_per_step(kernels::MatmulPrecision::fp32), 0); }

TEST(TrainStep, NoAllocationPerStepBf16) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no AVX512-BF16 / AMX";
  EXPECT_EQ(allocations_per_step(kernels::MatmulPrecision::bf16), 0);
}
