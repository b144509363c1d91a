// Scalar fp32 oracle for LayerNorm (layernorm.h): biased variance as PyTorch, double sums.
#include <cmath>
#include <cstdint>

#include "kernels/layernorm.h"
#include "kernels/linear.h"
#include "tensor/bf16.h"

namespace rc::kernels::ref {

void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps) {
  for (int64_t i = 0; i < N; ++i) {
    const float* xi = x + i * C;
    double mu = 0;
    for (int64_t c = 0; c < C; ++c) mu += xi[c];
    mu /= double(C);
    double var = 0;
    for (int64_t c = 0; c < C; ++c) var += (xi[c] - mu) * (xi[c] - mu);
    var /= double(C);
    const double rs = 1.0 / std::sqrt(var + double(eps));
    float* yi = y + i * C;
    for (int64_t c = 0; c < C; ++c) yi[c] = float((xi[c] - mu) * rs * gamma[c] + beta[c]);
    if (mean) mean[i] = float(mu);
    if (rstd) rstd[i] = float(rs);
  }
}

// dx = rstd · (g - mean(g) - x̂·mean(g·x̂)),  g = dy·γ;  dγ += dy·x̂;  dβ += dy.
void layernorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x, const float* gamma,
                        const float* mean, const float* rstd, int64_t N, int64_t C) {
  for (int64_t i = 0; i < N; ++i) {
    const float* xi = x + i * C;
    const float* dyi = dy + i * C;
    const double mu = mean[i], rs = rstd[i];
    double g_mean = 0, gx_mean = 0;
    for (int64_t c = 0; c < C; ++c) {
      const double xhat = (xi[c] - mu) * rs, g = double(dyi[c]) * gamma[c];
      g_mean += g;
      gx_mean += g * xhat;
    }
    g_mean /= double(C);
    gx_mean /= double(C);
    for (int64_t c = 0; c < C; ++c) {
      const double xhat = (xi[c] - mu) * rs, g = double(dyi[c]) * gamma[c];
      dx[i * C + c] = float(rs * (g - g_mean - xhat * gx_mean));
      dgamma[c] = float(dgamma[c] + double(dyi[c]) * xhat);
      dbeta[c] = float(dbeta[c] + double(dyi[c]));
    }
  }
}

void layernorm_gemm_input(float* y, float* sum, const float* x, const float* residual, const float* gamma,
                          const float* beta, int64_t N, int64_t C, float eps, const GemmInput& out) {
  const float* in = x;
  if (residual) {
    for (int64_t i = 0; i < N * C; ++i) sum[i] = x[i] + residual[i];
    in = sum;
  }
  layernorm_forward(y, nullptr, nullptr, in, gamma, beta, N, C, eps);
  if (out.type == ActType::s8) {
    quantize_rows_s8(static_cast<int8_t*>(out.data), out.row_scale, y, N, C);
  } else if (out.type == ActType::bf16) {
    auto* o = static_cast<uint16_t*>(out.data);
    for (int64_t i = 0; i < N * C; ++i) o[i] = f32_to_bf16(y[i]);
  }
}

}  // namespace rc::kernels::ref
