// Checks + dispatch for layernorm.h.
#include "kernels/layernorm.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"

namespace rc::kernels {

void layernorm_forward(const ExecCtx& ctx, float* y, float* mean, float* rstd, const float* x, const float* gamma,
                       const float* beta, int64_t N, int64_t C, float eps) {
  RC_ASSERT(N >= 0 && C > 0 && y && x && gamma && beta && eps >= 0.0f);
  RC_ASSERT((mean == nullptr) == (rstd == nullptr));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::layernorm_forward(y, mean, rstd, x, gamma, beta, N, C, eps);
    case Device::cuda:
      RC_CUDA_RETURN(layernorm_forward, y, mean, rstd, x, gamma, beta, N, C, eps, ctx.stream);
  }
}

void add_layernorm_forward(const ExecCtx& ctx, float* y, float* sum, float* mean, float* rstd, const float* x,
                           const float* residual, const float* gamma, const float* beta, int64_t N, int64_t C,
                           float eps) {
  RC_ASSERT(N >= 0 && C > 0 && y && sum && x && residual && gamma && beta && eps >= 0.0f);
  RC_ASSERT((mean == nullptr) == (rstd == nullptr));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::add_layernorm_forward(y, sum, mean, rstd, x, residual, gamma, beta, N, C, eps);
    case Device::cuda:
      RC_CUDA_RETURN(add_layernorm_forward, y, sum, mean, rstd, x, residual, gamma, beta, N, C, eps, ctx.stream);
  }
}

void layernorm_backward(const ExecCtx& ctx, float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                        const float* gamma, const float* mean, const float* rstd, int64_t N, int64_t C) {
  RC_ASSERT(N >= 0 && C > 0 && dx && dgamma && dbeta && dy && x && gamma && mean && rstd);
  switch (ctx.device) {
    case Device::cpu:
      return cpu::layernorm_backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd, N, C);
    case Device::cuda:
      RC_CUDA_RETURN(layernorm_backward, dx, dgamma, dbeta, dy, x, gamma, mean, rstd, N, C, ctx.stream);
  }
}

}  // namespace rc::kernels
