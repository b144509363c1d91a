// Checks + dispatch for dropout.h.  Backward is forward applied to dy: same (seed, i) mask.
#include "kernels/dropout.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"
#if RC_WITH_CUDA
#include "kernels/cuda/cuda_kernels.h"
#endif

namespace rc::kernels {

void dropout_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n, float p, uint64_t seed) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && x)) && p >= 0.0f && p <= 1.0f);
  switch (ctx.device) {
    case Device::cpu:
      return cpu::dropout_forward(y, x, n, p, seed);
    case Device::cuda:
#if RC_WITH_CUDA
      return cuda::dropout_forward(y, x, n, p, seed, ctx.stream);
#else
      detail::no_cuda("dropout_forward");
#endif
  }
}

void dropout_backward(const ExecCtx& ctx, float* dx, const float* dy, int64_t n, float p, uint64_t seed) {
  RC_ASSERT(n >= 0 && (n == 0 || (dx && dy)) && p >= 0.0f && p <= 1.0f);
  switch (ctx.device) {
    case Device::cpu:
      return cpu::dropout_forward(dx, dy, n, p, seed);
    case Device::cuda:
#if RC_WITH_CUDA
      return cuda::dropout_forward(dx, dy, n, p, seed, ctx.stream);
#else
      detail::no_cuda("dropout_backward");
#endif
  }
}

}  // namespace rc::kernels
