// gelu_erf, gelu_tanh ("gelu_new"), tanh, relu and add: CPU vs the reference (incl. the vectorised erf), in-place
// aliasing, and the reference backward vs finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/activation.h"

namespace rc::kernels {
namespace {

using test::randn;
const int64_t kSizes[] = {1, 15, 16, 17, 768 * 37 + 5, 3072 * 64};

// Inputs covering GELU's regimes: the bulk, the tails where Φ saturates, and tiny values.
std::vector<float> gelu_inputs(int64_t n, uint64_t seed) {
  auto x = randn(n, seed, 3.0f);
  const float special[] = {0.0f, -0.0f, 1e-30f, -1e-7f, 5.9f, -5.9f, 10.0f, -10.0f, 40.0f, -40.0f, 3.5f, -3.5f};
  for (int64_t i = 0; i < n && i < int64_t(std::size(special)); ++i) x[size_t(i * 7 % n)] = special[i];
  return x;
}

TEST(Activation, GeluForwardMatchesRef) {
  const ExecCtx ctx{};
  for (int64_t n : kSizes) {
    auto x = gelu_inputs(n, 1);
    std::vector<float> y(static_cast<size_t>(n)), ry(static_cast<size_t>(n));
    gelu_erf_forward(ctx, y.data(), x.data(), n);
    ref::gelu_erf_forward(ry.data(), x.data(), n);
    // measured max |Δ| 4.8e-7 (both paths)
    RC_EXPECT_CLOSE(y.data(), ry.data(), n, (test::Tol{1e-6, 1e-6})) << "n=" << n << " isa=" << test::isa_label();
    auto inplace = x;
    gelu_erf_forward(ctx, inplace.data(), inplace.data(), n);
    EXPECT_EQ(inplace, y);
  }
}

TEST(Activation, GeluBackwardMatchesRef) {
  const ExecCtx ctx{};
  for (int64_t n : kSizes) {
    auto x = gelu_inputs(n, 2), dy = randn(n, 3);
    std::vector<float> dx(static_cast<size_t>(n)), rdx(static_cast<size_t>(n));
    gelu_erf_backward(ctx, dx.data(), dy.data(), x.data(), n);
    ref::gelu_erf_backward(rdx.data(), dy.data(), x.data(), n);
    // measured max |Δ| 7.2e-7
    RC_EXPECT_CLOSE(dx.data(), rdx.data(), n, (test::Tol{2e-6, 1e-5})) << "n=" << n << " isa=" << test::isa_label();
    auto inplace = dy;
    gelu_erf_backward(ctx, inplace.data(), inplace.data(), x.data(), n);
    EXPECT_EQ(inplace, dx);
  }
}

TEST(Activation, TanhAndAddMatchRef) {
  const ExecCtx ctx{};
  for (int64_t n : kSizes) {
    auto x = randn(n, 4, 2.0f), dy = randn(n, 5);
    std::vector<float> y(static_cast<size_t>(n)), ry(static_cast<size_t>(n)), dx(static_cast<size_t>(n)),
        rdx(static_cast<size_t>(n)), s(static_cast<size_t>(n));
    tanh_forward(ctx, y.data(), x.data(), n);
    ref::tanh_forward(ry.data(), x.data(), n);
    RC_EXPECT_CLOSE(y.data(), ry.data(), n, (test::Tol{1e-6, 1e-6}));  // measured 1.2e-7
    tanh_backward(ctx, dx.data(), dy.data(), y.data(), n);
    ref::tanh_backward(rdx.data(), dy.data(), y.data(), n);
    RC_EXPECT_CLOSE(dx.data(), rdx.data(), n, (test::Tol{1e-6, 1e-6}));  // measured 2.4e-7
    add(ctx, s.data(), x.data(), dy.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(s[size_t(i)], x[size_t(i)] + dy[size_t(i)]);
  }
}

TEST(ActivationRef, GeluMatchesErfDefinitionAndNotTanh) {
  // 0.5·x·(1+erf(x/√2)) at x = 1: 0.8413447460685429; the tanh approximation gives 0.8411920.
  float x = 1.0f, y = 0;
  ref::gelu_erf_forward(&y, &x, 1);
  EXPECT_NEAR(y, 0.8413447460685429, 1e-7);
  EXPECT_GT(std::fabs(y - 0.8411920), 1e-4);
}

TEST(ActivationRef, BackwardMatchesFiniteDifferences) {
  const int64_t n = 40;
  auto x = randn(n, 6, 2.0f), w = randn(n, 7);
  std::vector<float> y(static_cast<size_t>(n));
  auto gelu_loss = [&] {
    ref::gelu_erf_forward(y.data(), x.data(), n);
    return test::dot(w, y);
  };
  std::vector<float> dx(static_cast<size_t>(n));
  ref::gelu_erf_backward(dx.data(), w.data(), x.data(), n);
  EXPECT_LE(RC_GRAD_ERROR(dx, test::numeric_grad(x, gelu_loss, 1e-2f)), 1e-5);  // measured 5.3e-6

  auto tanh_loss = [&] {
    ref::tanh_forward(y.data(), x.data(), n);
    return test::dot(w, y);
  };
  tanh_loss();
  ref::tanh_backward(dx.data(), w.data(), y.data(), n);
  EXPECT_LE(RC_GRAD_ERROR(dx, test::numeric_grad(x, tanh_loss, 1e-2f)), 1e-5);  // measured 4.2e-6
}

// ReLU (DistilBERT's pre_classifier activation): CPU equals the reference bit for bit, in
// place too; 0 and -0 give 0 and pass no gradient, as torch's threshold_backward.
TEST(Activation, ReluMatchesRef) {
  const ExecCtx ctx{};
  for (int64_t n : kSizes) {
    auto x = randn(n, 8, 2.0f), dy = randn(n, 9);
    x[0] = 0.0f;
    if (n > 1) x[1] = -0.0f;
    std::vector<float> y(static_cast<size_t>(n)), ry(static_cast<size_t>(n)), rdx(static_cast<size_t>(n));
    relu_forward(ctx, y.data(), x.data(), n);
    ref::relu_forward(ry.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[size_t(i)], ry[size_t(i)]) << i;
    EXPECT_EQ(y[0], 0.0f);
    ref::relu_backward(rdx.data(), dy.data(), ry.data(), n);
    EXPECT_EQ(rdx[0], 0.0f);
    relu_backward(ctx, dy.data(), dy.data(), y.data(), n);  // in place
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(dy[size_t(i)], rdx[size_t(i)]) << i;
    relu_forward(ctx, x.data(), x.data(), n);  // in place
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(x[size_t(i)], ry[size_t(i)]) << i;
  }
}

TEST(ActivationRef, ReluBackwardMatchesFiniteDifferences) {
  const int64_t n = 40;
  auto x = randn(n, 10, 2.0f), w = randn(n, 11);
  for (float& v : x)
    if (std::fabs(v) < 0.05f) v = v < 0 ? -0.5f : 0.5f;  // away from the kink, where the step would cross it
  std::vector<float> y(static_cast<size_t>(n)), dx(static_cast<size_t>(n));
  auto relu_loss = [&] {
    ref::relu_forward(y.data(), x.data(), n);
    return test::dot(w, y);
  };
  relu_loss();
  ref::relu_backward(dx.data(), w.data(), y.data(), n);
  EXPECT_LE(RC_GRAD_ERROR(dx, test::numeric_grad(x, relu_loss, 1e-2f)), 1e-5);
}

// "gelu_new" (NewGELUActivation): CPU vs the reference, the reference against the formula's
// known value and against finite differences.
TEST(Activation, GeluTanhMatchesRef) {
  const ExecCtx ctx{};
  for (int64_t n : kSizes) {
    auto x = gelu_inputs(n, 12), dy = randn(n, 13);
    std::vector<float> y(static_cast<size_t>(n)), ry(static_cast<size_t>(n)), dx(static_cast<size_t>(n)),
        rdx(static_cast<size_t>(n));
    gelu_tanh_forward(ctx, y.data(), x.data(), n);
    ref::gelu_tanh_forward(ry.data(), x.data(), n);
    RC_EXPECT_CLOSE(y.data(), ry.data(), n, (test::Tol{1e-6, 1e-6}));
    gelu_tanh_backward(ctx, dx.data(), dy.data(), x.data(), n);
    ref::gelu_tanh_backward(rdx.data(), dy.data(), x.data(), n);
    RC_EXPECT_CLOSE(dx.data(), rdx.data(), n, (test::Tol{1e-6, 1e-6}));
  }
}

TEST(ActivationRef, GeluTanhIsTheTanhApproximation) {
  // 0.5·(1 + tanh(√(2/π)·1.044715)) at x = 1: 0.8411919906082768, not erf's 0.8413447.
  float x = 1.0f, y = 0;
  ref::gelu_tanh_forward(&y, &x, 1);
  EXPECT_NEAR(y, 0.8411919906082768, 1e-7);
  const int64_t n = 40;
  auto xs = randn(n, 14, 2.0f), w = randn(n, 15);
  std::vector<float> ys(static_cast<size_t>(n)), dx(static_cast<size_t>(n));
  auto loss = [&] {
    ref::gelu_tanh_forward(ys.data(), xs.data(), n);
    return test::dot(w, ys);
  };
  ref::gelu_tanh_backward(dx.data(), w.data(), xs.data(), n);
  EXPECT_LE(RC_GRAD_ERROR(dx, test::numeric_grad(xs, loss, 1e-2f)), 1e-5);
}

}  // namespace
}  // namespace rc::kernels
