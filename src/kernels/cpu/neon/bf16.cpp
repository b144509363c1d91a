// The kernels that need Armv8.6 BF16 (compiled with -march=armv8.2-a+bf16+i8mm, called only when
// rc::cpu_use_arm_bf16_i8mm()): fp32 → bf16 with BFCVTN, one instruction per 4 lanes instead of
// the seven integer operations of the plain-NEON rounding.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstdint>

#include "kernels/cpu/neon/neon_kernels.h"
#include "tensor/bf16.h"

namespace rc::kernels::cpu::neon {

void convert_f32_to_bf16_bfcvt(uint16_t* dst, const float* src, int64_t n) noexcept {
  const int64_t blocks = n / 8;
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i = blk * 8;
    // BFCVTN/BFCVTN2: round to nearest even (FPCR.RMode is RNE for user code), NaN quietened.
    const bfloat16x8_t lo = vcvtq_low_bf16_f32(vld1q_f32(src + i));
    vst1q_u16(dst + i, vreinterpretq_u16_bf16(vcvtq_high_bf16_f32(lo, vld1q_f32(src + i + 4))));
  }
  for (int64_t i = blocks * 8; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

}  // namespace rc::kernels::cpu::neon

#endif  // __aarch64__
