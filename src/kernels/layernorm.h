// LayerNorm over the last dim, biased variance (PyTorch).  x, y: (N, C)  gamma, beta: (C)
// mean, rstd: (N) fp32, saved for backward.
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"
#include "kernels/gemm_input.h"

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

// The same, and also the input of the GEMM that reads y, in its type (gemm_input.h): y rounded
// to bf16, or y quantised per row exactly as quantize_rows_s8(y) (bit for bit), computed while
// the rows are still in cache instead of in a pass of the GEMM's own. y is still written in
// fp32 (the residual the next LayerNorm reads). out.none(): exactly the forms above. A bf16/s8
// out is a CPU form (Errc::unsupported on CUDA: only packed CPU weights read it).
void layernorm_forward(const ExecCtx& ctx, float* y, float* mean, float* rstd, const float* x, const float* gamma,
                       const float* beta, int64_t N, int64_t C, float eps, const GemmInput& out);
void add_layernorm_forward(const ExecCtx& ctx, float* y, float* sum, float* mean, float* rstd, const float* x,
                           const float* residual, const float* gamma, const float* beta, int64_t N, int64_t C,
                           float eps, const GemmInput& out);

// OVERWRITES dx; ACCUMULATES (+=) dgamma, dbeta.  x is the LayerNorm's input.
void layernorm_backward(const ExecCtx& ctx, float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                        const float* gamma, const float* mean, const float* rstd, int64_t N, int64_t C);

namespace ref {
void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps);
// The GemmInput forms' oracle: sum = x + residual (residual null: the plain LayerNorm of x,
// sum unused), y = LayerNorm, then out from y (ref::quantize_rows_s8 or f32_to_bf16).
void layernorm_gemm_input(float* y, float* sum, const float* x, const float* residual, const float* gamma,
                          const float* beta, int64_t N, int64_t C, float eps, const GemmInput& out);
void layernorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x, const float* gamma,
                        const float* mean, const float* rstd, int64_t N, int64_t C);
}  // namespace ref

}  // namespace rc::kernels
