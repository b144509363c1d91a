// attention_forward_bf16 (bf16 Q/K/V in, bf16 out; inference) against the fp32 reference on the
// same (bf16-valued) input, on the dispatched path (AVX512-BF16 where the CPU has it) and the
// portable one; padding query rows exactly 0; CUDA refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/check.h"
#include "device/cpu_isa.h"
#include "kernel_test_util.h"
#include "kernels/attention_bf16.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tensor/bf16.h"

namespace rc::kernels {
namespace {

struct Bf16Case {
  int64_t B, T, H, D;
  std::vector<int32_t> lens;
};

const Bf16Case kBf16Cases[] = {
    {3, 37, 2, 64, {37, 1, 20}},   // odd lengths, a single key
    {2, 64, 12, 64, {64, 33}},     // roberta-base heads
    {2, 40, 3, 16, {40, 17}},      // D = 16
    {1, 9, 2, 24, {7}},            // D = 24: the portable path everywhere
    {2, 128, 2, 128, {128, 100}},  // longer rows, D = 128
};

std::vector<uint16_t> bf16_qkv(const Bf16Case& c, uint64_t seed) {
  // Scale 1.5: scores up to ~±20 after 1/√D, so the softmax is far from uniform.
  const auto x = test::randn(c.B * c.T * 3 * c.H * c.D, seed, 1.5f);
  std::vector<uint16_t> q(x.size());
  for (size_t i = 0; i < x.size(); ++i) q[i] = f32_to_bf16(x[i]);
  return q;
}

// max |got - want| / max |want| over the real rows; padding rows must be exactly 0.
double check(const Bf16Case& c, const std::vector<uint16_t>& got, const std::vector<uint16_t>& want) {
  const int64_t C = c.H * c.D;
  double worst = 0, amax = 0;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < c.T; ++t)
      for (int64_t k = 0; k < C; ++k) {
        const size_t i = size_t((b * c.T + t) * C + k);
        if (t >= c.lens[size_t(b)]) {
          EXPECT_EQ(got[i], 0) << "padding row b=" << b << " t=" << t;
          continue;
        }
        worst = std::max(worst, double(std::fabs(bf16_to_f32(got[i]) - bf16_to_f32(want[i]))));
        amax = std::max(amax, double(std::fabs(bf16_to_f32(want[i]))));
      }
  return worst / amax;
}

TEST(AttentionBf16, MatchesTheFp32ReferenceOnEveryPath) {
  const ExecCtx ctx{};
  double worst_fast = 0, worst_generic = 0;
  for (const Bf16Case& c : kBf16Cases) {
    const auto qkv = bf16_qkv(c, uint64_t(c.T * c.D));
    const size_t n = size_t(c.B * c.T * c.H * c.D);
    std::vector<uint16_t> want(n), got(n, 0xFFFF), gen(n, 0xFFFF);
    ref::attention_forward_bf16(want.data(), qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D);
    attention_forward_bf16(ctx, got.data(), qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D);
    cpu::generic::attention_forward_bf16(gen.data(), qkv.data(), c.lens.data(), c.B, c.T, c.H, c.D);
    const double ef = check(c, got, want), eg = check(c, gen, want);
    worst_fast = std::max(worst_fast, ef);
    worst_generic = std::max(worst_generic, eg);
    // Measured max 6.9e-3 of max |out| (both paths; bf16 P and bf16 out, each ~2^-9 relative).
    EXPECT_LT(ef, 2e-2) << "B=" << c.B << " T=" << c.T << " D=" << c.D;
    EXPECT_LT(eg, 2e-2) << "B=" << c.B << " T=" << c.T << " D=" << c.D;
  }
  std::printf("    bf16 attention vs fp32 ref: worst %.3g (dispatched, avx512_bf16=%d), %.3g (portable)\n", worst_fast,
              int(cpu_features().avx512_bf16), worst_generic);
}

TEST(AttentionBf16, CudaIsRefused) {
  ExecCtx ctx{};
  ctx.device = Device::cuda;
  const Bf16Case c{1, 4, 1, 16, {4}};
  const auto qkv = bf16_qkv(c, 1);
  std::vector<uint16_t> out(size_t(4 * 16));
  EXPECT_THROW(attention_forward_bf16(ctx, out.data(), qkv.data(), c.lens.data(), 1, 4, 1, 16), rc::Error);
}

}  // namespace
}  // namespace rc::kernels
