// AVX2 LayerNorm, GELU (erf), AdamW and fp32→bf16 conversion. The bf16 conversion (integer
// rounding) is this ISA's own; the rest is the bodies shared with AVX-512 (the LayerNorm row,
// kernels/cpu/simd_ln_row.inc) and with NEON too (kernels/cpu/layernorm_rows.inc,
// kernels/cpu/simd_elementwise.inc), on avx2/vec_math.h's Simd.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu/avx2/avx2_kernels.h"
#include "kernels/cpu/avx2/vec_math.h"

namespace rc::kernels::cpu::avx2 {

namespace {

constexpr int64_t kParallelMin = 1 << 14;

#include "kernels/cpu/simd_ln_row.inc"

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
