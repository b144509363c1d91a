// AVX2 LayerNorm, GELU (erf), AdamW and fp32→bf16 conversion. The row statistics of the
// LayerNorm forward (ln_row: one accumulator, the residual summed in the same pass, as on
// AVX-512) and the bf16 conversion (integer rounding) are this ISA's own; the rest is the body
// shared with AVX-512 and NEON (kernels/cpu/layernorm_rows.inc, kernels/cpu/simd_elementwise.inc)
// on avx2/vec_math.h's Simd.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu/avx2/avx2_kernels.h"
#include "kernels/cpu/avx2/vec_math.h"

namespace rc::kernels::cpu::avx2 {

namespace {

constexpr int64_t kParallelMin = 1 << 14;

// y = (s - μ)·rstd·γ + β over one row, s = x (+ residual, stored to sum when given). The
// summation order of avx512::ln_row (one accumulator, in order) on 8 lanes.
inline void ln_row(float* y, float* mean, float* rstd, const float* x, const float* residual, float* sum,
                   const float* gamma, const float* beta, int64_t C, float eps) {
  const float* s = x;
  Simd::V acc = Simd::zero();
  if (residual) {
    for (int64_t c = 0; c < C; c += Simd::kWidth) {
      const Simd::Tail t = Simd::tail(C - c);
      const Simd::V v = Simd::add(Simd::load(x + c, t), Simd::load(residual + c, t));
      Simd::store(sum + c, v, t);
      acc = Simd::add(acc, v);
    }
    s = sum;
  } else {
    for (int64_t c = 0; c < C; c += Simd::kWidth) acc = Simd::add(acc, Simd::load(x + c, Simd::tail(C - c)));
  }
  const float mu = Simd::sum(acc) / float(C);
  const Simd::V vmu = Simd::set1(mu);
  Simd::V var = Simd::zero();
  for (int64_t c = 0; c < C; c += Simd::kWidth) {
    const Simd::Tail t = Simd::tail(C - c);
    const Simd::V d = Simd::sub_tail(Simd::load(s + c, t), vmu, t);
    var = Simd::fma(d, d, var);
  }
  const float rs = 1.0f / std::sqrt(Simd::sum(var) / float(C) + eps);
  const Simd::V vrs = Simd::set1(rs);
  for (int64_t c = 0; c < C; c += Simd::kWidth) {
    const Simd::Tail t = Simd::tail(C - c);
    const Simd::V xh = Simd::mul(Simd::sub(Simd::load(s + c, t), vmu), vrs);
    Simd::store(y + c, Simd::fma(xh, Simd::load(gamma + c, t), Simd::load(beta + c, t)), t);
  }
  if (mean) *mean = mu;
  if (rstd) *rstd = rs;
}

}  // namespace

#include "kernels/cpu/layernorm_rows.inc"

#include "kernels/cpu/simd_elementwise.inc"

void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept {
  const int64_t blocks = n / 8;
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t blk = 0; blk < blocks; ++blk)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + blk * 8), f32_to_bf16_rne(_mm256_loadu_ps(src + blk * 8)));
  if (const int64_t i = blocks * 8; i < n) {
    alignas(16) uint16_t b[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(b), f32_to_bf16_rne(Simd::load(src + i, n - i)));
    for (int64_t k = 0; i + k < n; ++k) dst[i + k] = b[k];
  }
}

}  // namespace rc::kernels::cpu::avx2

#endif  // __x86_64__
