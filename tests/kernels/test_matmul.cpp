// matmul_nt / nn / tn and bias_backward: CPU (oneDNN or fallback) vs the reference, bf16 by
// NMSE, the ACCUMULATE contract, and the reference backward vs finite differences.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/matmul.h"
#include "tensor/bf16.h"

namespace rc::kernels {
namespace {

using test::randn;

enum class Op { nt, nn, tn };
const char* op_name(Op op) { return op == Op::nt ? "nt" : op == Op::nn ? "nn" : "tn"; }

// a: the left operand as stored (M,K) for nt/nn, (K,M) for tn; b: (N,K) for nt, (K,N) otherwise.
void run_matmul(const ExecCtx& ctx, Op op, float* y, const float* a, const float* b, const float* bias, int64_t M,
                int64_t N, int64_t K, bool acc) {
  switch (op) {
    case Op::nt:
      return matmul_nt(ctx, y, a, b, bias, M, N, K);
    case Op::nn:
      return matmul_nn(ctx, y, a, b, M, N, K, acc);
    case Op::tn:
      return matmul_tn(ctx, y, a, b, M, N, K, acc);
  }
}
void run_ref(Op op, float* y, const float* a, const float* b, const float* bias, int64_t M, int64_t N, int64_t K,
             bool acc) {
  switch (op) {
    case Op::nt:
      return ref::matmul_nt(y, a, b, bias, M, N, K);
    case Op::nn:
      return ref::matmul_nn(y, a, b, M, N, K, acc);
    case Op::tn:
      return ref::matmul_tn(y, a, b, M, N, K, acc);
  }
}

std::vector<float> round_to_bf16(std::vector<float> v) {
  for (auto& x : v) x = bf16_to_f32(f32_to_bf16(x));
  return v;
}

struct Shape {
  int64_t M, N, K;
};
const Shape kMatmulShapes[] = {{1, 768, 768},   {37, 768, 768},  {5, 1000, 768}, {33, 3, 768},
                               {16, 2304, 768}, {17, 768, 3072}, {1, 1, 1},      {7, 13, 1000}};

class Matmul : public ::testing::TestWithParam<Op> {};

TEST_P(Matmul, Fp32MatchesRef) {
  const Op op = GetParam();
  const ExecCtx ctx{};
  double worst_nmse = 0;
  for (auto [M, N, K] : kMatmulShapes) {
    auto a = randn(M * K, 1), b = randn(N * K, 2), bias = randn(N, 3);
    std::vector<float> got(size_t(M * N), -7.0f), want(size_t(M * N), -7.0f);
    const float* bp = op == Op::nt ? bias.data() : nullptr;
    run_matmul(ctx, op, got.data(), a.data(), b.data(), bp, M, N, K, false);
    run_ref(op, want.data(), a.data(), b.data(), bp, M, N, K, false);
    // K up to 3072 fp32 sums, |y| up to ~200: measured max |Δ| 2.1e-4 (relative ≤ 4e-6).
    RC_EXPECT_CLOSE(got.data(), want.data(), M * N, (test::Tol{2e-4, 1e-5}))
        << op_name(op) << " M=" << M << " N=" << N << " K=" << K;
    worst_nmse = std::max(worst_nmse, RC_NMSE(got, want));
  }
  EXPECT_LE(worst_nmse, 1e-12) << op_name(op);  // measured 3.4e-13
}

TEST_P(Matmul, Bf16ByNmse) {
  const Op op = GetParam();
  const ExecCtx ctx{Device::cpu, MatmulPrecision::bf16};
  for (auto [M, N, K] : kMatmulShapes) {
    auto a = randn(M * K, 4), b = randn(N * K, 5), bias = randn(N, 6);
    std::vector<float> got(size_t(M * N)), want(size_t(M * N)), want_rounded(size_t(M * N));
    const float* bp = op == Op::nt ? bias.data() : nullptr;
    run_matmul(ctx, op, got.data(), a.data(), b.data(), bp, M, N, K, false);
    run_ref(op, want.data(), a.data(), b.data(), bp, M, N, K, false);
    // Against the exact fp32 product: the bf16 rounding of inputs (≈2^-9 relative each).
    const double e = RC_NMSE(got, want);
    EXPECT_LE(e, 1e-4) << op_name(op) << " M=" << M << " N=" << N << " K=" << K;  // measured 9.0e-6 (bf16 inputs)
    // Against the reference on bf16-rounded inputs: only fp32 accumulation order is left.
    auto ar = round_to_bf16(a), br = round_to_bf16(b);
    run_ref(op, want_rounded.data(), ar.data(), br.data(), bp, M, N, K, false);
    EXPECT_LE(RC_NMSE(got, want_rounded), 1e-10)
        << op_name(op) << " M=" << M << " N=" << N << " K=" << K;  // measured 6.4e-14
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, Matmul, ::testing::Values(Op::nt, Op::nn, Op::tn),
                         [](const auto& info) { return std::string(op_name(info.param)); });

// matmul_nn / matmul_tn only: matmul_nt always overwrites.
TEST(Matmul, AccumulateAddsToExisting) {
  for (Op op : {Op::nn, Op::tn})
    for (auto prec : {MatmulPrecision::fp32, MatmulPrecision::bf16}) {
      const ExecCtx ctx{Device::cpu, prec};
      const int64_t M = 19, N = 45, K = 77;
      auto a = randn(M * K, 7), b = randn(N * K, 8);
      std::vector<float> once(size_t(M * N), 123.0f), twice(size_t(M * N), 0.0f);
      run_matmul(ctx, op, once.data(), a.data(), b.data(), nullptr, M, N, K, false);  // 123 must be overwritten
      run_matmul(ctx, op, twice.data(), a.data(), b.data(), nullptr, M, N, K, true);
      run_matmul(ctx, op, twice.data(), a.data(), b.data(), nullptr, M, N, K, true);
      for (auto& x : once) x *= 2.0f;
      RC_EXPECT_CLOSE(twice.data(), once.data(), M * N, (test::Tol{1e-5, 1e-6})) << op_name(op);
    }
}

TEST(Matmul, BiasBackwardMatchesRefAndAccumulates) {
  const ExecCtx ctx{};
  for (auto [M, N] : {std::pair<int64_t, int64_t>{1, 768}, {37, 1000}, {129, 3}}) {
    auto dy = randn(M * N, 9);
    auto got = randn(N, 10), want = got;
    bias_backward(ctx, got.data(), dy.data(), M, N);
    ref::bias_backward(want.data(), dy.data(), M, N);
    RC_EXPECT_CLOSE(got.data(), want.data(), N, (test::Tol{1e-5, 1e-5}));  // measured 3.8e-6
  }
}

// The reference backward relations: for y = x·Wᵀ + b and L = Σ w∘y,
// dL/dx = dy·W (matmul_nn), dL/dW = dyᵀ·x (matmul_tn), dL/db = Σ_m dy (bias_backward).
TEST(MatmulRef, BackwardMatchesFiniteDifferences) {
  const int64_t M = 3, N = 4, K = 5;
  auto x = randn(M * K, 11), W = randn(N * K, 12), b = randn(N, 13), w = randn(M * N, 14);
  std::vector<float> y(size_t(M * N));
  auto loss = [&] {
    ref::matmul_nt(y.data(), x.data(), W.data(), b.data(), M, N, K);
    return test::dot(w, y);
  };
  std::vector<float> dx(size_t(M * K)), dW(size_t(N * K)), db(size_t(N), 0.0f);
  ref::matmul_nn(dx.data(), w.data(), W.data(), M, K, N, false);
  ref::matmul_tn(dW.data(), w.data(), x.data(), N, K, M, false);
  ref::bias_backward(db.data(), w.data(), M, N);
  EXPECT_LE(RC_GRAD_ERROR(dx, test::numeric_grad(x, loss, 1e-2f)),
            1e-5);  // measured 7.3e-6 (dx), 4.6e-6 (dW), 2.1e-6 (db)
  EXPECT_LE(RC_GRAD_ERROR(dW, test::numeric_grad(W, loss, 1e-2f)), 1e-5);
  EXPECT_LE(RC_GRAD_ERROR(db, test::numeric_grad(b, loss, 1e-2f)), 1e-5);
}

}  // namespace
}  // namespace rc::kernels
