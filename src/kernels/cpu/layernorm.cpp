// CPU LayerNorm: rows in parallel for y/dx; parameter gradients in a second, column-parallel
// pass so that threads never share an accumulator (deterministic for any thread count, and
// no per-call scratch).  Two-pass mean/variance in float per row.
#include <cmath>
#include <cstdint>

#include "kernels/cpu/avx2/avx2_kernels.h"
#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/cpu/cpu_kernels.h"

namespace rc::kernels::cpu {

namespace generic {

namespace {

// One row: y = (x - μ)·rstd·γ + β.  x may alias y.  The formula of ref::layernorm_forward in
// float instead of double (a `duplicates` shape pair, on purpose: the ref twin is the oracle the
// tests compare against and stays a plain copy of the formula, independent of this one).
inline void ln_row(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta, int64_t C,
                   float eps) noexcept {
  float mu = 0;
  for (int64_t c = 0; c < C; ++c) mu += x[c];
  mu /= float(C);
  float var = 0;
  for (int64_t c = 0; c < C; ++c) var += (x[c] - mu) * (x[c] - mu);
  var /= float(C);
  const float rs = 1.0f / std::sqrt(var + eps);
  for (int64_t c = 0; c < C; ++c) y[c] = (x[c] - mu) * rs * gamma[c] + beta[c];
  if (mean) *mean = mu;
  if (rstd) *rstd = rs;
}

}  // namespace

void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps) noexcept {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i)
    ln_row(y + i * C, mean ? mean + i : nullptr, rstd ? rstd + i : nullptr, x + i * C, gamma, beta, C, eps);
}

void add_layernorm_forward(float* y, float* sum, float* mean, float* rstd, const float* x, const float* residual,
                           const float* gamma, const float* beta, int64_t N, int64_t C, float eps) noexcept {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    float* s = sum + i * C;
    for (int64_t c = 0; c < C; ++c) s[c] = x[i * C + c] + residual[i * C + c];
    ln_row(y + i * C, mean ? mean + i : nullptr, rstd ? rstd + i : nullptr, s, gamma, beta, C, eps);
  }
}

void layernorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x, const float* gamma,
                        const float* mean, const float* rstd, int64_t N, int64_t C) noexcept {
  // Parameter gradients first (dx may alias dy); columns are split between threads.
#pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; c0 < C; c0 += 64) {
    const int64_t w = c0 + 64 < C ? 64 : C - c0;
    // Summed locally and added once, so the result is "old + this call's sum" exactly.
    float sg[64] = {}, sb[64] = {};
    for (int64_t i = 0; i < N; ++i) {
      const float mu = mean[i], rs = rstd[i];
      const float* dyi = dy + i * C + c0;
      const float* xi = x + i * C + c0;
      for (int64_t c = 0; c < w; ++c) {
        sg[c] += dyi[c] * (xi[c] - mu) * rs;
        sb[c] += dyi[c];
      }
    }
    for (int64_t c = 0; c < w; ++c) {
      dgamma[c0 + c] += sg[c];
      dbeta[c0 + c] += sb[c];
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    const float* xi = x + i * C;
    const float* dyi = dy + i * C;
    const float mu = mean[i], rs = rstd[i];
    float g_mean = 0, gx_mean = 0;
    for (int64_t c = 0; c < C; ++c) {
      const float g = dyi[c] * gamma[c];
      g_mean += g;
      gx_mean += g * (xi[c] - mu) * rs;
    }
    g_mean /= float(C);
    gx_mean /= float(C);
    float* dxi = dx + i * C;
    for (int64_t c = 0; c < C; ++c) dxi[c] = rs * (dyi[c] * gamma[c] - g_mean - (xi[c] - mu) * rs * gx_mean);
  }
}

}  // namespace generic

void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps) noexcept {
#if defined(__x86_64__)
  if (avx512::enabled()) return avx512::layernorm_forward(y, mean, rstd, x, gamma, beta, N, C, eps);
  if (avx2::enabled()) return avx2::layernorm_forward(y, mean, rstd, x, gamma, beta, N, C, eps);
#elif defined(__aarch64__)
  if (sve::enabled()) return sve::layernorm_forward(y, mean, rstd, x, gamma, beta, N, C, eps);
  if (neon::enabled()) return neon::layernorm_forward(y, mean, rstd, x, gamma, beta, N, C, eps);
#endif
  generic::layernorm_forward(y, mean, rstd, x, gamma, beta, N, C, eps);
}

void add_layernorm_forward(float* y, float* sum, float* mean, float* rstd, const float* x, const float* residual,
                           const float* gamma, const float* beta, int64_t N, int64_t C, float eps) noexcept {
#if defined(__x86_64__)
  if (avx512::enabled()) return avx512::add_layernorm_forward(y, sum, mean, rstd, x, residual, gamma, beta, N, C, eps);
  if (avx2::enabled()) return avx2::add_layernorm_forward(y, sum, mean, rstd, x, residual, gamma, beta, N, C, eps);
#elif defined(__aarch64__)
  if (sve::enabled()) return sve::add_layernorm_forward(y, sum, mean, rstd, x, residual, gamma, beta, N, C, eps);
  if (neon::enabled()) return neon::add_layernorm_forward(y, sum, mean, rstd, x, residual, gamma, beta, N, C, eps);
#endif
  generic::add_layernorm_forward(y, sum, mean, rstd, x, residual, gamma, beta, N, C, eps);
}

void layernorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x, const float* gamma,
                        const float* mean, const float* rstd, int64_t N, int64_t C) noexcept {
#if defined(__x86_64__)
  if (avx512::enabled()) return avx512::layernorm_backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd, N, C);
  if (avx2::enabled()) return avx2::layernorm_backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd, N, C);
#elif defined(__aarch64__)
  if (neon::enabled()) return neon::layernorm_backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd, N, C);
#endif
  generic::layernorm_backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd, N, C);
}

}  // namespace rc::kernels::cpu
