// The bf16 training step's fused kernels (kernels/cpu/bf16_training.h) against the unfused
// calls they replace, BITWISE: linear_backward vs matmul_tn + bias_backward + matmul_nn (fp32
// and bf16, with and without the weight's bf16 copy), matmul_nt_w16 vs matmul_nt, and
// adamw_step_bf16_copy vs adamw_step + convert_to_bf16, the GEMMs given their input already in
// bf16 (x16, the saved activations) vs converting it, and gelu_erf_forward_bf16 vs GELU then
// convert_to_bf16. "Bitwise" is the claim the training
// results rest on (docs/benchmarks.md, issue 15): same roundings, same summation order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/activation.h"
#include "kernels/cpu/bf16_training.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/linear.h"
#include "kernels/matmul.h"
#include "kernels/optimizer.h"
#include "tensor/bf16.h"

namespace rc::kernels {
namespace {

using test::randn;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<uint16_t> bf16_of(const ExecCtx& ctx, const std::vector<float>& x) {
  std::vector<uint16_t> r(x.size());
  convert_to_bf16(ctx, r.data(), x.data(), int64_t(x.size()));
  return r;
}

void check_linear_backward(MatmulPrecision prec, bool with_copy, bool accumulate_dx) {
  ExecCtx ctx;
  ctx.matmul_precision = prec;
  // N = 150: more than two 64-column blocks of the fused column sums, with a ragged tail.
  const int64_t M = 37, N = 150, K = 45;
  const auto dy = randn(M * N, 1, 0.3f), x = randn(M * K, 2), w = randn(N * K, 3, 0.2f);
  const auto dw0 = randn(N * K, 4, 0.1f), db0 = randn(N, 5, 0.1f), dx0 = randn(M * K, 6, 0.1f);
  const std::vector<uint16_t> w16 = bf16_of(ctx, w);
  std::vector<float> dw = dw0, db = db0, dx = dx0, rdw = dw0, rdb = db0, rdx = dx0;
  linear_backward(ctx, dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), with_copy ? w16.data() : nullptr,
                  M, N, K, accumulate_dx);
  matmul_tn(ctx, rdw.data(), dy.data(), x.data(), N, K, M, true);
  bias_backward(ctx, rdb.data(), dy.data(), M, N);
  matmul_nn(ctx, rdx.data(), dy.data(), w.data(), M, K, N, accumulate_dx);
  EXPECT_TRUE(same_bits(dw, rdw)) << "dW, max |diff| " << test::max_abs_diff(dw, rdw);
  EXPECT_TRUE(same_bits(db, rdb)) << "db, max |diff| " << test::max_abs_diff(db, rdb);
  EXPECT_TRUE(same_bits(dx, rdx)) << "dX, max |diff| " << test::max_abs_diff(dx, rdx);
  // And they are the products (not two copies of one wrong answer): dW against the fp32 loops.
  std::vector<float> want = dw0;
  ref::matmul_tn(want.data(), dy.data(), x.data(), N, K, M, true);
  const double tol = prec == MatmulPrecision::bf16 ? 0.05 : 1e-4;  // bf16 inputs: measured max ~0.02
  EXPECT_LT(test::max_abs_diff(dw, want), tol);
}

TEST(LinearBackward, Fp32IsTheThreeCalls) {
  check_linear_backward(MatmulPrecision::fp32, false, false);
  check_linear_backward(MatmulPrecision::fp32, true, true);
}
TEST(LinearBackward, Bf16IsTheThreeCallsBitwise) {
  check_linear_backward(MatmulPrecision::bf16, false, false);
  check_linear_backward(MatmulPrecision::bf16, true, false);
  check_linear_backward(MatmulPrecision::bf16, true, true);
}

TEST(LinearBackward, NullBiasLeavesNothingOut) {
  ExecCtx ctx;
  ctx.matmul_precision = MatmulPrecision::bf16;
  const int64_t M = 8, N = 16, K = 12;
  const auto dy = randn(M * N, 1), x = randn(M * K, 2), w = randn(N * K, 3);
  std::vector<float> dw(N * K, 0.0f), dx(M * K, 0.0f), rdw = dw, rdx = dx;
  linear_backward(ctx, dx.data(), dw.data(), nullptr, dy.data(), x.data(), w.data(), nullptr, M, N, K, false);
  matmul_tn(ctx, rdw.data(), dy.data(), x.data(), N, K, M, true);
  matmul_nn(ctx, rdx.data(), dy.data(), w.data(), M, K, N, false);
  EXPECT_TRUE(same_bits(dw, rdw));
  EXPECT_TRUE(same_bits(dx, rdx));
}

TEST(MatmulNtW16, IsMatmulNt) {
  for (MatmulPrecision prec : {MatmulPrecision::fp32, MatmulPrecision::bf16}) {
    ExecCtx ctx;
    ctx.matmul_precision = prec;
    const int64_t M = 33, N = 70, K = 40;
    const auto x = randn(M * K, 1), w = randn(N * K, 2), bias = randn(N, 3);
    const auto w16 = bf16_of(ctx, w);
    std::vector<float> y(M * N), want(M * N);
    matmul_nt_w16(ctx, y.data(), x.data(), w.data(), w16.data(), bias.data(), M, N, K);
    matmul_nt(ctx, want.data(), x.data(), w.data(), bias.data(), M, N, K);
    EXPECT_TRUE(same_bits(y, want)) << "max |diff| " << test::max_abs_diff(y, want);
  }
}

TEST(MatmulNtW16, ReadsTheCopyNotTheMaster) {
  // The copy is what the bf16 GEMM reads: a copy of other weights gives their product. (Why a
  // stale copy would matter, and why model/bf16_weights.h never lets one be read.)
  ExecCtx ctx;
  ctx.matmul_precision = MatmulPrecision::bf16;
  const int64_t M = 16, N = 24, K = 32;
  const auto x = randn(M * K, 1), w = randn(N * K, 2), other = randn(N * K, 3);
  const auto other16 = bf16_of(ctx, other);
  std::vector<float> y(M * N), with_other(M * N), plain(M * N);
  matmul_nt_w16(ctx, y.data(), x.data(), w.data(), other16.data(), nullptr, M, N, K);
  matmul_nt(ctx, with_other.data(), x.data(), other.data(), nullptr, M, N, K);
  matmul_nt(ctx, plain.data(), x.data(), w.data(), nullptr, M, N, K);
  ASSERT_FALSE(same_bits(with_other, plain));
  // oneDNN's bf16 GEMM, or (x86-64 without one) its fp32 GEMM on widened bf16 operands, reads
  // the copy; aarch64's loops round the master (docs/arm64.md).
  bool reads_copy = PackedLinear::pack(w.data(), N, K, PackedType::bf16).uses_onednn();
  reads_copy = reads_copy || cpu::onednn::bf16_runs_on_fp32_gemm();
#if !defined(__x86_64__)
  reads_copy = false;
#endif
  if (reads_copy)
    EXPECT_TRUE(same_bits(y, with_other));
  else
    EXPECT_TRUE(same_bits(y, plain));
}

// The saved-activation forms: x handed over as its bf16 rows only (x null) give the products of
// handing x and letting the GEMM round it, bitwise, with and without the weight's copy.
TEST(LinearBackward, InputGivenInBf16IsBitwiseTheInputRoundedByTheGemm) {
  ExecCtx ctx;
  ctx.matmul_precision = MatmulPrecision::bf16;
  const int64_t M = 37, N = 150, K = 45;
  const auto dy = randn(M * N, 1, 0.3f), x = randn(M * K, 2), w = randn(N * K, 3, 0.2f);
  const auto x16 = bf16_of(ctx, x), w16 = bf16_of(ctx, w);
  for (const uint16_t* wc : {static_cast<const uint16_t*>(nullptr), w16.data()}) {
    std::vector<float> dw = randn(N * K, 4, 0.1f), db = randn(N, 5, 0.1f), dx = randn(M * K, 6, 0.1f);
    std::vector<float> rdw = dw, rdb = db, rdx = dx;
    linear_backward(ctx, dx.data(), dw.data(), db.data(), dy.data(), nullptr, w.data(), wc, M, N, K, true, x16.data());
    linear_backward(ctx, rdx.data(), rdw.data(), rdb.data(), dy.data(), x.data(), w.data(), wc, M, N, K, true);
    EXPECT_TRUE(same_bits(dw, rdw)) << "dW, max |diff| " << test::max_abs_diff(dw, rdw);
    EXPECT_TRUE(same_bits(db, rdb));
    EXPECT_TRUE(same_bits(dx, rdx));
  }
}

TEST(MatmulNtW16, InputGivenInBf16IsBitwiseTheInputRoundedByTheGemm) {
  ExecCtx ctx;
  ctx.matmul_precision = MatmulPrecision::bf16;
  const int64_t M = 33, N = 70, K = 40;
  const auto x = randn(M * K, 1), w = randn(N * K, 2), bias = randn(N, 3);
  const auto x16 = bf16_of(ctx, x), w16 = bf16_of(ctx, w);
  for (const uint16_t* wc : {static_cast<const uint16_t*>(nullptr), w16.data()}) {
    std::vector<float> y(M * N), want(M * N);
    matmul_nt_w16(ctx, y.data(), nullptr, w.data(), wc, bias.data(), M, N, K, x16.data());
    matmul_nt(ctx, want.data(), x.data(), w.data(), bias.data(), M, N, K);
    EXPECT_TRUE(same_bits(y, want)) << "max |diff| " << test::max_abs_diff(y, want);
    // Through linear_forward, as the encoder calls it.
    std::vector<float> y2(M * N);
    LinearWeight lw = LinearWeight::f32(w.data(), N, K);
    lw.w16 = wc;
    linear_forward(ctx, y2.data(), ActType::f32, x16.data(), ActType::bf16, lw, bias.data(), M, Epilogue::none);
    EXPECT_TRUE(same_bits(y2, want));
  }
  // The input is what the GEMM reads: other rows give other products (the test can fail).
  const auto other16 = bf16_of(ctx, randn(M * K, 9));
  std::vector<float> y(M * N), want(M * N);
  matmul_nt_w16(ctx, y.data(), nullptr, w.data(), w16.data(), bias.data(), M, N, K, other16.data());
  matmul_nt(ctx, want.data(), x.data(), w.data(), bias.data(), M, N, K);
  EXPECT_FALSE(same_bits(y, want));
}

TEST(GeluBf16, IsGeluThenConvertBitwiseAndNearTheOracle) {
  const ExecCtx ctx;
  // One piece, a ragged piece, and past the parallel threshold with a ragged tail.
  for (int64_t n : {int64_t(5), int64_t(4096 + 3), int64_t(70000 + 11)}) {
    const auto x = randn(n, uint64_t(n), 2.0f);
    std::vector<uint16_t> y(size_t(n), 0x7fc1), want(static_cast<size_t>(n));
    gelu_erf_forward_bf16(ctx, y.data(), x.data(), n);
    std::vector<float> g(static_cast<size_t>(n));
    gelu_erf_forward(ctx, g.data(), x.data(), n);
    convert_to_bf16(ctx, want.data(), g.data(), n);
    EXPECT_EQ(y, want) << "n = " << n;
    // The oracle twin (double GELU, then round): one bf16 step apart at most where the fp32
    // GELU sits next to a rounding boundary, plus the fp32 kernel's own absolute error in the
    // far tail (measured 4.8e-7, Activation.GeluForwardMatchesRef; bar 1e-6).
    std::vector<uint16_t> oracle(static_cast<size_t>(n));
    ref::gelu_erf_forward_bf16(oracle.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float a = bf16_to_f32(y[size_t(i)]), b = bf16_to_f32(oracle[size_t(i)]);
      ASSERT_LE(std::fabs(a - b), std::fabs(b) * 0x1p-7f + 1e-6f) << "i = " << i << " x = " << x[size_t(i)];
    }
  }
}

TEST(AdamWBf16Copy, IsAdamWThenConvertBitwise) {
  const ExecCtx ctx;
  const int64_t n = 90000;  // past the parallel threshold, chunks with a ragged tail
  // [0, 40000) decay with a copy, [40000, 40100) untouched, [40100, 50000) no decay without a
  // copy, [50000, n) no decay with a copy.
  const std::vector<AdamWSegment> segs = {{0, 40000, true}, {40100, 9900, false}, {50000, n - 50000, false}};
  std::vector<uint16_t> copy(size_t(40000 + n - 50000), 0x7fc1);  // a NaN marker: what is not written shows
  uint16_t* copies[3] = {copy.data(), nullptr, copy.data() + 40000};
  const auto p0 = randn(n, 1, 0.05f);
  std::vector<float> p = p0, rp = p0, m(size_t(n), 0.0f), v = m, rm = m, rv = m;
  AdamWHyper h;
  h.lr = 2e-3f;
  h.weight_decay = 0.1f;
  h.grad_scale = 0.5f;
  for (int64_t step = 1; step <= 3; ++step) {
    h.step = step;
    const auto g = randn(n, 100 + uint64_t(step), 1e-2f);
    adamw_step_bf16_copy(ctx, p.data(), g.data(), m.data(), v.data(), segs.data(), copies, 3, h);
    adamw_step(ctx, rp.data(), g.data(), rm.data(), rv.data(), segs.data(), 3, h);
    EXPECT_TRUE(same_bits(p, rp) && same_bits(m, rm) && same_bits(v, rv)) << "step " << step;
    std::vector<uint16_t> want(copy.size());
    convert_to_bf16(ctx, want.data(), rp.data(), 40000);
    convert_to_bf16(ctx, want.data() + 40000, rp.data() + 50000, n - 50000);
    ASSERT_EQ(copy, want) << "step " << step << ": the copy is not bf16 of the new master";
  }
  EXPECT_NE(p, p0);
}

}  // namespace
}  // namespace rc::kernels
