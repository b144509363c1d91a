// Hand-vectorised aarch64 kernels (src/kernels/cpu/neon/*.cpp): the Advanced SIMD (NEON) twins
// of cpu/avx512/, plus the TUs that need Armv8.6 BF16/I8MM (bf16.cpp) or SVE (sve.cpp), each
// compiled with its own -march (src/CMakeLists.txt) and called only when rc::cpu_isa() allows.
// Declarations only: no intrinsics here, so generic TUs may include it. Each function does its
// own OpenMP split, as the cpu:: functions do. Same contracts as cpu/cpu_kernels.h.
#pragma once

#include <cstdint>

#include "kernels/optimizer.h"

namespace rc::kernels::cpu::neon {

// True when this build has the NEON TUs (aarch64) and the chosen path allows them
// (RC_CPU_ISA=neon, neon_bf16 or sve); supported(): the CPU can run them at all (tests).
bool enabled() noexcept;
bool supported() noexcept;
// The same for the BF16 + I8MM TU (neon_bf16, or sve on a CPU that has both).
bool bf16_enabled() noexcept;
bool bf16_supported() noexcept;

#include "kernels/cpu/isa_kernels.inc"

// Round to nearest even, NaN kept quiet (as rc::f32_to_bf16): integer arithmetic on plain NEON,
// BFCVTN in the BF16 TU.
void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept;
void convert_f32_to_bf16_bfcvt(uint16_t* dst, const float* src, int64_t n) noexcept;  // needs bf16_supported()

// The packed bf16 linear on BFMMLA (needs bf16_supported()): y(M, N) = bf16(x)·bf16(W)ᵀ (+ bias),
// fp32 accumulation. W(N, K) is packed once by pack_bfmmla_weights into bfmmla_packed_size(N, K)
// bf16 values; x is fp32 (rounded to nearest even here) or already bf16.
int64_t bfmmla_packed_size(int64_t N, int64_t K) noexcept;
void pack_bfmmla_weights(uint16_t* dst, const float* w, int64_t N, int64_t K) noexcept;
void linear_bf16_bfmmla(float* y, const float* x, const uint16_t* wp, const float* bias, int64_t M, int64_t N,
                        int64_t K) noexcept;
void linear_bf16_bfmmla_bf16in(float* y, const uint16_t* x, const uint16_t* wp, const float* bias, int64_t M, int64_t N,
                               int64_t K) noexcept;

// The packed int8 GEMM on SMMLA (needs bf16_supported(): BF16 and I8MM come together here):
// acc(M, N) = xq(M, K)·wq(N, K)ᵀ in int32, exact. wq packed once by pack_smmla_weights into
// smmla_packed_size(N, K) bytes.
int64_t smmla_packed_size(int64_t N, int64_t K) noexcept;
void pack_smmla_weights(int8_t* dst, const int8_t* wq, int64_t N, int64_t K) noexcept;
void gemm_s8_smmla(int32_t* acc, const int8_t* xq, const int8_t* wp, int64_t M, int64_t N, int64_t K) noexcept;

// kernels/linear.h: per-row symmetric int8 quantisation (bit-identical to ref::quantize_rows_s8).
void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K) noexcept;
void quantize_rows_s8_bf16(int8_t* q, float* scale, const uint16_t* x, int64_t M, int64_t K) noexcept;
void dequantize_rows(float* yf, uint16_t* yb, const int32_t* acc, const float* xs, const float* ws, const float* bias,
                     int64_t M, int64_t N, bool gelu) noexcept;

}  // namespace rc::kernels::cpu::neon

// SVE (vector-length agnostic, predicated tails): where it pays over NEON — the
// transcendental-heavy elementwise kernels, whose per-element work is long enough that the
// 256-bit vectors of Neoverse V1 and the absence of scalar tails matter.
namespace rc::kernels::cpu::sve {

bool enabled() noexcept;    // RC_CPU_ISA resolved to sve
bool supported() noexcept;  // the CPU has SVE

void gelu_erf_forward(float* y, const float* x, int64_t n) noexcept;
void gelu_erf_backward(float* dx, const float* dy, const float* x, int64_t n) noexcept;
void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps) noexcept;
void add_layernorm_forward(float* y, float* sum, float* mean, float* rstd, const float* x, const float* residual,
                           const float* gamma, const float* beta, int64_t N, int64_t C, float eps) noexcept;

}  // namespace rc::kernels::cpu::sve
