// attention_forward / attention_backward: CPU vs the reference (padding lengths, dropout),
// padding has no effect on the real rows, padding rows are zero, probs may be null, and the
// reference backward vs finite differences (with and without dropout, same seed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/attention.h"

namespace rc::kernels {
namespace {

using test::randn;

struct Case {
  int64_t B, T, H, D;
  std::vector<int32_t> lens;
  float p;
};

const Case kCases[] = {
    {1, 1, 1, 4, {1}, 0.0f},             // one token
    {2, 7, 2, 5, {7, 3}, 0.0f},          // odd sizes, padding
    {3, 33, 12, 64, {33, 1, 17}, 0.0f},  // roberta heads, tail lengths
    {2, 64, 12, 64, {64, 40}, 0.1f},     // with attention dropout
    {1, 130, 4, 64, {129}, 0.0f},        // > 128 keys
    {2, 9, 3, 16, {0, 9}, 0.2f},         // an empty row
};

TEST(Attention, ForwardAndBackwardMatchRef) {
  const ExecCtx ctx{};
  for (const Case& c : kCases) {
    const int64_t C = c.H * c.D, BT = c.B * c.T;
    auto qkv = randn(BT * 3 * C, 1, 1.5f), dout = randn(BT * C, 2);
    std::vector<float> out(size_t(BT * C), 9.0f), probs(size_t(c.B * c.H * c.T * c.T), 9.0f);
    std::vector<float> rout(out.size()), rprobs(probs.size());
    attention_forward(ctx, out.data(), probs.data(), qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p, 77);
    ref::attention_forward(rout.data(), rprobs.data(), qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p, 77);
    // fp32 sums over up to 130 keys with cancellation: measured max |Δ| 4.3e-6 (out), 7.7e-7 (probs)
    RC_EXPECT_CLOSE(out.data(), rout.data(), BT * C, (test::Tol{2e-5, 1e-5})) << "T=" << c.T << " H=" << c.H;
    RC_EXPECT_CLOSE(probs.data(), rprobs.data(), int64_t(probs.size()), (test::Tol{5e-6, 1e-5}));
    // Inference form (no probs) gives the same out.
    std::vector<float> out2(out.size(), 5.0f);
    attention_forward(ctx, out2.data(), nullptr, qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p, 77);
    EXPECT_EQ(out2, out);

    std::vector<float> dqkv(qkv.size(), 9.0f), rdqkv(qkv.size());
    attention_backward(ctx, dqkv.data(), dout.data(), qkv.data(), probs.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p,
                       77);
    ref::attention_backward(rdqkv.data(), dout.data(), qkv.data(), rprobs.data(), c.lens.data(), c.B, c.T, c.H, c.D,
                            c.p, 77);
    // measured max |Δ| 5.3e-6 on |dqkv| up to ~10
    RC_EXPECT_CLOSE(dqkv.data(), rdqkv.data(), int64_t(qkv.size()), (test::Tol{3e-5, 1e-5}))
        << "T=" << c.T << " H=" << c.H;
    // Padding rows: zero output, zero probs rows, zero gradient.
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t t = c.lens[size_t(b)]; t < c.T; ++t) {
        for (int64_t k = 0; k < C; ++k) ASSERT_EQ(out[size_t((b * c.T + t) * C + k)], 0.0f);
        for (int64_t k = 0; k < 3 * C; ++k) ASSERT_EQ(dqkv[size_t((b * c.T + t) * 3 * C + k)], 0.0f);
      }
  }
}

// The real rows of a padded batch equal the same sequence run alone with T = its length, even
// when the padding positions hold large garbage.
TEST(Attention, PaddingHasNoEffectOnRealRows) {
  const ExecCtx ctx{};
  const int64_t T = 20, H = 3, D = 8, C = H * D;
  for (int32_t L : {1, 7, 19, 20}) {
    auto qkv = randn(T * 3 * C, 3), dout = randn(T * C, 4);
    for (int64_t t = L; t < T; ++t)
      for (int64_t k = 0; k < 3 * C; ++k) qkv[size_t(t * 3 * C + k)] = 1e3f * float(k % 7 - 3);
    std::vector<float> out(size_t(T * C)), probs(size_t(H * T * T)), dqkv(qkv.size());
    attention_forward(ctx, out.data(), probs.data(), qkv.data(), &L, 1, T, H, D, 0.0f, 0);
    attention_backward(ctx, dqkv.data(), dout.data(), qkv.data(), probs.data(), &L, 1, T, H, D, 0.0f, 0);

    std::vector<float> out_s(size_t(L * C)), probs_s(size_t(H * L * L)), dqkv_s(size_t(L * 3 * C));
    attention_forward(ctx, out_s.data(), probs_s.data(), qkv.data(), &L, 1, L, H, D, 0.0f, 0);
    attention_backward(ctx, dqkv_s.data(), dout.data(), qkv.data(), probs_s.data(), &L, 1, L, H, D, 0.0f, 0);
    for (int64_t i = 0; i < L * C; ++i) ASSERT_EQ(out[size_t(i)], out_s[size_t(i)]) << "L=" << L;
    for (int64_t i = 0; i < L * 3 * C; ++i) ASSERT_EQ(dqkv[size_t(i)], dqkv_s[size_t(i)]) << "L=" << L;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < T; ++j)
          ASSERT_EQ(probs[size_t((h * T + i) * T + j)], j < L ? probs_s[size_t((h * L + i) * L + j)] : 0.0f);
  }
}

TEST(Attention, DropoutIsReproducibleAndSeedDependent) {
  const ExecCtx ctx{};
  const int64_t B = 2, T = 16, H = 2, D = 8, C = H * D;
  const int32_t lens[] = {16, 11};
  auto qkv = randn(B * T * 3 * C, 5);
  std::vector<float> a(size_t(B * T * C)), b = a, c = a, nodrop = a;
  attention_forward(ctx, a.data(), nullptr, qkv.data(), lens, B, T, H, D, 0.3f, 1);
  attention_forward(ctx, b.data(), nullptr, qkv.data(), lens, B, T, H, D, 0.3f, 1);
  attention_forward(ctx, c.data(), nullptr, qkv.data(), lens, B, T, H, D, 0.3f, 2);
  attention_forward(ctx, nodrop.data(), nullptr, qkv.data(), lens, B, T, H, D, 0.0f, 1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, nodrop);
}

// Attention dropout keyed by (global sample, h, i, j) (attention.h): sample 41 alone in a
// batch padded to T = 16 (row 0) and at row 3 of a batch padded to T = 32 (first sample 38)
// gets the same output rows and the same backward, on the CPU and the reference.
TEST(Attention, DropoutMaskIndependentOfBatchRowAndPaddedLength) {
  const ExecCtx ctx{};
  const int64_t H = 2, D = 8, C = H * D, C3 = 3 * C, L = 13;
  const float p = 0.3f;
  const uint64_t seed = 9, sample = 41;
  auto row = randn(16 * C3, 31, 1.5f), drow = randn(16 * C, 32);
  auto run = [&](bool use_ref, int64_t B, int64_t T, int64_t at, std::vector<float>& out, std::vector<float>& dqkv) {
    auto qkv = randn(B * T * C3, 33, 1.5f), dout = randn(B * T * C, 34);
    for (int64_t t = 0; t < 16; ++t) {
      std::copy_n(row.begin() + t * C3, C3, qkv.begin() + (at * T + t) * C3);
      std::copy_n(drow.begin() + t * C, C, dout.begin() + (at * T + t) * C);
    }
    std::vector<int32_t> lens(static_cast<size_t>(B), static_cast<int32_t>(T));
    lens[size_t(at)] = int32_t(L);
    std::vector<float> o(size_t(B * T * C)), probs(size_t(B * H * T * T)), dq(qkv.size());
    const uint64_t row0 = sample - uint64_t(at);
    if (use_ref) {
      ref::attention_forward(o.data(), probs.data(), qkv.data(), lens.data(), B, T, H, D, p, seed, row0);
      ref::attention_backward(dq.data(), dout.data(), qkv.data(), probs.data(), lens.data(), B, T, H, D, p, seed, row0);
    } else {
      attention_forward(ctx, o.data(), probs.data(), qkv.data(), lens.data(), B, T, H, D, p, seed, row0);
      attention_backward(ctx, dq.data(), dout.data(), qkv.data(), probs.data(), lens.data(), B, T, H, D, p, seed, row0);
    }
    out.assign(o.begin() + at * T * C, o.begin() + (at * T + L) * C);
    dqkv.assign(dq.begin() + at * T * C3, dq.begin() + (at * T + L) * C3);
  };
  for (bool use_ref : {true, false}) {
    std::vector<float> o1, d1, o2, d2, o3, d3;
    run(use_ref, 1, 16, 0, o1, d1);
    run(use_ref, 4, 32, 3, o2, d2);
    auto max_diff = [](const std::vector<float>& a, const std::vector<float>& b) {
      double m = 0;
      for (size_t k = 0; k < a.size(); ++k) m = std::max(m, double(std::fabs(a[k] - b[k])));
      return m;
    };
    ASSERT_EQ(o1.size(), o2.size());
    ASSERT_EQ(d1.size(), d2.size());
    // The same floats in the same order either way (measured 0 on ref and CPU); 1e-6 leaves
    // room for a SIMD path that blocks rows differently.
    EXPECT_LE(max_diff(o1, o2), 1e-6) << (use_ref ? "ref" : "cpu");
    EXPECT_LE(max_diff(d1, d2), 1e-6) << (use_ref ? "ref" : "cpu");
    std::printf("%s: max |d out| %.3g, max |d dqkv| %.3g\n", use_ref ? "ref" : "cpu", max_diff(o1, o2),
                max_diff(d1, d2));
    // The same data under another sample index (what keying by the row's place gives row 3
    // of a batch starting at 38): another mask, far off.
    double worst = 0;
    {
      std::vector<int32_t> lens{int32_t(L)};
      std::vector<float> o(size_t(16 * C)), probs(size_t(H * 16 * 16));
      ref::attention_forward(o.data(), probs.data(), row.data(), lens.data(), 1, 16, H, D, p, seed, sample - 3);
      for (int64_t k = 0; k < L * C; ++k) worst = std::max(worst, double(std::fabs(o[size_t(k)] - o1[size_t(k)])));
    }
    EXPECT_GT(worst, 1e-2) << "another sample index must give another mask";
  }
}

// L = Σ w·out; probs are recomputed inside the loss, and backward gets the forward's probs.
void check_ref_grad(float p) {
  const int64_t B = 2, T = 4, H = 2, D = 3, C = H * D;
  const int32_t lens[] = {4, 2};
  auto qkv = randn(B * T * 3 * C, 6), w = randn(B * T * C, 7);
  std::vector<float> out(size_t(B * T * C)), probs(size_t(B * H * T * T));
  auto loss = [&] {
    ref::attention_forward(out.data(), probs.data(), qkv.data(), lens, B, T, H, D, p, 31);
    return test::dot(w, out);
  };
  loss();
  std::vector<float> dqkv(qkv.size());
  ref::attention_backward(dqkv.data(), w.data(), qkv.data(), probs.data(), lens, B, T, H, D, p, 31);
  auto num = test::numeric_grad(qkv, loss, 1e-2f);
  EXPECT_LE(RC_GRAD_ERROR(dqkv, num), 1e-4) << "p=" << p;  // measured 8.3e-6 (p=0), 5.0e-6 (p=0.3)
  // Padding rows (b=1, t≥2) have no influence: their numeric gradient is 0 up to the stencil's
  // own double rounding (F - 8F + 8F - F ≠ 0 exactly; measured 7.4e-15).
  for (int64_t t = 2; t < T; ++t)
    for (int64_t k = 0; k < 3 * C; ++k) EXPECT_NEAR(num[size_t(((1 * T) + t) * 3 * C + k)], 0.0, 1e-12);
}

TEST(AttentionRef, BackwardMatchesFiniteDifferences) { check_ref_grad(0.0f); }
TEST(AttentionRef, BackwardWithDropoutMatchesFiniteDifferences) { check_ref_grad(0.3f); }

}  // namespace
}  // namespace rc::kernels
