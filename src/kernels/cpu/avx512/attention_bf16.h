// AVX512-BF16 attention on bf16 Q/K/V (kernels/attention_bf16.h); declaration only (no
// intrinsics), so generic TUs may include it. Call when avx512::enabled(), the CPU has
// avx512_bf16, and D one of 16, 32, 64, 128, 256.
#pragma once

#include <cstdint>

namespace rc::kernels::cpu::avx512 {

void attention_forward_bf16(uint16_t* out, const uint16_t* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                            int64_t H, int64_t D) noexcept;

}  // namespace rc::kernels::cpu::avx512
