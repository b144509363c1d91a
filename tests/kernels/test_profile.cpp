// kernels/profile.h: exclusive nested scopes, phases, the thread's current profiler, and
// nothing recorded without a profiler.
#include "kernels/profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

namespace rc::kernels {
namespace {

void spin_for(std::chrono::milliseconds d) {  // busy, so the time is on this thread's clock too
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(Profiler, NestedScopesAreExclusive) {
  Profiler p;
  double outer_wall = 0, inner_wall = 0;
  {
    const auto t0 = std::chrono::steady_clock::now();
    {
      const ProfileScope outer(&p, OpFamily::gemm_ffn_up);
      spin_for(std::chrono::milliseconds(20));
      const auto t1 = std::chrono::steady_clock::now();
      {
        const ProfileScope inner(current_profiler(), OpFamily::convert);
        EXPECT_EQ(current_profiler(), &p);
        spin_for(std::chrono::milliseconds(30));
      }
      inner_wall = since(t1);
    }
    outer_wall = since(t0);
  }
  const double outer_s = p.seconds(Phase::forward, OpFamily::gemm_ffn_up);
  const double inner_s = p.seconds(Phase::forward, OpFamily::convert);
  EXPECT_GE(inner_s, 0.030);
  EXPECT_LE(inner_s, inner_wall);
  // Exclusive: the outer family holds its own 20 ms, not the inner scope's >= 30 ms (compared
  // with the wall times taken around the scopes, so a descheduled thread cannot fail it).
  EXPECT_GE(outer_s, 0.020);
  EXPECT_NEAR(outer_s, outer_wall - inner_wall, 0.002) << "the inner scope's time was also counted in the outer one";
  EXPECT_EQ(p.calls(Phase::forward, OpFamily::gemm_ffn_up), 1);
  EXPECT_EQ(p.calls(Phase::forward, OpFamily::convert), 1);
  EXPECT_NEAR(p.total_seconds(), outer_s + inner_s, 1e-12);
  EXPECT_EQ(current_profiler(), nullptr);
}

TEST(Profiler, PhasesAndReset) {
  Profiler p;
  ExecCtx ctx;
  ctx.profiler = &p;
  profiled(ctx, OpFamily::layernorm, [] { spin_for(std::chrono::milliseconds(2)); });
  p.set_phase(Phase::backward);
  profiled(ctx, OpFamily::layernorm, [] { spin_for(std::chrono::milliseconds(2)); });
  p.set_phase(Phase::optimizer);
  profiled(ctx, OpFamily::optimizer, [] {});
  EXPECT_GT(p.seconds(Phase::forward, OpFamily::layernorm), 0.0015);
  EXPECT_GT(p.seconds(Phase::backward, OpFamily::layernorm), 0.0015);
  EXPECT_EQ(p.calls(Phase::optimizer, OpFamily::optimizer), 1);
  EXPECT_EQ(p.calls(Phase::forward, OpFamily::optimizer), 0);
  p.reset();
  EXPECT_EQ(p.total_seconds(), 0.0);
  EXPECT_EQ(p.phase(), Phase::forward);
}

TEST(Profiler, OffRecordsNothingAndLeavesNoCurrent) {
  const ExecCtx ctx;  // profiler null
  bool ran = false;
  profiled(ctx, OpFamily::attention, [&] {
    ran = true;
    EXPECT_EQ(current_profiler(), nullptr);
  });
  EXPECT_TRUE(ran);
  const ProfileScope s(nullptr, OpFamily::gelu);
  EXPECT_EQ(current_profiler(), nullptr);
}

TEST(Profiler, ScopesOnAnotherThreadDoNotSeeThisThreadsProfiler) {
  Profiler p;
  const ProfileScope s(&p, OpFamily::other);
  Profiler* seen = &p;
  std::thread([&] { seen = current_profiler(); }).join();
  EXPECT_EQ(seen, nullptr);
}

TEST(Profiler, FamilyNamesAreDistinctAndGemmsMarked) {
  std::set<std::string> names;
  int gemms = 0;
  for (int f = 0; f < kOpFamilies; ++f) {
    names.insert(op_family_name(OpFamily(f)));
    gemms += op_family_is_gemm(OpFamily(f));
  }
  EXPECT_EQ(int(names.size()), kOpFamilies);
  EXPECT_EQ(gemms, 5);
  EXPECT_STREQ(phase_name(Phase::backward), "backward");
}

}  // namespace
}  // namespace rc::kernels
