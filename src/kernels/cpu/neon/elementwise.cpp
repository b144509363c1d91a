// NEON LayerNorm, GELU (erf), AdamW and fp32→bf16 conversion. The row statistics of the
// LayerNorm forward (ln_row: 4 + 2 accumulators, a scalar variance tail) and the bf16 conversion
// (integer rounding, 8 lanes a step) are this ISA's own: changing their summation order would
// change the results it was validated with. The rest is the body shared with AVX-512
// (kernels/cpu/layernorm_rows.inc, kernels/cpu/simd_elementwise.inc) on neon/vec_math.h's Simd.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/cpu/neon/vec_math.h"

namespace rc::kernels::cpu::neon {

namespace {

constexpr int64_t kParallelMin = 1 << 14;

// y = (s - μ)·rstd·γ + β over one row, s = x (+ residual, stored to sum when given).
// Not the x86 paths' row (kernels/cpu/simd_ln_row.inc) on purpose: see the comment there.
inline void ln_row(float* y, float* mean, float* rstd, const float* x, const float* residual, float* sum,
                   const float* gamma, const float* beta, int64_t C, float eps) {
  const float* s = x;
  if (residual) {
    for (int64_t c = 0; c < C; c += 4)
      Simd::store(sum + c, vaddq_f32(Simd::load(x + c, C - c), Simd::load(residual + c, C - c)), C - c);
    s = sum;
  }
  // One summation order with or without the residual, so both entry points agree bit for bit.
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t c = 0;
  for (; c + 16 <= C; c += 16) {
    a0 = vaddq_f32(a0, vld1q_f32(s + c));
    a1 = vaddq_f32(a1, vld1q_f32(s + c + 4));
    a2 = vaddq_f32(a2, vld1q_f32(s + c + 8));
    a3 = vaddq_f32(a3, vld1q_f32(s + c + 12));
  }
  for (; c < C; c += 4) a0 = vaddq_f32(a0, Simd::load(s + c, C - c));
  const float mu = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3))) / float(C);
  const float32x4_t vmu = vdupq_n_f32(mu);
  float32x4_t v0 = vdupq_n_f32(0.0f), v1 = v0;
  c = 0;
  for (; c + 8 <= C; c += 8) {
    const float32x4_t d0 = vsubq_f32(vld1q_f32(s + c), vmu), d1 = vsubq_f32(vld1q_f32(s + c + 4), vmu);
    v0 = vfmaq_f32(v0, d0, d0);
    v1 = vfmaq_f32(v1, d1, d1);
  }
  for (; c < C; ++c) {
    const float d = s[c] - mu;
    v0 = vsetq_lane_f32(vgetq_lane_f32(v0, 0) + d * d, v0, 0);
  }
  const float rs = 1.0f / std::sqrt(vaddvq_f32(vaddq_f32(v0, v1)) / float(C) + eps);
  const float32x4_t vrs = vdupq_n_f32(rs);
  for (c = 0; c < C; c += 4) {
    const float32x4_t xh = vmulq_f32(vsubq_f32(Simd::load(s + c, C - c), vmu), vrs);
    Simd::store(y + c, vfmaq_f32(Simd::load(beta + c, C - c), xh, Simd::load(gamma + c, C - c)), C - c);
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
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i = blk * 8;
    vst1q_u16(dst + i, vcombine_u16(f32_to_bf16_rne(vld1q_f32(src + i)), f32_to_bf16_rne(vld1q_f32(src + i + 4))));
  }
  for (int64_t i = blocks * 8; i < n; i += 4) {
    uint16_t b[4];
    vst1_u16(b, f32_to_bf16_rne(Simd::load(src + i, n - i)));
    for (int64_t k = 0; k < 4 && i + k < n; ++k) dst[i + k] = b[k];
  }
}

}  // namespace rc::kernels::cpu::neon

#endif  // __aarch64__
