// Hand-vectorised AVX2 + FMA kernels (src/kernels/cpu/avx2/*.cpp, compiled with -mavx2 -mfma
// -mf16c): the path of x86-64 CPUs without AVX-512 (AMD Zen 2/3, Intel before Skylake-SP), which
// otherwise run the portable loops. Call only when rc::cpu_isa() >= CpuIsa::avx2 (or, in tests,
// when cpu_features() has avx2 and fma). Declarations only: no intrinsics here, so generic TUs
// may include it. Each function does its own OpenMP split, as the cpu:: functions do. Same
// contracts as cpu/cpu_kernels.h.
#pragma once

#include <cstdint>

#include "kernels/optimizer.h"

namespace rc::kernels::cpu::avx2 {

// True when this build has the AVX2 TUs (x86-64) and the CPU path chosen allows them.
bool enabled() noexcept;
// True when the CPU can run them at all (for tests that call them directly).
bool supported() noexcept;

#include "kernels/cpu/isa_kernels.inc"

// Round to nearest even, NaN kept quiet (as rc::f32_to_bf16), by integer arithmetic.
void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept;

// kernels/linear.h: per-row symmetric int8 quantisation (bit-identical to ref::quantize_rows_s8).
void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K) noexcept;
void quantize_rows_s8_bf16(int8_t* q, float* scale, const uint16_t* x, int64_t M, int64_t K) noexcept;
// y[m,n] = act(xs[m]·ws[n]·acc[m,n] + bias[n]) into yf (fp32) or, when yf is null, yb (bf16).
void dequantize_rows(float* yf, uint16_t* yb, const int32_t* acc, const float* xs, const float* ws, const float* bias,
                     int64_t M, int64_t N, bool gelu) noexcept;

}  // namespace rc::kernels::cpu::avx2
