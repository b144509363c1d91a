// fp32 → bf16 rounding (round-to-nearest-even, as rc::f32_to_bf16) of a flat buffer, parallel,
// vectorised with AVX512-BF16 or, on aarch64, NEON (BFCVTN with the BF16 extension).
#pragma once

#include <cstdint>

namespace rc::kernels::cpu {

void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept;

}  // namespace rc::kernels::cpu
