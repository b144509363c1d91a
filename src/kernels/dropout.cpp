// Checks + dispatch for dropout.h.  Backward is forward applied to dy: the same mask.
#include "kernels/dropout.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"

namespace rc::kernels {

void dropout_forward(const ExecCtx& ctx, float* y, const float* x, int64_t rows, int64_t cols, float p, uint64_t seed,
                     uint64_t row0) {
  RC_ASSERT(rows >= 0 && cols >= 0 && (rows * cols == 0 || (y && x)) && p >= 0.0f && p <= 1.0f);
  switch (ctx.device) {
    case Device::cpu:
      return cpu::dropout_forward(y, x, rows, cols, p, seed, row0);
    case Device::cuda:
      RC_CUDA_RETURN(dropout_forward, y, x, rows, cols, p, seed, row0, ctx.stream);
  }
}

void dropout_backward(const ExecCtx& ctx, float* dx, const float* dy, int64_t rows, int64_t cols, float p,
                      uint64_t seed, uint64_t row0) {
  RC_ASSERT(rows >= 0 && cols >= 0 && (rows * cols == 0 || (dx && dy)) && p >= 0.0f && p <= 1.0f);
  switch (ctx.device) {
    case Device::cpu:
      return cpu::dropout_forward(dx, dy, rows, cols, p, seed, row0);
    case Device::cuda:
      // Not RC_CUDA_RETURN: the backward is the forward kernel with the same mask, and an
      // error without a CUDA build must name the op the caller called.
#if RC_WITH_CUDA
      return cuda::dropout_forward(dx, dy, rows, cols, p, seed, row0, ctx.stream);
#else
      detail::no_cuda("dropout_backward");
#endif
  }
}

}  // namespace rc::kernels
