// Every CPU code path in one binary: the portable cpu::generic:: kernels and each hand-vectorised
// path this build has (avx2, avx512 on x86-64; neon, neon_bf16, sve on aarch64) that this CPU can run,
// each against the reference, through the table of kernels/cpu/isa_paths.h.  The op-family
// tests go through the dispatch, which picks one path per process (RC_CPU_ISA=generic forces
// the portable one); this file makes sure the others are tested too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernel_test_util.h"
#include "device/cpu_isa.h"
#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/cpu/isa_paths.h"
#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/matmul.h"
#include "kernels/layernorm.h"
#include "kernels/linear.h"
#include "kernels/optimizer.h"
#include "tensor/bf16.h"

namespace rc::kernels {
namespace {

using test::randn;

class IsaPath : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    path_ = cpu::find_cpu_path(GetParam());
    if (!path_) GTEST_SKIP() << GetParam() << " is a path of another architecture";
    if (!path_->runnable) GTEST_SKIP() << "this CPU cannot run the " << GetParam() << " path";
  }
  const cpu::CpuPath& P() const { return *path_; }

 private:
  const cpu::CpuPath* path_ = nullptr;
};

TEST_P(IsaPath, LayerNorm) {
  for (auto [N, C] : {std::pair<int64_t, int64_t>{1, 768}, {37, 768}, {5, 1000}, {3, 7}}) {
    auto x = randn(N * C, 1, 2.0f, 3.0f), r = randn(N * C, 2), g = randn(C, 3, 0.5f, 1.0f), b = randn(C, 4),
         dy = randn(N * C, 5);
    std::vector<float> y(size_t(N * C)), sum(size_t(N * C)), mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
    std::vector<float> ry(size_t(N * C)), rmean(static_cast<size_t>(N)), rrstd(static_cast<size_t>(N));
    std::vector<float> xs(size_t(N * C));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = x[i] + r[i];
    ref::layernorm_forward(ry.data(), rmean.data(), rrstd.data(), xs.data(), g.data(), b.data(), N, C, 1e-5f);
    P().add_layernorm_forward(y.data(), sum.data(), mean.data(), rstd.data(), x.data(), r.data(), g.data(), b.data(), N,
                              C, 1e-5f);
    EXPECT_EQ(sum, xs);
    RC_EXPECT_CLOSE(y.data(), ry.data(), N * C, (test::Tol{1e-5, 1e-5}));  // measured 4.3e-6
    std::vector<float> y2(size_t(N * C));
    P().layernorm_forward(y2.data(), nullptr, nullptr, xs.data(), g.data(), b.data(), N, C, 1e-5f);
    EXPECT_EQ(y2, y);

    std::vector<float> dx(size_t(N * C)), rdx(size_t(N * C)), dg(static_cast<size_t>(C), 1.0f), db = dg, rdg = dg,
                                                                                                rdb = dg;
    ref::layernorm_backward(rdx.data(), rdg.data(), rdb.data(), dy.data(), xs.data(), g.data(), rmean.data(),
                            rrstd.data(), N, C);
    P().layernorm_backward(dx.data(), dg.data(), db.data(), dy.data(), xs.data(), g.data(), rmean.data(), rrstd.data(),
                           N, C);
    RC_EXPECT_CLOSE(dx.data(), rdx.data(), N * C, (test::Tol{1e-5, 1e-5}));  // measured 4.8e-7
    RC_EXPECT_CLOSE(dg.data(), rdg.data(), C, (test::Tol{2e-5, 1e-5}));      // measured 2.9e-6
    RC_EXPECT_CLOSE(db.data(), rdb.data(), C, (test::Tol{2e-5, 1e-5}));      // measured 4.8e-6
  }
}

TEST_P(IsaPath, GeluErf) {
  for (int64_t n : {1, 17, 3072 * 5 + 3, 200000}) {
    auto x = randn(n, 6, 3.0f), dy = randn(n, 7);
    std::vector<float> y(static_cast<size_t>(n)), ry = y, dx = y, rdx = y;
    ref::gelu_erf_forward(ry.data(), x.data(), n);
    ref::gelu_erf_backward(rdx.data(), dy.data(), x.data(), n);
    P().gelu_erf_forward(y.data(), x.data(), n);
    P().gelu_erf_backward(dx.data(), dy.data(), x.data(), n);
    // measured max |Δ| 4.8e-7 on both paths (A&S erf on avx512); 1e-6 is the bound asked for
    RC_EXPECT_CLOSE(y.data(), ry.data(), n, (test::Tol{1e-6, 1e-6}));
    RC_EXPECT_CLOSE(dx.data(), rdx.data(), n, (test::Tol{2e-6, 1e-5}));  // measured 6.0e-7
  }
}

// A dense grid over GELU's whole interesting range, against std::erf in double.
TEST_P(IsaPath, GeluErfDenseGrid) {
  const int64_t n = 400001;
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n)), ry(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = -10.0f + 20.0f * float(i) / float(n - 1);
  ref::gelu_erf_forward(ry.data(), x.data(), n);
  P().gelu_erf_forward(y.data(), x.data(), n);
  RC_EXPECT_CLOSE(y.data(), ry.data(), n,
                  (test::Tol{1e-6, 0.0}));  // measured max |Δ| 4.8e-7 on both paths (1 ulp at |y| = 10)
}

TEST_P(IsaPath, Attention) {
  struct Case {
    int64_t B, T, H, D;
    std::vector<int32_t> lens;
    float p;
  };
  for (const Case& c : {Case{2, 7, 2, 5, {7, 3}, 0.0f}, Case{3, 33, 12, 64, {33, 1, 17}, 0.1f},
                        Case{1, 130, 2, 64, {129}, 0.0f}, Case{2, 9, 3, 16, {0, 9}, 0.2f}}) {
    const int64_t C = c.H * c.D, BT = c.B * c.T;
    auto qkv = randn(BT * 3 * C, 8, 1.5f), dout = randn(BT * C, 9);
    std::vector<float> out(size_t(BT * C), 3.0f), probs(size_t(c.B * c.H * c.T * c.T), 3.0f), rout(out.size()),
        rprobs(probs.size()), dqkv(qkv.size(), 3.0f), rdqkv(qkv.size());
    ref::attention_forward(rout.data(), rprobs.data(), qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p, 5, 1000);
    ref::attention_backward(rdqkv.data(), dout.data(), qkv.data(), rprobs.data(), c.lens.data(), c.B, c.T, c.H, c.D,
                            c.p, 5, 1000);
    P().attention_forward(out.data(), probs.data(), qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p, 5, 1000);
    P().attention_backward(dqkv.data(), dout.data(), qkv.data(), probs.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p,
                           5, 1000);

    RC_EXPECT_CLOSE(out.data(), rout.data(), BT * C, (test::Tol{2e-5, 1e-5}));                     // measured 3.9e-6
    RC_EXPECT_CLOSE(probs.data(), rprobs.data(), int64_t(probs.size()), (test::Tol{5e-6, 1e-5}));  // 6.6e-7
    RC_EXPECT_CLOSE(dqkv.data(), rdqkv.data(), int64_t(qkv.size()), (test::Tol{3e-5, 1e-5}));      // 3.6e-6
    std::vector<float> out2(out.size());
    P().attention_forward(out2.data(), nullptr, qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D, c.p, 5, 1000);
    EXPECT_EQ(out2, out);
  }
}

// NaN in, NaN out, as PyTorch: a checkpoint holding NaN weights must not give a finite,
// plausible answer (session 9's red team: NaN in the Q/K weights did, on the vector paths,
// whose exp clamped NaN to a finite value; rc::Classifier refuses non-finite logits).
TEST_P(IsaPath, NanPropagatesThroughGeluAndAttention) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : {1, 17, 40}) {
    std::vector<float> x(static_cast<size_t>(n), 0.5f), y(x.size());
    x[size_t(n / 2)] = nan;
    P().gelu_erf_forward(y.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(std::isnan(y[size_t(i)]), i == n / 2) << "n " << n << " i " << i;
  }
  const int64_t B = 1, T = 9, H = 2, D = 16, C = H * D;
  for (int64_t bad_key : {0, 4, 8}) {
    auto qkv = randn(B * T * 3 * C, 11);
    qkv[size_t(bad_key * 3 * C + C + 3)] = nan;  // one element of key row bad_key, head 0
    const std::vector<int32_t> lens = {int32_t(T)};
    std::vector<float> out(size_t(B * T * C));
    P().attention_forward(out.data(), nullptr, qkv.data(), lens.data(), B, T, H, D, 0.0f, 5, 0);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < C; ++d)  // every query of head 0 sees the bad key; head 1 does not
        EXPECT_EQ(std::isnan(out[size_t(t * C + d)]), d < D) << "key " << bad_key << " t " << t << " d " << d;
  }
}

TEST_P(IsaPath, AdamW) {
  const int64_t n = 50001;
  const std::vector<AdamWSegment> segs = {{0, 30000, true}, {30007, n - 30007, false}};
  auto p0 = randn(n, 10, 0.05f);
  std::vector<float> p = p0, rp = p0, m(static_cast<size_t>(n), 0.0f), v = m, rm = m, rv = m;
  AdamWHyper h;
  h.lr = 1e-3f;
  h.weight_decay = 0.01f;
  for (int64_t step = 1; step <= 3; ++step) {
    h.step = step;
    auto g = randn(n, 20 + uint64_t(step), 1e-2f);
    ref::adamw_step(rp.data(), g.data(), rm.data(), rv.data(), segs.data(), 2, h);
    P().adamw_step(p.data(), g.data(), m.data(), v.data(), segs.data(), 2, h);
  }
  RC_EXPECT_CLOSE(p.data(), rp.data(), n, (test::Tol{1e-7, 1e-6}));  // measured 4.5e-8
  RC_EXPECT_CLOSE(m.data(), rm.data(), n, (test::Tol{1e-9, 1e-6}));
}

// fp32 → bf16 staging for the GEMMs: bit-identical to rc::f32_to_bf16 (round to nearest even,
// NaN kept quiet), ties, subnormals, infinities and odd lengths (tails) included.
TEST_P(IsaPath, ConvertF32ToBf16) {
  for (int64_t n : {1, 7, 8, 1003, 70001}) {
    auto x = randn(n, 30, 100.0f);
    const float specials[] = {0.0f,   -0.0f,   1.0f + 1.0f / 256, 1.0f + 3.0f / 256,  // exact ties, both directions
                              1e-40f, -3e-39f, INFINITY,          -INFINITY,         NAN, 3.4e38f, -1.17549435e-38f};
    for (size_t i = 0; i < std::size(specials) && i < x.size(); ++i) x[i * 3 % x.size()] = specials[i];
    std::vector<uint16_t> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) want[size_t(i)] = f32_to_bf16(x[size_t(i)]);
    P().convert_f32_to_bf16(got.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      // Subnormal inputs: AVX512-BF16's VCVTNEPS2BF16 treats them as zero (Intel SDM: "denormal
      // inputs are treated as zero"), which is harmless for GEMM staging: a flush to a zero of
      // the same sign is accepted there, every other value must match bit for bit.
      const float v = x[size_t(i)];
      const bool subnormal = v != 0.0f && std::fabs(v) < 1.17549435e-38f;
      if (subnormal && got[size_t(i)] == (std::signbit(v) ? 0x8000 : 0x0000)) got[size_t(i)] = want[size_t(i)];
    }
    EXPECT_EQ(got, want) << "n=" << n;
  }
}

// Per-row int8 quantisation: bit-identical to the reference on every path.
TEST_P(IsaPath, QuantizeRows) {
  for (auto [M, K] : {std::pair<int64_t, int64_t>{1, 768}, {7, 100}, {3, 5}, {2, 3072}}) {
    auto x = randn(M * K, uint64_t(M + K), 2.0f);
    std::vector<int8_t> want(size_t(M * K)), got(size_t(M * K));
    std::vector<float> want_s(static_cast<size_t>(M)), got_s(static_cast<size_t>(M));
    ref::quantize_rows_s8(want.data(), want_s.data(), x.data(), M, K);
    P().quantize_rows_s8(got.data(), got_s.data(), x.data(), M, K);
    EXPECT_EQ(got, want) << "M=" << M << " K=" << K;
    EXPECT_EQ(got_s, want_s);
  }
}

#if defined(__aarch64__)
// The packed bf16 linear on BFMMLA against the reference GEMM on the same bf16-rounded operands:
// odd M, N and K (every tail of the 8 × 8 tile and of K's steps of 4), bias or not, fp32 or bf16 x.
TEST(Bfmmla, PackedBf16LinearMatchesTheReference) {
  if (!cpu::neon::bf16_supported()) GTEST_SKIP() << "this CPU has no BF16/I8MM";
  for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 8, 4}, {7, 13, 29}, {33, 70, 768}, {16, 64, 130}}) {
    auto x = randn(M * K, uint64_t(M * N), 1.0f), w = randn(N * K, uint64_t(N + K), 0.05f), bias = randn(N, 3);
    std::vector<uint16_t> xb(size_t(M * K));
    std::vector<float> xr(size_t(M * K)), wr(size_t(N * K));
    for (size_t i = 0; i < xr.size(); ++i) xr[i] = bf16_to_f32(xb[i] = f32_to_bf16(x[i]));
    for (size_t i = 0; i < wr.size(); ++i) wr[i] = bf16_to_f32(f32_to_bf16(w[i]));
    std::vector<uint16_t> wp(size_t(cpu::neon::bfmmla_packed_size(N, K)));
    cpu::neon::pack_bfmmla_weights(wp.data(), w.data(), N, K);
    for (const float* b : std::initializer_list<const float*>{bias.data(), nullptr}) {
      std::vector<float> want(size_t(M * N)), got(size_t(M * N), -7.0f), got2(size_t(M * N), -7.0f);
      ref::matmul_nt(want.data(), xr.data(), wr.data(), b, M, N, K);
      cpu::neon::linear_bf16_bfmmla(got.data(), x.data(), wp.data(), b, M, N, K);
      cpu::neon::linear_bf16_bfmmla_bf16in(got2.data(), xb.data(), wp.data(), b, M, N, K);
      // Exact bf16 products, fp32 sums in another order: |Δ| ~ K·2^-24·|terms|; K = 768 of
      // |x·w| ≤ ~0.2 gives ≤ ~1e-5.
      RC_EXPECT_CLOSE(got.data(), want.data(), M * N, (test::Tol{2e-5, 1e-5})) << M << "x" << N << "x" << K;
      EXPECT_EQ(got2, got);
    }
  }
}

// The int8 GEMM on SMMLA: exact int32 sums, so equal to the plain loop, tails of M, N, K included.
TEST(Smmla, PackedInt8GemmIsExact) {
  if (!cpu::neon::bf16_supported()) GTEST_SKIP() << "this CPU has no BF16/I8MM";
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> d(-127, 127);
  for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 8, 8}, {7, 13, 29}, {33, 70, 768}, {9, 64, 3072}}) {
    std::vector<int8_t> xq(size_t(M * K)), wq(size_t(N * K));
    for (auto& v : xq) v = int8_t(d(rng));
    for (auto& v : wq) v = int8_t(d(rng));
    std::vector<int32_t> want(size_t(M * N)), got(size_t(M * N), -7);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int32_t a = 0;
        for (int64_t k = 0; k < K; ++k) a += int32_t(xq[size_t(m * K + k)]) * wq[size_t(n * K + k)];
        want[size_t(m * N + n)] = a;
      }
    std::vector<int8_t> wp(size_t(cpu::neon::smmla_packed_size(N, K)));
    cpu::neon::pack_smmla_weights(wp.data(), wq.data(), N, K);
    cpu::neon::gemm_s8_smmla(got.data(), xq.data(), wp.data(), M, N, K);
    EXPECT_EQ(got, want) << M << "x" << N << "x" << K;
  }
}
#endif

// scripts/test-arm64.sh runs the suites once per emulated CPU and names the path each run must
// take: this fails when detection (getauxval) or RC_CPU_ISA picked another one.
TEST(CpuIsaChoice, IsThePathTheRunAskedFor) {
  const char* want = std::getenv("RC_TEST_EXPECT_ISA");
  if (!want || !*want) GTEST_SKIP() << "RC_TEST_EXPECT_ISA not set (only scripts/test-arm64.sh sets it)";
  EXPECT_EQ(std::string(cpu_isa_name(cpu_isa())), want);
  const CpuFeatures& f = cpu_features();
  if (std::string(want) == "sve") {
    EXPECT_EQ(f.sve_bits, 256) << "QEMU_CPU=max,sve256=on gives 256-bit vectors";
  }
  if (std::string(want) == "neon_bf16") {
    EXPECT_TRUE(f.arm_bf16 && f.i8mm && !f.sve);
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, IsaPath, ::testing::Values("generic", "avx2", "avx512", "neon", "neon_bf16", "sve"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace rc::kernels
