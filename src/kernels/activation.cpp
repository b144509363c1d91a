// Checks + dispatch for activation.h.  The switch per op is dispatch.h's (alike on purpose).
#include "kernels/activation.h"

#include "kernels/cpu/bf16_training.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"

namespace rc::kernels {

void gelu_erf_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && x)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::gelu_erf_forward(y, x, n);
    case Device::cuda:
      RC_CUDA_RETURN(gelu_erf_forward, y, x, n, ctx.stream);
  }
}

void gelu_erf_forward_bf16(const ExecCtx& ctx, uint16_t* y, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && x)));
  RC_CHECK(ctx.device == Device::cpu, Errc::unsupported, "gelu_erf_forward_bf16: CPU only");
  cpu::gelu_erf_forward_bf16(y, x, n);
}

void gelu_erf_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (dx && dy && x)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::gelu_erf_backward(dx, dy, x, n);
    case Device::cuda:
      RC_CUDA_RETURN(gelu_erf_backward, dx, dy, x, n, ctx.stream);
  }
}

void tanh_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && x)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::tanh_forward(y, x, n);
    case Device::cuda:
      RC_CUDA_RETURN(tanh_forward, y, x, n, ctx.stream);
  }
}

void tanh_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* y, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (dx && dy && y)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::tanh_backward(dx, dy, y, n);
    case Device::cuda:
      RC_CUDA_RETURN(tanh_backward, dx, dy, y, n, ctx.stream);
  }
}

void gelu_tanh_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && x)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::gelu_tanh_forward(y, x, n);
    case Device::cuda:
      RC_CUDA_RETURN(gelu_tanh_forward, y, x, n, ctx.stream);
  }
}

void gelu_tanh_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (dx && dy && x)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::gelu_tanh_backward(dx, dy, x, n);
    case Device::cuda:
      RC_CUDA_RETURN(gelu_tanh_backward, dx, dy, x, n, ctx.stream);
  }
}

void relu_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && x)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::relu_forward(y, x, n);
    case Device::cuda:
      RC_CUDA_RETURN(relu_forward, y, x, n, ctx.stream);
  }
}

void relu_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* y, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (dx && dy && y)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::relu_backward(dx, dy, y, n);
    case Device::cuda:
      RC_CUDA_RETURN(relu_backward, dx, dy, y, n, ctx.stream);
  }
}

void add(const ExecCtx& ctx, float* y, const float* a, const float* b, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || (y && a && b)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::add(y, a, b, n);
    case Device::cuda:
      RC_CUDA_RETURN(add, y, a, b, n, ctx.stream);
  }
}

}  // namespace rc::kernels
