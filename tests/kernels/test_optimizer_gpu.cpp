// CUDA fused multi-tensor AdamW, sum_squares and zero (kernels/cuda/optimizer.cu) against
// kernels/ref/optimizer.cpp: decay and no-decay segments, gaps between segments left
// untouched, more segments than one launch takes, the bf16 parameter copy, several steps.
// Tolerances: fp32 math vs the double ref, not yet measured on a GPU.
#include "kernels/cuda/launch_config.h"
#include "kernels/gpu_test_util.h"
#include "kernels/optimizer.h"

#if RC_WITH_CUDA
namespace {

using namespace rc::test::gpu;
namespace kc = rc::kernels::cuda;
using rc::kernels::AdamWHyper;
using rc::kernels::AdamWSegment;

TEST(OptimizerGpu, AdamWMatchesRefOverSegments) {
  RC_REQUIRE_GPU();
  // 250 segments (> kAdamWMaxSegments: several launches) with a 3-float gap after each.
  std::vector<AdamWSegment> segs;
  int64_t off = 0;
  for (int s = 0; s < 250; ++s) {
    const int64_t n = 1 + (s * 37) % 500;
    segs.push_back({off, n, s % 3 != 0});
    off += n + 3;
  }
  segs.push_back({off, 0, true});  // empty segment is fine
  ASSERT_GT(int64_t(segs.size()), kc::kAdamWMaxSegments);
  const int64_t n = off;
  auto p = randn(n, 1), m = randn(n, 2, 0.01f), v = randn(n, 3, 0.0f, 0.0f), g = randn(n, 4, 0.1f);
  for (auto& x : v) x = 1e-4f;
  auto dp = up(p), dm = up(m), dv = up(v), dg = up(g);
  Dev<kc::Bf16> dp16(n);
  dp16.zero();
  AdamWHyper h;
  h.lr = 1e-3f, h.weight_decay = 0.01f, h.grad_scale = 0.5f;
  for (int64_t step = 1; step <= 3; ++step) {
    h.step = step;
    rc::kernels::ref::adamw_step(p.data(), g.data(), m.data(), v.data(), segs.data(), int64_t(segs.size()), h);
    kc::adamw_step(dp.data(), dg.data(), dm.data(), dv.data(), segs.data(), int64_t(segs.size()), h, dp16.data(),
                   nullptr);
  }
  expect_close("adamw.params", down(dp), p, {1e-6, 1e-5});
  expect_close("adamw.m", down(dm), m, {1e-7, 1e-5});
  expect_close("adamw.v", down(dv), v, {1e-9, 1e-5});
  // bf16 copy: written inside segments, untouched (0) in the gaps
  const auto p16 = down(dp16);
  const auto pgot = down(dp);
  std::vector<bool> inside(n, false);
  for (const auto& s : segs)
    for (int64_t i = s.offset; i < s.offset + s.n; ++i) inside[i] = true;
  for (int64_t i = 0; i < n; ++i) {
    if (inside[i])
      ASSERT_EQ(p16[i], rc::f32_to_bf16(pgot[i])) << i;
    else
      ASSERT_EQ(p16[i], 0) << i;
  }
}

TEST(OptimizerGpu, SumSquaresAndZero) {
  RC_REQUIRE_GPU();
  for (int64_t n : {int64_t(1), int64_t(1000), int64_t(1) << 22}) {
    const auto x = randn(n, 5);
    double want = 0;
    for (float e : x) want += double(e) * double(e);
    auto dx = up(x);
    const double got = rc::kernels::sum_squares(cuda_ctx(), dx.data(), n);
    EXPECT_NEAR(got, want, 1e-9 * want) << n;  // double accumulation both sides
    EXPECT_EQ(rc::kernels::sum_squares(cuda_ctx(), dx.data(), n), got) << "not deterministic";
    rc::kernels::zero(cuda_ctx(), dx.data(), n);
    EXPECT_EQ(rc::kernels::sum_squares(cuda_ctx(), dx.data(), n), 0.0);
  }
}

}  // namespace
#else
TEST(OptimizerGpu, NotBuilt) { GTEST_SKIP() << "built without RC_WITH_CUDA"; }
#endif
