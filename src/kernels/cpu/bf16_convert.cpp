// fp32 → bf16 conversion for GEMM staging (see bf16_convert.h).
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

}  // namespace rc::kernels::cpu
