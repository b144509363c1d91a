// Checks + dispatch for rows.h.  The switch per op is dispatch.h's (alike on purpose).
#include "kernels/rows.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"

namespace rc::kernels {

void position_ids(const ExecCtx& ctx, int32_t* positions, const int32_t* ids, int64_t B, int64_t T, int32_t pad) {
  RC_ASSERT(B >= 0 && T >= 0 && (B * T == 0 || (positions && ids)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::position_ids(positions, ids, B, T, pad);
    case Device::cuda:
      RC_CUDA_RETURN(position_ids, positions, ids, B, T, pad, ctx.stream);
  }
}

void gather_first_tokens(const ExecCtx& ctx, float* dst, const float* src, int64_t B, int64_t T, int64_t C) {
  RC_ASSERT(B >= 0 && T >= 1 && C >= 0 && (B * C == 0 || (dst && src)));
  RC_ASSERT(dst + B * C <= src || src + B * T * C <= dst || B * C == 0);  // no overlap
  switch (ctx.device) {
    case Device::cpu:
      return cpu::gather_first_tokens(dst, src, B, T, C);
    case Device::cuda:
      RC_CUDA_RETURN(gather_first_tokens, dst, src, B, T, C, ctx.stream);
  }
}

void scatter_first_tokens(const ExecCtx& ctx, float* dst, const float* src, int64_t B, int64_t T, int64_t C) {
  RC_ASSERT(B >= 0 && T >= 1 && C >= 0 && (B * C == 0 || (dst && src)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::scatter_first_tokens(dst, src, B, T, C);
    case Device::cuda:
      RC_CUDA_RETURN(scatter_first_tokens, dst, src, B, T, C, ctx.stream);
  }
}

void gather_rows(const ExecCtx& ctx, float* dst, const float* src, const int64_t* index, int64_t M, int64_t C) {
  RC_ASSERT(M >= 0 && C >= 0 && (M * C == 0 || (dst && src && index)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::gather_rows(dst, src, index, M, C);
    case Device::cuda:
      RC_CUDA_RETURN(gather_rows, dst, src, index, M, C, ctx.stream);
  }
}

void scatter_rows(const ExecCtx& ctx, float* dst, const float* src, const int64_t* index, int64_t M, int64_t C) {
  RC_ASSERT(M >= 0 && C >= 0 && (M * C == 0 || (dst && src && index)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::scatter_rows(dst, src, index, M, C);
    case Device::cuda:
      RC_CUDA_RETURN(scatter_rows, dst, src, index, M, C, ctx.stream);
  }
}

void mean_forward(const ExecCtx& ctx, float* out, const float* x, int64_t n) {
  RC_ASSERT(n >= 1 && out && x);
  switch (ctx.device) {
    case Device::cpu:
      return cpu::mean_forward(out, x, n);
    case Device::cuda:
      RC_CUDA_RETURN(mean_forward, out, x, n, ctx.stream);
  }
}

}  // namespace rc::kernels
