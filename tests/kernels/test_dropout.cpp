// dropout_forward / dropout_backward: reproducibility from the seed, keep-rate ≈ 1-p, exact
// scaling, backward = the same mask, CPU == reference, and thread-count independence.
#include <gtest/gtest.h>
#include <omp.h>

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
