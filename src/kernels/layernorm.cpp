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

namespace {
void check_gemm_input(const ExecCtx& ctx, const GemmInput& out) {
  RC_ASSERT(out.none() || (out.data && (out.type != ActType::s8 || out.row_scale)));
  RC_CHECK(out.none() || ctx.device == Device::cpu, Errc::unsupported,
           "layernorm: a bf16/int8 GEMM input is written for packed CPU weights only"
           "\nHINT: on CUDA the GEMMs read the fp32 LayerNorm output");
}
}  // namespace

void layernorm_forward(const ExecCtx& ctx, float* y, float* mean, float* rstd, const float* x, const float* gamma,
                       const float* beta, int64_t N, int64_t C, float eps, const GemmInput& out) {
  check_gemm_input(ctx, out);
  if (out.none()) return layernorm_forward(ctx, y, mean, rstd, x, gamma, beta, N, C, eps);
  RC_ASSERT(N >= 0 && C > 0 && y && x && gamma && beta && eps >= 0.0f && (mean == nullptr) == (rstd == nullptr));
  cpu::layernorm_gemm_input(y, nullptr, mean, rstd, x, nullptr, gamma, beta, N, C, eps, out);
}

void add_layernorm_forward(const ExecCtx& ctx, float* y, float* sum, float* mean, float* rstd, const float* x,
                           const float* residual, const float* gamma, const float* beta, int64_t N, int64_t C,
                           float eps, const GemmInput& out) {
  check_gemm_input(ctx, out);
  if (out.none()) return add_layernorm_forward(ctx, y, sum, mean, rstd, x, residual, gamma, beta, N, C, eps);
  RC_ASSERT(N >= 0 && C > 0 && y && sum && x && residual && gamma && beta && eps >= 0.0f);
  RC_ASSERT((mean == nullptr) == (rstd == nullptr));
  cpu::layernorm_gemm_input(y, sum, mean, rstd, x, residual, gamma, beta, N, C, eps, out);
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
