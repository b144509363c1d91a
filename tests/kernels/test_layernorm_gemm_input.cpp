// The LayerNorm forms that also write the next GEMM's input (layernorm.h GemmInput): bit for bit
// the LayerNorm followed by quantize_rows_s8 / bf16 rounding (what the int8 / bf16 GEMM did
// itself before), close to the reference twin, linear_forward on an already-quantised
// (ActType::s8) or bf16 input gives bit for bit what it gives on the fp32 rows, and its int8
// output (the next GEMM's input) is the bf16 output quantised, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/bf16_convert.h"
#include "kernels/layernorm.h"
#include "kernels/linear.h"
#include "tensor/bf16.h"

namespace rc::kernels {
namespace {

using test::randn;
constexpr float kGemmInputEps = 1e-5f;
// Rows across the blocking (one block, several, a partial last one) and odd widths.
const std::pair<int64_t, int64_t> kGemmInputShapes[] = {{1, 768}, {7, 100}, {300, 768}, {1025, 64}, {3, 5}, {90, 3072}};

struct Out {
  std::vector<float> y, sum, mean, rstd, scale;
  std::vector<int8_t> q;
  std::vector<uint16_t> b;
};

// residual: add_layernorm_forward, else layernorm_forward; fused: the GemmInput form.
Out run_layernorm(bool fused, bool residual, ActType type, const std::vector<float>& x, const std::vector<float>& r,
                  const std::vector<float>& g, const std::vector<float>& be, int64_t N, int64_t C) {
  const ExecCtx ctx{};
  Out o;
  o.y.resize(size_t(N * C));
  o.sum.resize(size_t(N * C));
  o.mean.resize(size_t(N));
  o.rstd.resize(size_t(N));
  o.scale.resize(size_t(N));
  o.q.resize(size_t(N * C));
  o.b.resize(size_t(N * C));
  GemmInput gi;
  if (fused) gi = {type == ActType::s8 ? static_cast<void*>(o.q.data()) : o.b.data(), type, o.scale.data()};
  if (residual)
    add_layernorm_forward(ctx, o.y.data(), o.sum.data(), o.mean.data(), o.rstd.data(), x.data(), r.data(), g.data(),
                          be.data(), N, C, kGemmInputEps, gi);
  else
    layernorm_forward(ctx, o.y.data(), o.mean.data(), o.rstd.data(), x.data(), g.data(), be.data(), N, C, kGemmInputEps,
                      gi);
  if (!fused) {  // what the GEMM did itself before
    if (type == ActType::s8)
      quantize_rows_s8(o.q.data(), o.scale.data(), o.y.data(), N, C);
    else
      cpu::convert_f32_to_bf16(o.b.data(), o.y.data(), N * C);
  }
  return o;
}

TEST(LayerNormGemmInput, FusedIsBitIdenticalToLayerNormThenQuantiseOrRound) {
  for (auto [N, C] : kGemmInputShapes)
    for (bool residual : {false, true})
      for (ActType type : {ActType::s8, ActType::bf16}) {
        auto x = randn(N * C, uint64_t(N + C), 2.0f, 0.5f), r = randn(N * C, 7), g = randn(C, 2, 0.5f, 1.0f),
             be = randn(C, 3);
        const Out a = run_layernorm(false, residual, type, x, r, g, be, N, C),
                  b = run_layernorm(true, residual, type, x, r, g, be, N, C);
        SCOPED_TRACE(testing::Message() << "N=" << N << " C=" << C << " residual=" << residual
                                        << " s8=" << (type == ActType::s8));
        EXPECT_EQ(a.y, b.y);
        EXPECT_EQ(a.mean, b.mean);
        EXPECT_EQ(a.rstd, b.rstd);
        if (residual) {
          EXPECT_EQ(a.sum, b.sum);
        }
        if (type == ActType::s8) {
          EXPECT_EQ(a.q, b.q);
          EXPECT_EQ(a.scale, b.scale);
        } else {
          EXPECT_EQ(a.b, b.b);
        }
      }
}

TEST(LayerNormGemmInput, MatchesTheReferenceTwin) {
  for (auto [N, C] : kGemmInputShapes)
    for (bool residual : {false, true})
      for (ActType type : {ActType::s8, ActType::bf16}) {
        auto x = randn(N * C, uint64_t(3 * N + C), 2.0f, 3.0f), r = randn(N * C, 8), g = randn(C, 2, 0.5f, 1.0f),
             be = randn(C, 3);
        const Out got = run_layernorm(true, residual, type, x, r, g, be, N, C);
        std::vector<float> y(size_t(N * C)), sum(size_t(N * C)), scale(static_cast<size_t>(N));
        std::vector<int8_t> q(size_t(N * C));
        std::vector<uint16_t> b(size_t(N * C));
        const GemmInput gi{type == ActType::s8 ? static_cast<void*>(q.data()) : b.data(), type, scale.data()};
        ref::layernorm_gemm_input(y.data(), sum.data(), x.data(), residual ? r.data() : nullptr, g.data(), be.data(), N,
                                  C, kGemmInputEps, gi);
        SCOPED_TRACE(testing::Message() << "N=" << N << " C=" << C << " residual=" << residual);
        // The fp32 LayerNorm vs the double-sum reference: the tolerance of LayerNorm.ForwardMatchesRef.
        RC_EXPECT_CLOSE(got.y.data(), y.data(), N * C, (test::Tol{1e-5, 1e-5}));
        if (type == ActType::s8) {
          RC_EXPECT_CLOSE(got.scale.data(), scale.data(), N, (test::Tol{1e-6, 1e-5}));
          // The inputs differ by ~1e-6, so a value at a rounding boundary may land one step over.
          int64_t off = 0;
          for (size_t i = 0; i < q.size(); ++i) {
            ASSERT_LE(std::abs(int(got.q[i]) - int(q[i])), 1) << i;
            off += got.q[i] != q[i];
          }
          EXPECT_LT(off, N * C / 100 + 1);
        } else {
          for (size_t i = 0; i < b.size(); ++i)
            ASSERT_LE(std::abs(bf16_to_f32(got.b[i]) - bf16_to_f32(b[i])), 1e-2f * (1.0f + std::fabs(y[i]))) << i;
        }
      }
}

// linear_forward on the LayerNorm's int8 rows + scales (or bf16 rows) is the GEMM on the fp32
// rows bit for bit: the GEMM used to quantise / round them with the same kernel. M > 256 runs
// several int8 row chunks.
TEST(LayerNormGemmInput, LinearOnPreparedInputEqualsLinearOnFp32Rows) {
  const ExecCtx ctx{};
  for (int64_t M : {1, 37, 300}) {
    const int64_t K = 96, N = 80;
    const auto x = randn(M * K, uint64_t(M), 1.5f), w = randn(N * K, 11, 0.2f), bias = randn(N, 12);
    std::vector<int8_t> q(size_t(M * K));
    std::vector<float> s(static_cast<size_t>(M));
    std::vector<uint16_t> xb(size_t(M * K));
    quantize_rows_s8(q.data(), s.data(), x.data(), M, K);
    cpu::convert_f32_to_bf16(xb.data(), x.data(), M * K);
    for (PackedType pt : {PackedType::s8, PackedType::bf16})
      for (Epilogue ep : {Epilogue::none, Epilogue::gelu_erf})
        for (ActType yt : {ActType::f32, ActType::bf16}) {
          const PackedLinear p = PackedLinear::pack(w.data(), N, K, pt);
          const size_t ye = yt == ActType::f32 ? 4 : 2;
          std::vector<uint8_t> want(size_t(M * N) * ye), got(size_t(M * N) * ye);
          linear_forward(ctx, want.data(), yt, x.data(), ActType::f32, p, bias.data(), M, ep);
          if (pt == PackedType::s8)
            linear_forward(ctx, got.data(), yt, q.data(), ActType::s8, p, bias.data(), M, ep, s.data());
          else
            linear_forward(ctx, got.data(), yt, xb.data(), ActType::bf16, p, bias.data(), M, ep);
          EXPECT_EQ(want, got) << "M=" << M << " s8=" << (pt == PackedType::s8) << " gelu=" << int(ep)
                               << " bf16 out=" << (yt == ActType::bf16);
        }
  }
}

// y_type s8: the epilogue's bf16 rows quantised per chunk while in cache, bit for bit the bf16
// output followed by the next GEMM's own quantisation (quantize_rows_s8_bf16).
TEST(LayerNormGemmInput, Int8OutputEqualsBf16OutputThenQuantised) {
  const ExecCtx ctx{};
  for (int64_t M : {1, 37, 300}) {
    const int64_t K = 96, N = 80;
    const auto x = randn(M * K, uint64_t(M + 5), 1.5f), w = randn(N * K, 13, 0.2f), bias = randn(N, 14);
    const PackedLinear p = PackedLinear::pack(w.data(), N, K, PackedType::s8);
    for (Epilogue ep : {Epilogue::none, Epilogue::gelu_erf}) {
      std::vector<uint16_t> yb(size_t(M * N));
      std::vector<int8_t> want(size_t(M * N)), got(size_t(M * N), 99);
      std::vector<float> want_s(static_cast<size_t>(M)), got_s(static_cast<size_t>(M), -1.0f);
      linear_forward(ctx, yb.data(), ActType::bf16, x.data(), ActType::f32, p, bias.data(), M, ep);
      quantize_rows_s8_bf16(want.data(), want_s.data(), yb.data(), M, N);
      linear_forward(ctx, got.data(), ActType::s8, x.data(), ActType::f32, p, bias.data(), M, ep, nullptr,
                     got_s.data());
      EXPECT_EQ(want, got) << "M=" << M << " gelu=" << int(ep);
      EXPECT_EQ(want_s, got_s) << "M=" << M << " gelu=" << int(ep);
    }
  }
}

}  // namespace
}  // namespace rc::kernels
