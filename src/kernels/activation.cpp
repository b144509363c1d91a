// Checks + dispatch for activation.h.
#include "kernels/activation.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"

namespace rc::kernels {

void gelu_erf_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && x)));
  switch (ctx.device) {
    case Device::cpu: return cpu::gelu_erf_forward(y, x, n);
    case Device::cuda: detail::no_cuda("gelu_erf_forward");
  }
}

void gelu_erf_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (dx && dy && x)));
  switch (ctx.device) {
    case Device::cpu: return cpu::gelu_erf_backward(dx, dy, x, n);
    case Device::cuda: detail::no_cuda("gelu_erf_backward");
  }
}

void tanh_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && x)));
  switch (ctx.device) {
    case Device::cpu: return cpu::tanh_forward(y, x, n);
    case Device::cuda: detail::no_cuda("tanh_forward");
  }
}

void tanh_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* y, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (dx && dy && y)));
  switch (ctx.device) {
    case Device::cpu: return cpu::tanh_backward(dx, dy, y, n);
    case Device::cuda: detail::no_cuda("tanh_backward");
  }
}

void add(const ExecCtx& ctx, float* y, const float* a, const float* b, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && a && b)));
  switch (ctx.device) {
    case Device::cpu: return cpu::add(y, a, b, n);
    case Device::cuda: detail::no_cuda("add");
  }
}

}  // namespace rc::kernels
