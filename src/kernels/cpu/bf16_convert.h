// fp32 ↔ bf16 of flat buffers, parallel: the rounding (round-to-nearest-even, as
// rc::f32_to_bf16; vectorised on AVX512-BF16, AVX2 and NEON / BFCVTN), the exact widening back,
// and the two together (the operand a bf16 GEMM reads, held as fp32).
#pragma once

#include <cstdint>

namespace rc::kernels::cpu {

void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept;
// dst[i] = the fp32 value of src[i] (exact).
void convert_bf16_to_f32(float* dst, const uint16_t* src, int64_t n) noexcept;
// dst[i] = the fp32 value of bf16(src[i]), rounded as convert_f32_to_bf16 rounds it: for the fp32
// GEMM that stands in for a bf16 one (onednn_matmul.h). dst may be src.
void round_to_bf16(float* dst, const float* src, int64_t n) noexcept;

}  // namespace rc::kernels::cpu
