// adamw_step vs a hand-rolled double implementation of torch.optim.AdamW's formula (decay and
// no-decay segments, a gap no segment covers, grad_scale, several steps); sum_squares; zero.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/optimizer.h"

namespace rc::kernels {
namespace {

using test::randn;

// torch/optim/adamw.py (_single_tensor_adamw, 1.13), written out in double.
struct TorchAdamW {
  std::vector<double> p, m, v;
  void step(const std::vector<float>& g, const std::vector<AdamWSegment>& segs, const AdamWHyper& h) {
    const double lr = h.lr, b1 = h.beta1, b2 = h.beta2, eps = h.eps, wd = h.weight_decay;
    for (const auto& s : segs)
      for (int64_t i = s.offset; i < s.offset + s.n; ++i) {
        const double gi = double(g[size_t(i)]) * h.grad_scale;
        if (s.decay) p[size_t(i)] *= 1 - lr * wd;
        m[size_t(i)] = b1 * m[size_t(i)] + (1 - b1) * gi;
        v[size_t(i)] = b2 * v[size_t(i)] + (1 - b2) * gi * gi;
        const double bc1 = 1 - std::pow(b1, double(h.step)), bc2 = 1 - std::pow(b2, double(h.step));
        const double denom = std::sqrt(v[size_t(i)]) / std::sqrt(bc2) + eps;
        p[size_t(i)] -= lr / bc1 * m[size_t(i)] / denom;
      }
  }
};

std::vector<float> to_f(const std::vector<double>& d) { return {d.begin(), d.end()}; }

TEST(AdamW, MatchesTorchFormulaOverSteps) {
  const ExecCtx ctx{};
  const int64_t n = 70000;  // large enough for the parallel path
  // [0, 40000) decay, [40000, 40100) untouched, [40100, 70000) no decay.
  const std::vector<AdamWSegment> segs = {{0, 40000, true}, {40100, n - 40100, false}};
  auto p0 = randn(n, 1, 0.05f);
  std::vector<float> p = p0, rp = p0, m(static_cast<size_t>(n), 0.0f), v = m, rm = m, rv = m;
  TorchAdamW want{
      {p0.begin(), p0.end()}, std::vector<double>(static_cast<size_t>(n)), std::vector<double>(static_cast<size_t>(n))};
  AdamWHyper h;
  h.lr = 2e-3f;  // large, so that decay and updates are far above fp32 noise
  h.weight_decay = 0.1f;
  h.grad_scale = 0.5f;
  for (int64_t step = 1; step <= 5; ++step) {
    h.step = step;
    auto g = randn(n, 100 + uint64_t(step), 1e-2f);
    adamw_step(ctx, p.data(), g.data(), m.data(), v.data(), segs.data(), int64_t(segs.size()), h);
    ref::adamw_step(rp.data(), g.data(), rm.data(), rv.data(), segs.data(), int64_t(segs.size()), h);
    want.step(g, segs, h);
  }
  const auto wp = to_f(want.p), wm = to_f(want.m), wv = to_f(want.v);
  // fp32 kernel vs the double formula after 5 steps: measured max |Δ| 6.0e-8 (p, |p| ~ 0.2),
  // 7.0e-10 (m, |m| ~ 1e-2), 1.1e-13 (v)
  RC_EXPECT_CLOSE(p.data(), wp.data(), n, (test::Tol{2e-7, 1e-6}));
  RC_EXPECT_CLOSE(m.data(), wm.data(), n, (test::Tol{3e-9, 1e-6}));
  RC_EXPECT_CLOSE(v.data(), wv.data(), n, (test::Tol{1e-12, 1e-6}));
  RC_EXPECT_CLOSE(rp.data(), wp.data(), n, (test::Tol{2e-7, 1e-6}));  // measured 3.0e-8
  // The gap is untouched.
  for (int64_t i = 40000; i < 40100; ++i) {
    ASSERT_EQ(p[size_t(i)], p0[size_t(i)]);
    ASSERT_EQ(m[size_t(i)], 0.0f);
  }
  // Decay really applied on the first segment only: with zero gradient, one step scales p.
  std::vector<float> pz = p0, mz(static_cast<size_t>(n), 0.0f), vz = mz, gz = mz;
  h.step = 1;
  adamw_step(ctx, pz.data(), gz.data(), mz.data(), vz.data(), segs.data(), int64_t(segs.size()), h);
  EXPECT_FLOAT_EQ(pz[10], p0[10] * (1 - 2e-3f * 0.1f));
  EXPECT_EQ(pz[50000], p0[50000]);
}

TEST(AdamW, SumSquaresAndZero) {
  const ExecCtx ctx{};
  for (int64_t n : {0, 1, 17, 100003}) {
    auto x = randn(n, 3);
    double want = 0;
    for (float f : x) want += double(f) * f;
    const double got = sum_squares(ctx, x.data(), n);
    EXPECT_NEAR(got, want, 1e-6 * (1 + want));  // float partial sums within 4096-element blocks
    zero(ctx, x.data(), n);
    for (float f : x) ASSERT_EQ(f, 0.0f);
  }
}

}  // namespace
}  // namespace rc::kernels
