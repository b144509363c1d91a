// LayerNorm over the last dim, biased variance (PyTorch).  x, y: (N, C)  gamma, beta: (C)
// mean, rstd: (N) fp32, saved for backward.
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// OVERWRITES y, mean, rstd.  mean/rstd may be null (inference).
void layernorm_forward(const ExecCtx& ctx, float* y, float* mean, float* rstd, const float* x, const float* gamma,
                       const float* beta, int64_t N, int64_t C, float eps);

// y = LayerNorm(x + residual): the post-LN residual join in one pass.  sum(N,C) receives
// x + residual (needed by backward).  OVERWRITES y, sum, mean, rstd (mean/rstd may be null).
// y may alias x or residual; sum may alias x or residual.
void add_layernorm_forward(const ExecCtx& ctx, float* y, float* sum, float* mean, float* rstd, const float* x,
                           const float* residual, const float* gamma, const float* beta, int64_t N, int64_t C,
                           float eps);

// OVERWRITES dx; ACCUMULATES (+=) dgamma, dbeta.  x is the LayerNorm's input.
void layernorm_backward(const ExecCtx& ctx, float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                        const float* gamma, const float* mean, const float* rstd, int64_t N, int64_t C);

namespace ref {
void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps);
void layernorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x, const float* gamma,
                        const float* mean, const float* rstd, int64_t N, int64_t C);
}  // namespace ref

}  // namespace rc::kernels
