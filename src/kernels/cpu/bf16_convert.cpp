// fp32 ↔ bf16 conversion for GEMM staging (see bf16_convert.h).
#include "kernels/cpu/bf16_convert.h"

#include "device/cpu_isa.h"
#include "kernels/cpu/avx2/avx2_kernels.h"
#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/neon/neon_kernels.h"
#include "tensor/bf16.h"

namespace rc::kernels::cpu {

void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept {
#if defined(__x86_64__)
  if (avx512::enabled() && cpu_features().avx512_bf16) return avx512::convert_f32_to_bf16(dst, src, n);
  if (avx2::enabled()) return avx2::convert_f32_to_bf16(dst, src, n);
#elif defined(__aarch64__)
  if (neon::bf16_enabled()) return neon::convert_f32_to_bf16_bfcvt(dst, src, n);
  if (neon::enabled()) return neon::convert_f32_to_bf16(dst, src, n);
#endif
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

void convert_bf16_to_f32(float* dst, const uint16_t* src, int64_t n) noexcept {
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

void round_to_bf16(float* dst, const float* src, int64_t n) noexcept {
  // Blocks through a stack buffer: the vectorised rounding above, then the widening, with no
  // staging buffer of n; each block is read before it is written, so dst may be src.
  constexpr int64_t kBlock = 4096;
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    uint16_t h[kBlock];
    const int64_t len = n - b0 < kBlock ? n - b0 : kBlock;
    convert_f32_to_bf16(h, src + b0, len);
    for (int64_t i = 0; i < len; ++i) dst[b0 + i] = bf16_to_f32(h[i]);
  }
}

}  // namespace rc::kernels::cpu
