// Checks + dispatch for activation.h.
#include "kernels/activation.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"
#if RC_WITH_CUDA
#include "kernels/cuda/cuda_kernels.h"
#endif

namespace rc::kernels {

void gelu_erf_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && x)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::gelu_erf_forward(y, x, n);
    case Device::cuda:
#if RC_WITH_CUDA
      return cuda::gelu_erf_forward(y, x, n, ctx.stream);
#else
      detail::no_cuda("gelu_erf_forward");
#endif
  }
}

void gelu_erf_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (dx && dy && x)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::gelu_erf_backward(dx, dy, x, n);
    case Device::cuda:
#if RC_WITH_CUDA
      return cuda::gelu_erf_backward(dx, dy, x, n, ctx.stream);
#else
      detail::no_cuda("gelu_erf_backward");
#endif
  }
}

void tanh_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && x)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::tanh_forward(y, x, n);
    case Device::cuda:
#if RC_WITH_CUDA
      return cuda::tanh_forward(y, x, n, ctx.stream);
#else
      detail::no_cuda("tanh_forward");
#endif
  }
}

void tanh_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* y, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (dx && dy && y)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::tanh_backward(dx, dy, y, n);
    case Device::cuda:
#if RC_WITH_CUDA
      return cuda::tanh_backward(dx, dy, y, n, ctx.stream);
#else
      detail::no_cuda("tanh_backward");
#endif
  }
}

void add(const ExecCtx& ctx, float* y, const float* a, const float* b, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && a && b)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::add(y, a, b, n);
    case Device::cuda:
#if RC_WITH_CUDA
      return cuda::add(y, a, b, n, ctx.stream);
#else
      detail::no_cuda("add");
#endif
  }
}

}  // namespace rc::kernels
