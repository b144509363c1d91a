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

void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps) noexcept;
void add_layernorm_forward(float* y, float* sum, float* mean, float* rstd, const float* x, const float* residual,
                           const float* gamma, const float* beta, int64_t N, int64_t C, float eps) noexcept;
void layernorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x, const float* gamma,
                        const float* mean, const float* rstd, int64_t N, int64_t C) noexcept;

void gelu_erf_forward(float* y, const float* x, int64_t n) noexcept;
void gelu_erf_backward(float* dx, const float* dy, const float* x, int64_t n) noexcept;

void adamw_step(float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                int64_t num_segments, const AdamWHyper& hyper) noexcept;

void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept;  // needs avx512_bf16

// kernels/linear.h: per-row symmetric int8 quantisation (bit-identical to ref::quantize_rows_s8).
void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K) noexcept;
void quantize_rows_s8_bf16(int8_t* q, float* scale, const uint16_t* x, int64_t M, int64_t K) noexcept;
// y[m,n] = act(xs[m]·ws[n]·acc[m,n] + bias[n]) into yf (fp32) or, when yf is null, yb (bf16).
void dequantize_rows(float* yf, uint16_t* yb, const int32_t* acc, const float* xs, const float* ws, const float* bias,
                     int64_t M, int64_t N, bool gelu) noexcept;

void attention_forward(float* out, float* probs, const float* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                       int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0) noexcept;
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs, const int32_t* seq_lens,
                        int64_t B, int64_t T, int64_t H, int64_t D, float dropout_p, uint64_t seed,
                        uint64_t row0) noexcept;

}  // namespace rc::kernels::cpu::avx512
