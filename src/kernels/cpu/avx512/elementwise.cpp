// AVX-512 LayerNorm, GELU (erf), AdamW and fp32→bf16 conversion. The row statistics of the
// LayerNorm forward (ln_row: one accumulator, the residual summed in the same pass) and the
// bf16 conversion (VCVTNEPS2BF16) are this ISA's own; the rest is the body shared with NEON
// (kernels/cpu/layernorm_rows.inc, kernels/cpu/simd_elementwise.inc) on avx512/vec_math.h's Simd.
#if defined(__x86_64__)

// GCC 12 flags the _mm512_undefined_ps() inside its own masked intrinsics (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/avx512/vec_math.h"

namespace rc::kernels::cpu::avx512 {

namespace {

constexpr int64_t kParallelMin = 1 << 14;

// y = (s - μ)·rstd·γ + β over one row, s = x (+ residual, stored to sum when given).
// Not shared with neon/elementwise.cpp's ln_row on purpose (a `duplicates` pair): the two sum in
// different orders (here one accumulator, NEON 4 + 2), and each keeps the rounding it was
// validated with; a shared body would change one path's results.
inline void ln_row(float* y, float* mean, float* rstd, const float* x, const float* residual, float* sum,
                   const float* gamma, const float* beta, int64_t C, float eps) {
  const float* s = x;
  __m512 acc = _mm512_setzero_ps();
  if (residual) {
    for (int64_t c = 0; c < C; c += 16) {
      const __mmask16 m = tail_mask(C - c);
      const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, x + c), _mm512_maskz_loadu_ps(m, residual + c));
      _mm512_mask_storeu_ps(sum + c, m, v);
      acc = _mm512_add_ps(acc, v);
    }
    s = sum;
  } else {
    for (int64_t c = 0; c < C; c += 16) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(tail_mask(C - c), x + c));
  }
  const float mu = hsum(acc) / float(C);
  const __m512 vmu = _mm512_set1_ps(mu);
  __m512 var = _mm512_setzero_ps();
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 m = tail_mask(C - c);
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, s + c), vmu);
    var = _mm512_fmadd_ps(d, d, var);
  }
  const float rs = 1.0f / std::sqrt(hsum(var) / float(C) + eps);
  const __m512 vrs = _mm512_set1_ps(rs);
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 m = tail_mask(C - c);
    const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + c), vmu), vrs);
    _mm512_mask_storeu_ps(y + c, m,
                          _mm512_fmadd_ps(xh, _mm512_maskz_loadu_ps(m, gamma + c), _mm512_maskz_loadu_ps(m, beta + c)));
  }
  if (mean) *mean = mu;
  if (rstd) *rstd = rs;
}

}  // namespace

#include "kernels/cpu/layernorm_rows.inc"

#include "kernels/cpu/simd_elementwise.inc"

void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept {
  const int64_t blocks = (n + 15) / 16;
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i = blk * 16;
    const __mmask16 m = tail_mask(n - i);
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + i));
    _mm256_mask_storeu_epi16(dst + i, m, reinterpret_cast<__m256i>(b));
  }
}

}  // namespace rc::kernels::cpu::avx512

#endif  // __x86_64__
