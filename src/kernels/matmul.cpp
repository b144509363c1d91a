// Checks + dispatch for matmul.h.  Arguments come from the model, not from users, so a bad
// one is a bug: RC_ASSERT.  The switch per op is dispatch.h's (alike on purpose).
#include "kernels/matmul.h"

#include "kernels/cpu/bf16_convert.h"
#include "kernels/cpu/bf16_training.h"
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

void matmul_nt_w16(const ExecCtx& ctx, float* y, const float* x, const float* w, const uint16_t* w16, const float* bias,
                   int64_t M, int64_t N, int64_t K, const uint16_t* x16) {
  RC_ASSERT(!x16 || (ctx.device == Device::cpu && ctx.matmul_precision == MatmulPrecision::bf16));
  if (ctx.device != Device::cpu || (!w16 && !x16)) return matmul_nt(ctx, y, x, w, bias, M, N, K);
  RC_ASSERT(M >= 0 && N >= 0 && K >= 0);
  RC_ASSERT(M * N == 0 || (y && (x || x16) && w));
  cpu::matmul_nt_w16(y, x, w, w16, bias, M, N, K, ctx.matmul_precision, x16);
}

void convert_to_bf16(const ExecCtx& ctx, uint16_t* dst, const float* src, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (dst && src)));
  RC_CHECK(ctx.device == Device::cpu, Errc::unsupported, "convert_to_bf16: CPU only");
  cpu::convert_f32_to_bf16(dst, src, n);
}

void linear_backward(const ExecCtx& ctx, float* dx, float* dw, float* db, const float* dy, const float* x,
                     const float* w, const uint16_t* w16, int64_t M, int64_t N, int64_t K, bool accumulate_dx,
                     const uint16_t* x16) {
  RC_ASSERT(!x16 || (ctx.device == Device::cpu && ctx.matmul_precision == MatmulPrecision::bf16));
  if (ctx.device != Device::cpu) {
    matmul_tn(ctx, dw, dy, x, N, K, M, true);
    if (db) bias_backward(ctx, db, dy, M, N);
    return matmul_nn(ctx, dx, dy, w, M, K, N, accumulate_dx);
  }
  RC_ASSERT(M >= 0 && N >= 0 && K >= 0);
  RC_ASSERT(M * N * K == 0 || (dx && dw && dy && (x || x16) && w));
  cpu::linear_backward(dx, dw, db, dy, x, w, w16, M, N, K, accumulate_dx, ctx.matmul_precision, x16);
}

}  // namespace rc::kernels
