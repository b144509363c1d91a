// AVX-512 LayerNorm, GELU (erf), AdamW and fp32→bf16 conversion. The bf16 conversion
// (VCVTNEPS2BF16) is this ISA's own; the rest is the bodies shared with AVX2 (the LayerNorm row,
// kernels/cpu/simd_ln_row.inc) and with NEON too (kernels/cpu/layernorm_rows.inc,
// kernels/cpu/simd_elementwise.inc), on avx512/vec_math.h's Simd.
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

#include "kernels/cpu/simd_ln_row.inc"

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
