// Checks + dispatch for optimizer.h.  The switch per op is dispatch.h's (alike on purpose).
#include "kernels/optimizer.h"

#include "core/check.h"
#include "kernels/cpu/bf16_training.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"

namespace rc::kernels {

void adamw_step(const ExecCtx& ctx, float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                int64_t num_segments, const AdamWHyper& hyper) {
  RC_ASSERT(num_segments >= 0 && (num_segments == 0 || (segments && params && grads && m && v)));
  RC_ASSERT(hyper.step >= 1);
  for (int64_t s = 0; s < num_segments; ++s) RC_ASSERT(segments[s].offset >= 0 && segments[s].n >= 0);
  switch (ctx.device) {
    case Device::cpu:
      return cpu::adamw_step(params, grads, m, v, segments, num_segments, hyper);
    case Device::cuda:
      RC_CUDA_RETURN(adamw_step, params, grads, m, v, segments, num_segments, hyper, nullptr, ctx.stream);
  }
}

void adamw_step_bf16_copy(const ExecCtx& ctx, float* params, const float* grads, float* m, float* v,
                          const AdamWSegment* segments, uint16_t* const* copies, int64_t num_segments,
                          const AdamWHyper& hyper) {
  RC_ASSERT(num_segments >= 0 && (num_segments == 0 || (segments && copies && params && grads && m && v)));
  RC_ASSERT(hyper.step >= 1);
  for (int64_t s = 0; s < num_segments; ++s) RC_ASSERT(segments[s].offset >= 0 && segments[s].n >= 0);
  RC_CHECK(ctx.device == Device::cpu, Errc::unsupported, "adamw_step_bf16_copy: the bf16 weight copy is CPU only");
  cpu::adamw_step_bf16_copy(params, grads, m, v, segments, copies, num_segments, hyper);
}

double sum_squares(const ExecCtx& ctx, const float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || x));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::sum_squares(x, n);
    case Device::cuda:
      RC_CUDA_RETURN(sum_squares, x, n, ctx.stream);
  }
  return 0.0;
}

void zero(const ExecCtx& ctx, float* x, int64_t n) {
  RC_ASSERT(n >= 0 && (n == 0 || x));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::zero(x, n);
    case Device::cuda:
      RC_CUDA_RETURN(zero, x, n, ctx.stream);
  }
}

}  // namespace rc::kernels
