// Checks + dispatch for matmul.h.  Arguments come from the model, not from users, so a bad
// one is a bug: RC_ASSERT.  The switch per op is dispatch.h's (alike on purpose).
#include "kernels/matmul.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"

namespace rc::kernels {

void matmul_nt(const ExecCtx& ctx, float* y, const float* x, const float* w, const float* bias, int64_t M, int64_t N,
               int64_t K) {
  RC_ASSERT(M >= 0 && N >= 0 && K >= 0);
  RC_ASSERT(M * N == 0 || (y && x && w));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::matmul_nt(y, x, w, bias, M, N, K, ctx.matmul_precision);
    case Device::cuda:
      RC_CUDA_RETURN(matmul_nt, y, x, w, bias, M, N, K, ctx.matmul_precision, ctx.stream);
  }
}

void matmul_nn(const ExecCtx& ctx, float* y, const float* x, const float* w, int64_t M, int64_t N, int64_t K,
               bool accumulate) {
  RC_ASSERT(M >= 0 && N >= 0 && K >= 0);
  RC_ASSERT(M * N == 0 || (y && x && w));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::matmul_nn(y, x, w, M, N, K, accumulate, ctx.matmul_precision);
    case Device::cuda:
      RC_CUDA_RETURN(matmul_nn, y, x, w, M, N, K, accumulate, ctx.matmul_precision, ctx.stream);
  }
}

void matmul_tn(const ExecCtx& ctx, float* y, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
               bool accumulate) {
  RC_ASSERT(M >= 0 && N >= 0 && K >= 0);
  RC_ASSERT(M * N == 0 || (y && a && b));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::matmul_tn(y, a, b, M, N, K, accumulate, ctx.matmul_precision);
    case Device::cuda:
      RC_CUDA_RETURN(matmul_tn, y, a, b, M, N, K, accumulate, ctx.matmul_precision, ctx.stream);
  }
}

void bias_backward(const ExecCtx& ctx, float* db, const float* dy, int64_t M, int64_t N) {
  RC_ASSERT(M >= 0 && N >= 0 && (M * N == 0 || (db && dy)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::bias_backward(db, dy, M, N);
    case Device::cuda:
      RC_CUDA_RETURN(bias_backward, db, dy, M, N, ctx.stream);
  }
}

}  // namespace rc::kernels
