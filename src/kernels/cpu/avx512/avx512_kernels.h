// Hand-vectorised AVX-512 kernels (src/kernels/cpu/avx512/*.cpp, compiled with AVX-512 flags).
// Call only when rc::cpu_isa() >= CpuIsa::avx512 (or, in tests, when cpu_features() has
// avx512f/bw/vl).  Declarations only: no intrinsics here, so generic TUs may include it.
// Each function does its own OpenMP split, as the cpu:: functions do.
#pragma once

#include <cstdint>

#include "kernels/optimizer.h"

namespace rc::kernels::cpu::avx512 {

// True when this build has the AVX-512 TUs (x86-64) and the CPU path chosen allows them.
bool enabled() noexcept;
// True when the CPU can run them at all (for tests that call them directly).
bool supported() noexcept;

#include "kernels/cpu/isa_kernels.inc"

void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept;  // needs avx512_bf16

// kernels/linear.h: per-row symmetric int8 quantisation (bit-identical to ref::quantize_rows_s8).
void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K) noexcept;
void quantize_rows_s8_bf16(int8_t* q, float* scale, const uint16_t* x, int64_t M, int64_t K) noexcept;
// y[m,n] = act(xs[m]·ws[n]·acc[m,n] + bias[n]) into yf (fp32) or, when yf is null, yb (bf16).
void dequantize_rows(float* yf, uint16_t* yb, const int32_t* acc, const float* xs, const float* ws, const float* bias,
                     int64_t M, int64_t N, bool gelu) noexcept;

}  // namespace rc::kernels::cpu::avx512
