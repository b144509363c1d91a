// softmax / cross_entropy: CPU vs the reference, hand-computed values, stability on large
// logits, and the reference backward vs finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/loss.h"

namespace rc::kernels {
namespace {

using test::randn;

std::vector<int32_t> labels_for(int64_t B, int64_t K) {
  std::vector<int32_t> l(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) l[size_t(b)] = int32_t((b * 7 + 3) % K);
  return l;
}

TEST(Loss, MatchesRef) {
  const ExecCtx ctx{};
  for (auto [B, K] : {std::pair<int64_t, int64_t>{1, 3}, {32, 3}, {7, 1000}, {5, 1}, {64, 2}}) {
    auto logits = randn(B * K, 1, 4.0f);
    auto labels = labels_for(B, K);
    std::vector<float> p(size_t(B * K)), rp(size_t(B * K)), l(static_cast<size_t>(B)), rl(static_cast<size_t>(B));
    softmax_forward(ctx, p.data(), logits.data(), B, K);
    ref::softmax_forward(rp.data(), logits.data(), B, K);
    RC_EXPECT_CLOSE(p.data(), rp.data(), B * K, (test::Tol{1e-7, 1e-6}));  // measured 0
    cross_entropy_forward(ctx, l.data(), p.data(), logits.data(), labels.data(), B, K);
    ref::cross_entropy_forward(rl.data(), rp.data(), logits.data(), labels.data(), B, K);
    RC_EXPECT_CLOSE(l.data(), rl.data(), B, (test::Tol{1e-6, 1e-6}));  // measured 0
    RC_EXPECT_CLOSE(p.data(), rp.data(), B * K, (test::Tol{1e-7, 1e-6}));
    std::vector<float> d(size_t(B * K)), rd(size_t(B * K));
    cross_entropy_backward(ctx, d.data(), p.data(), labels.data(), B, K, 1.0f / float(B));
    ref::cross_entropy_backward(rd.data(), rp.data(), labels.data(), B, K, 1.0f / float(B));
    RC_EXPECT_CLOSE(d.data(), rd.data(), B * K, (test::Tol{1e-7, 1e-6}));
  }
}

TEST(Loss, HandComputedAndStable) {
  const ExecCtx ctx{};
  // logits (1, 2, 3), label 2: loss = log(e + e² + e³) - 3 = 0.40760596444437;
  // the same shifted by 1000 must give the same answer (no overflow).
  const float logits[] = {1, 2, 3, 1001, 1002, 1003};
  const int32_t labels[] = {2, 2};
  float losses[2], probs[6];
  cross_entropy_forward(ctx, losses, probs, logits, labels, 2, 3);
  EXPECT_NEAR(losses[0], 0.40760596444437, 1e-6);
  EXPECT_NEAR(losses[1], 0.40760596444437, 1e-6);
  EXPECT_NEAR(probs[0], 0.09003057317038, 1e-7);
  EXPECT_NEAR(probs[5], 0.66524095577, 1e-6);
}

TEST(LossRef, BackwardMatchesFiniteDifferences) {
  const int64_t B = 4, K = 5;
  auto logits = randn(B * K, 2, 2.0f);
  auto labels = labels_for(B, K);
  std::vector<float> losses(static_cast<size_t>(B)), probs(size_t(B * K)), d(size_t(B * K));
  const float scale = 1.0f / float(B);
  auto loss = [&] {
    ref::cross_entropy_forward(losses.data(), probs.data(), logits.data(), labels.data(), B, K);
    double s = 0;
    for (float l : losses) s += l;
    return s * scale;
  };
  loss();
  ref::cross_entropy_backward(d.data(), probs.data(), labels.data(), B, K, scale);
  EXPECT_LE(RC_GRAD_ERROR(d, test::numeric_grad(logits, loss, 1e-2f)), 1e-4);  // measured 1.3e-5 (fp32 losses)
}

}  // namespace
}  // namespace rc::kernels
