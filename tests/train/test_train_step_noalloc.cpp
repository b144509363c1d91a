// The optimizer step allocates nothing of its own once warm: operator new is counted around
// TrainEngine::step (forward + backward + clip + fused AdamW) on the tiny model, fp32 and
// bf16, with dropout on. Every buffer comes from the engine / workspace made up front.
//
// oneDNN 2.6's execute() itself allocates a few small objects on every call, even through
// its C API (measured: ~6 per GEMM), which no caller can avoid. So the budget is exactly
// what the step's GEMMs cost when called alone — measured here, per variant — and nothing
// more: any allocation of ours (the step, the kernels, the model) trips the test.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>

#include "kernels/cpu/onednn_matmul.h"
#include "device/cpu_isa.h"
#include "kernels/matmul.h"
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
  // Per-thread scratch grows once, on the first step in which a thread meets a size; which
  // OpenMP thread runs which chunk varies when the machine is busy, so a thread can meet one
  // after the warm-up (seen: +4 once under parallel ctest). That is one-time growth; an
  // allocation per step shows in every window. So: three windows of 3 steps, the smallest.
  long fewest = -1;
  for (int window = 0; window < 3; ++window) {
    g_allocs = 0;
    g_counting = true;
    for (int i = 0; i < 3; ++i) engine.step(std::span(&batch, 1), std::span(&lab, 1));
    g_counting = false;
    if (fewest < 0 || g_allocs.load() < fewest) fewest = g_allocs.load();
  }
  return fewest;
}

// Allocations of one warm GEMM call of each variant the backward uses, at the tiny model's
// shapes (M rows of 32 or 64 features).
struct GemmCost {
  long nt = 0, nn = 0, nn_acc = 0, tn_acc = 0;
};
static GemmCost gemm_allocations(kernels::MatmulPrecision precision) {
  kernels::ExecCtx ctx;
  ctx.matmul_precision = precision;
  const int64_t M = 96, N = 64, K = 32;
  std::vector<float> a(M * 64, 0.5f), b(64 * 64, 0.25f), y(M * 64, 0.0f), bias(64, 0.1f);
  auto cost = [&](auto call) {
    call();  // warm: primitive creation is allowed to allocate
    g_allocs = 0;
    g_counting = true;
    call();
    g_counting = false;
    return g_allocs.load();
  };
  GemmCost c;
  c.nt = cost([&] { kernels::matmul_nt(ctx, y.data(), a.data(), b.data(), bias.data(), M, N, K); });
  c.nn = cost([&] { kernels::matmul_nn(ctx, y.data(), a.data(), b.data(), M, K, N, false); });
  c.nn_acc = cost([&] { kernels::matmul_nn(ctx, y.data(), a.data(), b.data(), M, K, N, true); });
  c.tn_acc = cost([&] { kernels::matmul_tn(ctx, y.data(), a.data(), b.data(), N, K, M, true); });
  return c;
}

// The step's GEMMs (model/roberta_model.cpp): forward 4 per layer + 2 in the head
// (matmul_nt); backward per layer 4 weight grads (matmul_tn, accumulate), 2 plain and 2
// accumulating input grads (matmul_nn), head 2 weight grads and 2 plain input grads.
static long gemm_budget(const GemmCost& c, long layers) {
  return (4 * layers + 2) * c.nt + (4 * layers + 2) * c.tn_acc + (2 * layers + 2) * c.nn + 2 * layers * c.nn_acc;
}

static void expect_no_allocations_of_our_own(kernels::MatmulPrecision precision) {
  const GemmCost c = gemm_allocations(precision);
  const long per_step_budget = gemm_budget(c, /*tiny: 2 layers*/ 2);
  const long steps = 3;
  const long got = allocations_per_step(precision);
  std::printf("allocations in %ld steps: %ld; oneDNN's own per step (nt %ld, nn %ld, nn+= %ld, tn+= %ld): %ld\n", steps,
              got, c.nt, c.nn, c.nn_acc, c.tn_acc, per_step_budget);
  EXPECT_LE(got, steps * per_step_budget) << "the step allocates beyond what oneDNN's execute() does";
}

TEST(TrainStep, NoAllocationPerStepFp32) { expect_no_allocations_of_our_own(kernels::MatmulPrecision::fp32); }

TEST(TrainStep, NoAllocationPerStepBf16) {
  if (!cpu_has_bf16() && !kernels::cpu::onednn::bf16_runs_on_fp32_gemm())
    GTEST_SKIP() << "no AVX512-BF16 / AMX, and oneDNN runs no fp32 GEMM for it";
  expect_no_allocations_of_our_own(kernels::MatmulPrecision::bf16);
}
