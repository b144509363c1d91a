// fp32 → bf16 conversion for GEMM staging (see bf16_convert.h).
#include "kernels/cpu/bf16_convert.h"

#include "tensor/bf16.h"

namespace rc::kernels::cpu {

void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept {
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

}  // namespace rc::kernels::cpu
