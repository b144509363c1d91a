// layernorm_forward / add_layernorm_forward / layernorm_backward: CPU vs the reference,
// the ACCUMULATE contract on dgamma/dbeta, and the reference backward vs finite differences.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/layernorm.h"

namespace rc::kernels {
namespace {

using test::randn;
constexpr float kEps = 1e-5f;
const std::pair<int64_t, int64_t> kShapes[] = {{1, 768}, {37, 768}, {5, 1000}, {3, 7}, {2, 3072}, {4, 33}};

TEST(LayerNorm, ForwardMatchesRef) {
  const ExecCtx ctx{};
  for (auto [N, C] : kShapes) {
    // A mean offset of 3 and spread 2: the two-pass variance must not lose digits.
    auto x = randn(N * C, 1, 2.0f, 3.0f), g = randn(C, 2, 0.5f, 1.0f), b = randn(C, 3);
    std::vector<float> y(size_t(N * C)), mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
    std::vector<float> ry(size_t(N * C)), rmean(static_cast<size_t>(N)), rrstd(static_cast<size_t>(N));
    layernorm_forward(ctx, y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), N, C, kEps);
    ref::layernorm_forward(ry.data(), rmean.data(), rrstd.data(), x.data(), g.data(), b.data(), N, C, kEps);
    // measured max |Δ| 6.7e-6 (generic path; |y| up to ~6)
    RC_EXPECT_CLOSE(y.data(), ry.data(), N * C, (test::Tol{1e-5, 1e-5})) << "N=" << N << " C=" << C;
    RC_EXPECT_CLOSE(mean.data(), rmean.data(), N, (test::Tol{1e-6, 1e-5}));
    RC_EXPECT_CLOSE(rstd.data(), rrstd.data(), N, (test::Tol{1e-6, 1e-5}));
    // Inference form: no mean/rstd, same y.
    std::vector<float> y2(size_t(N * C));
    layernorm_forward(ctx, y2.data(), nullptr, nullptr, x.data(), g.data(), b.data(), N, C, kEps);
    EXPECT_EQ(y2, y);
  }
}

TEST(LayerNorm, AddLayerNormMatchesAddThenRef) {
  const ExecCtx ctx{};
  for (auto [N, C] : kShapes) {
    auto x = randn(N * C, 4), r = randn(N * C, 5, 3.0f), g = randn(C, 6, 0.5f, 1.0f), b = randn(C, 7);
    std::vector<float> sum_want(size_t(N * C));
    for (size_t i = 0; i < sum_want.size(); ++i) sum_want[i] = x[i] + r[i];
    std::vector<float> ry(size_t(N * C)), rmean(static_cast<size_t>(N)), rrstd(static_cast<size_t>(N));
    ref::layernorm_forward(ry.data(), rmean.data(), rrstd.data(), sum_want.data(), g.data(), b.data(), N, C, kEps);
    // y aliases x and sum aliases the residual: the model's in-place residual join.
    std::vector<float> y = x, sum = r, mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
    add_layernorm_forward(ctx, y.data(), sum.data(), mean.data(), rstd.data(), y.data(), sum.data(), g.data(), b.data(),
                          N, C, kEps);
    EXPECT_EQ(sum, sum_want);  // one fp32 add, exact
    RC_EXPECT_CLOSE(y.data(), ry.data(), N * C, (test::Tol{1e-5, 1e-5})) << "N=" << N << " C=" << C;
    RC_EXPECT_CLOSE(rstd.data(), rrstd.data(), N, (test::Tol{1e-6, 1e-5}));
  }
}

TEST(LayerNorm, BackwardMatchesRefAndAccumulates) {
  const ExecCtx ctx{};
  for (auto [N, C] : kShapes) {
    auto x = randn(N * C, 8, 1.5f, -1.0f), g = randn(C, 9, 0.5f, 1.0f), b = randn(C, 10), dy = randn(N * C, 11);
    std::vector<float> y(size_t(N * C)), mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
    ref::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), N, C, kEps);
    auto dg0 = randn(C, 12), db0 = randn(C, 13);  // nonzero: backward must add, not overwrite
    std::vector<float> dx(size_t(N * C)), rdx(size_t(N * C)), dg = dg0, db = db0, rdg = dg0, rdb = db0;
    layernorm_backward(ctx, dx.data(), dg.data(), db.data(), dy.data(), x.data(), g.data(), mean.data(), rstd.data(), N,
                       C);
    ref::layernorm_backward(rdx.data(), rdg.data(), rdb.data(), dy.data(), x.data(), g.data(), mean.data(), rstd.data(),
                            N, C);
    // measured max |Δ| 4.8e-7 (dx), 2.9e-6 (dgamma), 3.3e-6 (dbeta)
    RC_EXPECT_CLOSE(dx.data(), rdx.data(), N * C, (test::Tol{1e-5, 1e-5})) << "N=" << N << " C=" << C;
    RC_EXPECT_CLOSE(dg.data(), rdg.data(), C, (test::Tol{2e-5, 1e-5}));
    RC_EXPECT_CLOSE(db.data(), rdb.data(), C, (test::Tol{2e-5, 1e-5}));
    // Twice from zero == 2 × once.
    std::vector<float> dg1(size_t(C), 0.0f), db1(size_t(C), 0.0f), dg2(size_t(C), 0.0f), db2(size_t(C), 0.0f);
    layernorm_backward(ctx, dx.data(), dg1.data(), db1.data(), dy.data(), x.data(), g.data(), mean.data(), rstd.data(),
                       N, C);
    for (int rep = 0; rep < 2; ++rep)
      layernorm_backward(ctx, dx.data(), dg2.data(), db2.data(), dy.data(), x.data(), g.data(), mean.data(),
                         rstd.data(), N, C);
    for (int64_t c = 0; c < C; ++c) {
      EXPECT_FLOAT_EQ(dg2[c], 2 * dg1[c]);
      EXPECT_FLOAT_EQ(db2[c], 2 * db1[c]);
    }
  }
}

TEST(LayerNorm, BackwardDxMayAliasDy) {
  const ExecCtx ctx{};
  const int64_t N = 6, C = 768;
  auto x = randn(N * C, 14), g = randn(C, 15), dy = randn(N * C, 16);
  std::vector<float> zeros(size_t(C), 0.0f), y(size_t(N * C)), mean(static_cast<size_t>(N)),
      rstd(static_cast<size_t>(N));
  layernorm_forward(ctx, y.data(), mean.data(), rstd.data(), x.data(), g.data(), zeros.data(), N, C, kEps);
  std::vector<float> dx(size_t(N * C)), dg1 = zeros, db1 = zeros, dg2 = zeros, db2 = zeros, inplace = dy;
  layernorm_backward(ctx, dx.data(), dg1.data(), db1.data(), dy.data(), x.data(), g.data(), mean.data(), rstd.data(), N,
                     C);
  layernorm_backward(ctx, inplace.data(), dg2.data(), db2.data(), inplace.data(), x.data(), g.data(), mean.data(),
                     rstd.data(), N, C);
  EXPECT_EQ(inplace, dx);
  EXPECT_EQ(dg2, dg1);
}

TEST(LayerNormRef, BackwardMatchesFiniteDifferences) {
  const int64_t N = 3, C = 6;
  auto x = randn(N * C, 17), g = randn(C, 18, 0.5f, 1.0f), b = randn(C, 19), w = randn(N * C, 20);
  std::vector<float> y(size_t(N * C)), mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
  auto loss = [&] {
    ref::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), N, C, kEps);
    return test::dot(w, y);
  };
  loss();
  std::vector<float> dx(size_t(N * C)), dg(size_t(C), 0.0f), db(size_t(C), 0.0f);
  ref::layernorm_backward(dx.data(), dg.data(), db.data(), w.data(), x.data(), g.data(), mean.data(), rstd.data(), N,
                          C);
  // measured 9.8e-6 (dx), 4.1e-6 (dgamma), 9.4e-7 (dbeta); h = 1e-2, 4-point stencil
  EXPECT_LE(RC_GRAD_ERROR(dx, test::numeric_grad(x, loss, 1e-2f)), 1e-4);
  EXPECT_LE(RC_GRAD_ERROR(dg, test::numeric_grad(g, loss, 1e-2f)), 1e-4);
  EXPECT_LE(RC_GRAD_ERROR(db, test::numeric_grad(b, loss, 1e-2f)), 1e-4);
}

}  // namespace
}  // namespace rc::kernels
