// rows.h on the CPU against its ref twin (kernels/ref/rows.cpp): position ids, first-token
// gather / scatter, the mean of per-row losses, plus a finite-difference check of the loss
// the trainer takes (mean over rows of cross-entropy) against cross_entropy_backward's 1/B.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernel_test_util.h"
#include "kernels/loss.h"
#include "kernels/rows.h"

namespace rc::kernels {
namespace {

const ExecCtx kCpu{};

TEST(Rows, PositionIdsAreHfsRunningCountOfNonPadTokens) {
  // <s> a b </s> pad pad, and a row that is all pad after <s> (pad = 1, as RoBERTa).
  const std::vector<int32_t> ids = {0, 5, 6, 2, 1, 1, 0, 1, 7, 1, 8, 2};
  std::vector<int32_t> pos(ids.size(), -7), want(ids.size(), -9);
  position_ids(kCpu, pos.data(), ids.data(), 2, 6, 1);
  ref::position_ids(want.data(), ids.data(), 2, 6, 1);
  // HF: cumsum(mask) * mask + padding_idx
  const std::vector<int32_t> hf = {2, 3, 4, 5, 1, 1, 2, 1, 3, 1, 4, 5};
  EXPECT_EQ(pos, hf);
  EXPECT_EQ(want, hf);
}

TEST(Rows, GatherAndScatterFirstTokensMatchRef) {
  for (auto [B, T, C] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 4}, {3, 5, 7}, {8, 17, 64}}) {
    const auto src = test::randn(B * T * C, uint64_t(B * T), 1.0f);
    std::vector<float> got(size_t(B * C), 9.0f), want(size_t(B * C), -9.0f);
    gather_first_tokens(kCpu, got.data(), src.data(), B, T, C);
    ref::gather_first_tokens(want.data(), src.data(), B, T, C);
    EXPECT_EQ(got, want);
    for (int64_t b = 0; b < B; ++b) EXPECT_EQ(got[size_t(b * C)], src[size_t(b * T * C)]);

    const auto rows = test::randn(B * C, 7, 1.0f);
    std::vector<float> sg(size_t(B * T * C), 5.0f), sw(size_t(B * T * C), -5.0f);
    scatter_first_tokens(kCpu, sg.data(), rows.data(), B, T, C);
    ref::scatter_first_tokens(sw.data(), rows.data(), B, T, C);
    EXPECT_EQ(sg, sw);
    // scatter then gather is the identity on the rows; every other row is zero.
    std::vector<float> back(size_t(B * C));
    gather_first_tokens(kCpu, back.data(), sg.data(), B, T, C);
    EXPECT_EQ(back, rows);
    double others = 0;
    for (int64_t r = 0; r < B * T; ++r)
      if (r % T != 0)
        for (int64_t c = 0; c < C; ++c) others += std::fabs(sg[size_t(r * C + c)]);
    EXPECT_EQ(others, 0.0);
  }
}

TEST(Rows, GatherAndScatterRowsByIndexMatchRef) {
  const int64_t rows = 11, C = 5;
  const std::vector<int64_t> index = {7, 0, 10, 3};  // distinct, unordered
  const int64_t M = int64_t(index.size());
  const auto src = test::randn(rows * C, 3, 1.0f);
  std::vector<float> got(size_t(M * C), 9.0f), want(size_t(M * C), -9.0f);
  gather_rows(kCpu, got.data(), src.data(), index.data(), M, C);
  ref::gather_rows(want.data(), src.data(), index.data(), M, C);
  EXPECT_EQ(got, want);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) EXPECT_EQ(got[size_t(m * C + c)], src[size_t(index[size_t(m)] * C + c)]);

  // scatter into a zeroed gradient: the indexed rows get the values, the others stay 0.
  std::vector<float> sg(size_t(rows * C), 0.0f), sw(size_t(rows * C), 0.0f);
  scatter_rows(kCpu, sg.data(), got.data(), index.data(), M, C);
  ref::scatter_rows(sw.data(), got.data(), index.data(), M, C);
  EXPECT_EQ(sg, sw);
  for (int64_t r = 0; r < rows; ++r) {
    const bool hit = std::find(index.begin(), index.end(), r) != index.end();
    for (int64_t c = 0; c < C; ++c) EXPECT_EQ(sg[size_t(r * C + c)], hit ? src[size_t(r * C + c)] : 0.0f) << r;
  }
  gather_rows(kCpu, got.data(), src.data(), index.data(), 0, C);  // M = 0: nothing touched
  EXPECT_EQ(got, want);
}

TEST(Rows, MeanMatchesRefAndIsTheSumOverN) {
  for (int64_t n : {1, 3, 32, 1000}) {
    const auto x = test::randn(n, uint64_t(n), 2.0f, 1.0f);
    float got = 0, want = 0;
    mean_forward(kCpu, &got, x.data(), n);
    ref::mean_forward(&want, x.data(), n);
    EXPECT_EQ(got, want) << n;
    double s = 0;
    for (float v : x) s += v;
    EXPECT_NEAR(got, s / double(n), 1e-6 * (1 + std::fabs(s / double(n))));
  }
}

// L(logits) = mean_b CE(logits_b, label_b): the gradient the model uses is
// cross_entropy_backward with scale 1/B. Central differences in fp32 on a scale where the
// step error is small (measured max |Δ| ≈ 1e-5 here; bound 1e-3).
TEST(Rows, MeanCrossEntropyGradientMatchesFiniteDifferences) {
  const int64_t B = 5, K = 4;
  auto logits = test::randn(B * K, 3, 1.5f);
  const std::vector<int32_t> labels = {0, 3, 1, 2, 3};
  std::vector<float> losses(B), probs(B * K), dlogits(B * K);
  auto loss_at = [&](const std::vector<float>& l) {
    std::vector<float> ls(B), pr(B * K);
    cross_entropy_forward(kCpu, ls.data(), pr.data(), l.data(), labels.data(), B, K);
    float m = 0;
    mean_forward(kCpu, &m, ls.data(), B);
    return double(m);
  };
  cross_entropy_forward(kCpu, losses.data(), probs.data(), logits.data(), labels.data(), B, K);
  cross_entropy_backward(kCpu, dlogits.data(), probs.data(), labels.data(), B, K, 1.0f / float(B));
  const float h = 1e-2f;
  double worst = 0;
  for (int64_t i = 0; i < B * K; ++i) {
    auto up = logits, dn = logits;
    up[size_t(i)] += h;
    dn[size_t(i)] -= h;
    const double fd = (loss_at(up) - loss_at(dn)) / (2.0 * h);
    worst = std::max(worst, std::fabs(fd - double(dlogits[size_t(i)])));
    EXPECT_NEAR(dlogits[size_t(i)], fd, 1e-3) << "logit " << i;
  }
  std::printf("    mean CE: max |analytic - finite difference| %.3g\n", worst);
}

}  // namespace
}  // namespace rc::kernels
