// dropout_forward / dropout_backward: reproducibility from the seed, keep-rate ≈ 1-p, exact
// scaling, backward = the same mask, CPU == reference, and thread-count independence.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/dropout.h"

namespace rc::kernels {
namespace {

using test::randn;

TEST(Dropout, ZeroPCopies) {
  const ExecCtx ctx{};
  auto x = randn(1001, 1);
  std::vector<float> y(x.size(), -1.0f);
  dropout_forward(ctx, y.data(), x.data(), int64_t(x.size()), 0.0f, 42);
  EXPECT_EQ(y, x);
}

TEST(Dropout, ReproducibleAndMatchesRef) {
  const ExecCtx ctx{};
  const int64_t n = 100003;
  auto x = randn(n, 2);
  std::vector<float> a(x.size()), b(x.size()), c(x.size()), r(x.size());
  dropout_forward(ctx, a.data(), x.data(), n, 0.1f, 7);
  dropout_forward(ctx, b.data(), x.data(), n, 0.1f, 7);
  dropout_forward(ctx, c.data(), x.data(), n, 0.1f, 8);
  ref::dropout_forward(r.data(), x.data(), n, 0.1f, 7);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, r);
  EXPECT_NE(a, c);  // another seed, another mask
}

TEST(Dropout, SameResultForAnyThreadCount) {
  const ExecCtx ctx{};
  const int64_t n = 200000;
  auto x = randn(n, 3);
  std::vector<float> one(x.size()), many(x.size());
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  dropout_forward(ctx, one.data(), x.data(), n, 0.3f, 11);
  omp_set_num_threads(4);
  dropout_forward(ctx, many.data(), x.data(), n, 0.3f, 11);
  omp_set_num_threads(saved);
  EXPECT_EQ(one, many);
}

TEST(Dropout, KeepRateAndScale) {
  const ExecCtx ctx{};
  const int64_t n = 1 << 20;
  std::vector<float> x(static_cast<size_t>(n), 1.0f), y(static_cast<size_t>(n));
  for (float p : {0.1f, 0.5f, 0.9f}) {
    dropout_forward(ctx, y.data(), x.data(), n, p, 123);
    int64_t kept = 0;
    for (float v : y) {
      if (v != 0.0f) {
        ++kept;
        ASSERT_EQ(v, 1.0f / (1.0f - p));
      }
    }
    const double rate = double(kept) / double(n), sd = std::sqrt(p * (1 - p) / double(n));
    EXPECT_NEAR(rate, 1.0 - p, 5 * sd) << "p=" << p;  // measured within 2 sd
  }
}

TEST(Dropout, BackwardUsesTheSameMask) {
  const ExecCtx ctx{};
  const int64_t n = 5000;
  auto x = randn(n, 4), dy = randn(n, 5);
  std::vector<float> y(x.size()), dx(x.size());
  dropout_forward(ctx, y.data(), x.data(), n, 0.25f, 99);
  dropout_backward(ctx, dx.data(), dy.data(), n, 0.25f, 99);
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = size_t(i);
    ASSERT_EQ(y[k] == 0.0f, dx[k] == 0.0f) << i;
    if (y[k] != 0.0f) {
      ASSERT_EQ(y[k], x[k] * (1.0f / 0.75f));
      ASSERT_EQ(dx[k], dy[k] * (1.0f / 0.75f));
    }
  }
  // In place (dx aliases dy).
  auto inplace = dy;
  dropout_backward(ctx, inplace.data(), inplace.data(), n, 0.25f, 99);
  EXPECT_EQ(inplace, dx);
}

// The data-parallel contract (dropout.h): a sample's mask depends on its global index and its
// place (t, c) in the sample only, not on its row in the micro-batch nor on the padded length.
// Sample 41 sits at row 0 of a (1, 16, C) batch and at row 3 of a (4, 32, C) one
// (first_sample 38): its first 16 positions must get the same mask, on the CPU and the ref.
TEST(Dropout, RowMaskIndependentOfBatchRowAndPaddedLength) {
  const ExecCtx ctx{};
  const int64_t C = 24, sample = 41;
  const float p = 0.3f;
  auto row = randn(32 * C, 21);  // the sample's 32 positions (only 16 used in the short batch)
  std::vector<float> alone(size_t(16 * C)), alone_ref(alone.size());
  dropout_forward(ctx, alone.data(), row.data(), 1, 16 * C, p, 5, uint64_t(sample));
  ref::dropout_forward(alone_ref.data(), row.data(), 1, 16 * C, p, 5, uint64_t(sample));
  auto big = randn(4 * 32 * C, 22);
  std::copy(row.begin(), row.end(), big.begin() + 3 * 32 * C);
  std::vector<float> batched(big.size()), batched_ref(big.size());
  dropout_forward(ctx, batched.data(), big.data(), 4, 32 * C, p, 5, uint64_t(sample - 3));
  ref::dropout_forward(batched_ref.data(), big.data(), 4, 32 * C, p, 5, uint64_t(sample - 3));
  EXPECT_EQ(alone, alone_ref);
  EXPECT_EQ(batched, batched_ref);
  int64_t dropped = 0;
  for (int64_t k = 0; k < 16 * C; ++k) {
    ASSERT_EQ(batched[size_t(3 * 32 * C + k)], alone[size_t(k)]) << "element " << k;
    dropped += alone[size_t(k)] == 0.0f;
  }
  EXPECT_GT(dropped, 16 * C / 5);  // the mask is not trivial (expect 30%)
  // Another sample index, or the old layout's key (the row's place in its batch), differs.
  std::vector<float> other(alone.size());
  dropout_forward(ctx, other.data(), row.data(), 1, 16 * C, p, 5, uint64_t(sample + 1));
  EXPECT_NE(other, alone);
  dropout_forward(ctx, other.data(), row.data(), 1, 16 * C, p, 5, 0);
  EXPECT_NE(other, alone);
}

// The splitmix64 stream (core/counter_rng.h) against its published first outputs for state 0
// (Vigna's splitmix64.c): weight init, masks and data order depend on these staying fixed.
TEST(CounterRng, SplitMix64KnownValues) {
  uint64_t state = 0;
  EXPECT_EQ(rng::splitmix64(state), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(rng::splitmix64(state), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(rng::splitmix64(state), 0x06C45D188009454Full);
  EXPECT_EQ(dropout_uniform(7, 11), rng::uniform24(7, 11));
}

// Dropout is linear in x: finite differences of L = Σ w·dropout(x) give exactly w·mask/(1-p).
TEST(DropoutRef, BackwardMatchesFiniteDifferences) {
  const ExecCtx ctx{};
  const int64_t n = 50;
  auto x = randn(n, 6), w = randn(n, 7);
  std::vector<float> y(x.size()), dx(x.size());
  auto loss = [&] {
    ref::dropout_forward(y.data(), x.data(), n, 0.4f, 5);
    return test::dot(w, y);
  };
  dropout_backward(ctx, dx.data(), w.data(), n, 0.4f, 5);
  EXPECT_LE(RC_GRAD_ERROR(dx, test::numeric_grad(x, loss, 1e-2f)), 1e-5);  // measured 9.6e-7
}

}  // namespace
}  // namespace rc::kernels
