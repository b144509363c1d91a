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

// torch's ignore_index: a row labelled -100 adds nothing to the loss or the gradient, on
// both the kernel and its reference (the other rows are unchanged by it).
TEST(Loss, IgnoredLabelsGiveZeroLossAndGradient) {
  const ExecCtx ctx{};
  const int64_t B = 6, K = 4;
  auto logits = randn(B * K, 5, 3.0f);
  std::vector<int32_t> labels = {1, -100, 3, -100, 0, 2};
  std::vector<float> l(B), p(B * K), d(B * K), rl(B), rp(B * K), rd(B * K);
  cross_entropy_forward(ctx, l.data(), p.data(), logits.data(), labels.data(), B, K);
  cross_entropy_backward(ctx, d.data(), p.data(), labels.data(), B, K, 0.25f);
  ref::cross_entropy_forward(rl.data(), rp.data(), logits.data(), labels.data(), B, K);
  ref::cross_entropy_backward(rd.data(), rp.data(), labels.data(), B, K, 0.25f);
  for (int64_t b : {1, 3}) {
    EXPECT_EQ(l[size_t(b)], 0.0f);
    EXPECT_EQ(rl[size_t(b)], 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      EXPECT_EQ(d[size_t(b * K + k)], 0.0f);
      EXPECT_EQ(rd[size_t(b * K + k)], 0.0f);
    }
  }
  EXPECT_GT(l[0], 0.0f);
  RC_EXPECT_CLOSE(l.data(), rl.data(), B, (test::Tol{1e-6, 1e-6}));
  RC_EXPECT_CLOSE(d.data(), rd.data(), B * K, (test::Tol{1e-7, 1e-6}));
}

// Label smoothing (HF Trainer's label_smoothing_factor, torch's CrossEntropyLoss(label_smoothing)):
// CPU vs the reference with ignored rows, a hand value, and the reference backward vs finite
// differences.
TEST(Loss, LabelSmoothingMatchesRefHandValueAndFiniteDifferences) {
  const ExecCtx ctx{};
  for (auto [B, K] : {std::pair<int64_t, int64_t>{6, 3}, {7, 1000}}) {
    auto logits = randn(B * K, 9, 3.0f);
    auto labels = labels_for(B, K);
    labels[1] = -100;
    std::vector<float> l(static_cast<size_t>(B)), p(size_t(B * K)), d(size_t(B * K)), rl(static_cast<size_t>(B)),
        rp(size_t(B * K)), rd(size_t(B * K)), plain(static_cast<size_t>(B));
    cross_entropy_forward(ctx, l.data(), p.data(), logits.data(), labels.data(), B, K, 0.1f);
    cross_entropy_backward(ctx, d.data(), p.data(), labels.data(), B, K, 0.5f, 0.1f);
    ref::cross_entropy_forward(rl.data(), rp.data(), logits.data(), labels.data(), B, K, 0.1f);
    ref::cross_entropy_backward(rd.data(), rp.data(), labels.data(), B, K, 0.5f, 0.1f);
    RC_EXPECT_CLOSE(l.data(), rl.data(), B, (test::Tol{1e-6, 1e-6}));
    RC_EXPECT_CLOSE(d.data(), rd.data(), B * K, (test::Tol{1e-7, 1e-6}));
    EXPECT_EQ(l[1], 0.0f);
    for (int64_t k = 0; k < K; ++k) EXPECT_EQ(d[size_t(K + k)], 0.0f);
    cross_entropy_forward(ctx, plain.data(), p.data(), logits.data(), labels.data(), B, K);
    EXPECT_NE(plain[0], l[0]);  // smoothing changes the loss
  }
  // logits (1, 2, 3), label 2, ε 0.1: 0.9·(lse - 3) + 0.1·(lse - 2), lse = 3.40760596444437.
  const float logits[] = {1, 2, 3};
  const int32_t label[] = {2};
  float loss, probs[3], d[3];
  cross_entropy_forward(ctx, &loss, probs, logits, label, 1, 3, 0.1f);
  EXPECT_NEAR(loss, 0.9 * 0.40760596444437 + 0.1 * 1.40760596444437, 1e-6);
  // The gradient is probs minus the smoothed target (0.1/3, 0.1/3, 0.9 + 0.1/3).
  cross_entropy_backward(ctx, d, probs, label, 1, 3, 1.0f, 0.1f);
  EXPECT_NEAR(d[0], 0.09003057317038 - 0.1 / 3, 1e-6);
  EXPECT_NEAR(d[2], 0.66524095577 - 0.9 - 0.1 / 3, 1e-6);

  const int64_t B = 4, K = 5;
  auto x = randn(B * K, 2, 2.0f);
  auto labels = labels_for(B, K);
  std::vector<float> losses(static_cast<size_t>(B)), p(size_t(B * K)), g(size_t(B * K));
  auto total = [&] {
    ref::cross_entropy_forward(losses.data(), p.data(), x.data(), labels.data(), B, K, 0.2f);
    double s = 0;
    for (float v : losses) s += v;
    return s / double(B);
  };
  total();
  ref::cross_entropy_backward(g.data(), p.data(), labels.data(), B, K, 1.0f / float(B), 0.2f);
  EXPECT_LE(RC_GRAD_ERROR(g, test::numeric_grad(x, total, 1e-2f)), 1e-4);  // as the unsmoothed check
}

TEST(PointwiseLoss, MatchesRefAndHandValues) {
  const ExecCtx ctx{};
  for (PointwiseLoss kind : {PointwiseLoss::bce_with_logits, PointwiseLoss::squared_error})
    for (auto [B, K] : {std::pair<int64_t, int64_t>{1, 1}, {32, 3}, {7, 28}, {300, 64}}) {
      auto logits = randn(B * K, 6, 5.0f);
      auto targets = randn(B * K, 7, 1.0f);
      if (kind == PointwiseLoss::bce_with_logits)
        for (float& t : targets) t = t > 0 ? 1.0f : 0.0f;
      std::vector<float> l(static_cast<size_t>(B)), rl(static_cast<size_t>(B)), d(static_cast<size_t>(B * K)),
          rd(static_cast<size_t>(B * K));
      pointwise_loss_forward(ctx, kind, l.data(), logits.data(), targets.data(), B, K);
      ref::pointwise_loss_forward(kind, rl.data(), logits.data(), targets.data(), B, K);
      RC_EXPECT_CLOSE(l.data(), rl.data(), B, (test::Tol{1e-6, 1e-6}));
      pointwise_loss_backward(ctx, kind, d.data(), logits.data(), targets.data(), B, K, 1.0f / float(B * K));
      ref::pointwise_loss_backward(kind, rd.data(), logits.data(), targets.data(), B, K, 1.0f / float(B * K));
      RC_EXPECT_CLOSE(d.data(), rd.data(), B * K, (test::Tol{1e-7, 1e-6}));
    }
  // By hand: BCE(x = 2, y = 1) = log(1 + e^-2) = 0.126928011; BCE(x = -1, y = 1) = log(1 + e) =
  // 1.313261687; BCE(x = 0, y = 0) = log 2; squared error (3 - 0.5)² = 6.25.
  const float x[] = {2, -1, 0}, y[] = {1, 1, 0};
  float l[1], g[3];
  pointwise_loss_forward(ctx, PointwiseLoss::bce_with_logits, l, x, y, 1, 3);
  EXPECT_NEAR(l[0], 0.126928011 + 1.313261687 + 0.693147181, 1e-6);
  pointwise_loss_backward(ctx, PointwiseLoss::bce_with_logits, g, x, y, 1, 3, 1.0f);
  EXPECT_NEAR(g[0], 0.880797078 - 1, 1e-7);  // σ(2) - 1
  EXPECT_NEAR(g[2], 0.5, 1e-7);
  const float xr[] = {3}, yr[] = {0.5f};
  pointwise_loss_forward(ctx, PointwiseLoss::squared_error, l, xr, yr, 1, 1);
  EXPECT_NEAR(l[0], 6.25, 1e-6);
  pointwise_loss_backward(ctx, PointwiseLoss::squared_error, g, xr, yr, 1, 1, 1.0f);
  EXPECT_NEAR(g[0], 5.0, 1e-6);
}

// The kernel's shifted BCE stays finite where the textbook form overflows (x = ±200 in fp32).
TEST(PointwiseLoss, BceIsStableOnLargeLogits) {
  const ExecCtx ctx{};
  const float x[] = {200, -200, 200, -200}, y[] = {1, 0, 0, 1};
  float l[4], g[4];
  pointwise_loss_forward(ctx, PointwiseLoss::bce_with_logits, l, x, y, 4, 1);
  pointwise_loss_backward(ctx, PointwiseLoss::bce_with_logits, g, x, y, 4, 1, 1.0f);
  EXPECT_NEAR(l[0], 0.0, 1e-6);
  EXPECT_NEAR(l[1], 0.0, 1e-6);
  EXPECT_NEAR(l[2], 200.0, 1e-4);
  EXPECT_NEAR(l[3], 200.0, 1e-4);
  EXPECT_NEAR(g[2], 1.0, 1e-7);
  EXPECT_NEAR(g[3], -1.0, 1e-7);
}

TEST(PointwiseLossRef, BackwardMatchesFiniteDifferences) {
  for (PointwiseLoss kind : {PointwiseLoss::bce_with_logits, PointwiseLoss::squared_error}) {
    const int64_t B = 4, K = 3;
    auto logits = randn(B * K, 8, 2.0f);
    auto targets = randn(B * K, 9, 1.0f);
    if (kind == PointwiseLoss::bce_with_logits)
      for (float& t : targets) t = t > 0 ? 1.0f : 0.0f;
    std::vector<float> losses(static_cast<size_t>(B)), d(static_cast<size_t>(B * K));
    const float scale = 1.0f / float(B * K);
    auto loss = [&] {
      ref::pointwise_loss_forward(kind, losses.data(), logits.data(), targets.data(), B, K);
      double s = 0;
      for (float l : losses) s += l;
      return s * scale;
    };
    ref::pointwise_loss_backward(kind, d.data(), logits.data(), targets.data(), B, K, scale);
    EXPECT_LE(RC_GRAD_ERROR(d, test::numeric_grad(logits, loss, 1e-2f)), 1e-4);
  }
}

}  // namespace
}  // namespace rc::kernels
