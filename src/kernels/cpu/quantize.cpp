// Per-row int8 quantisation (kernels/linear.h), dispatched to AVX-512 or the portable loop.
// Same formula as ref::quantize_rows_s8, so the results are bit-identical.
#include <cmath>
#include <cstdint>

#include "kernels/cpu/avx2/avx2_kernels.h"
#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/linear.h"
#include "tensor/bf16.h"

namespace rc::kernels {

namespace cpu::generic {

template <class Load>
static void quantize_rows(int8_t* q, float* scale, int64_t M, int64_t K, Load load) noexcept {
// Serial below ~128k elements (all of a 1×32 forward): a parallel region costs more than the
// work there, and far more when a neighbour holds the cores.
#pragma omp parallel for schedule(static) if (M * K >= (1 << 17))
  for (int64_t m = 0; m < M; ++m) {
    float amax = 0.0f;
    for (int64_t k = 0; k < K; ++k) amax = std::fmax(amax, std::fabs(load(m * K + k)));
    const float inv = amax > 0.0f ? 127.0f / amax : 1.0f;
    scale[m] = amax > 0.0f ? amax / 127.0f : 1.0f;
    for (int64_t k = 0; k < K; ++k) q[m * K + k] = int8_t(std::nearbyint(load(m * K + k) * inv));
  }
}

void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K) noexcept {
  quantize_rows(q, scale, M, K, [x](int64_t i) { return x[i]; });
}
void quantize_rows_s8_bf16(int8_t* q, float* scale, const uint16_t* x, int64_t M, int64_t K) noexcept {
  quantize_rows(q, scale, M, K, [x](int64_t i) { return bf16_to_f32(x[i]); });
}

void dequantize_rows(float* yf, uint16_t* yb, const int32_t* acc, const float* xs, const float* ws, const float* bias,
                     int64_t M, int64_t N, bool gelu) noexcept {
#pragma omp parallel for schedule(static) if (M * N >= (1 << 17))
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float v = (xs[m] * ws[n]) * float(acc[m * N + n]);
      if (bias) v += bias[n];
      if (gelu) v = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
      if (yf)
        yf[m * N + n] = v;
      else
        yb[m * N + n] = f32_to_bf16(v);
    }
}

}  // namespace cpu::generic

void cpu::dequantize_rows(float* yf, uint16_t* yb, const int32_t* acc, const float* xs, const float* ws,
                          const float* bias, int64_t M, int64_t N, bool gelu) noexcept {
#if defined(__x86_64__)
  if (cpu::avx512::enabled()) return cpu::avx512::dequantize_rows(yf, yb, acc, xs, ws, bias, M, N, gelu);
  if (cpu::avx2::enabled()) return cpu::avx2::dequantize_rows(yf, yb, acc, xs, ws, bias, M, N, gelu);
#elif defined(__aarch64__)
  if (cpu::neon::enabled()) return cpu::neon::dequantize_rows(yf, yb, acc, xs, ws, bias, M, N, gelu);
#endif
  cpu::generic::dequantize_rows(yf, yb, acc, xs, ws, bias, M, N, gelu);
}

// The path choice is spelled out per entry point, as in every cpu/<op>.cpp (alike on purpose:
// each names its own functions, and the #if keeps other architectures' symbols out).
void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K) {
#if defined(__x86_64__)
  if (cpu::avx512::enabled()) return cpu::avx512::quantize_rows_s8(q, scale, x, M, K);
  if (cpu::avx2::enabled()) return cpu::avx2::quantize_rows_s8(q, scale, x, M, K);
#elif defined(__aarch64__)
  if (cpu::neon::enabled()) return cpu::neon::quantize_rows_s8(q, scale, x, M, K);
#endif
  cpu::generic::quantize_rows_s8(q, scale, x, M, K);
}

void quantize_rows_s8_bf16(int8_t* q, float* scale, const uint16_t* x, int64_t M, int64_t K) {
#if defined(__x86_64__)
  if (cpu::avx512::enabled()) return cpu::avx512::quantize_rows_s8_bf16(q, scale, x, M, K);
  if (cpu::avx2::enabled()) return cpu::avx2::quantize_rows_s8_bf16(q, scale, x, M, K);
#elif defined(__aarch64__)
  if (cpu::neon::enabled()) return cpu::neon::quantize_rows_s8_bf16(q, scale, x, M, K);
#endif
  cpu::generic::quantize_rows_s8_bf16(q, scale, x, M, K);
}

}  // namespace rc::kernels
