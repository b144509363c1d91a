// Checks + dispatch for loss.h.  Labels are trusted (the trainer checks them); an out-of-range
// one here is a bug.  The switch per op is dispatch.h's (alike on purpose).
#include "kernels/loss.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"

namespace rc::kernels {

void softmax_forward(const ExecCtx& ctx, float* probs, const float* logits, int64_t B, int64_t K) {
  RC_ASSERT(B >= 0 && K > 0 && (B == 0 || (probs && logits)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::softmax_forward(probs, logits, B, K);
    case Device::cuda:
      RC_CUDA_RETURN(softmax_forward, probs, logits, B, K, ctx.stream);
  }
}

void cross_entropy_forward(const ExecCtx& ctx, float* losses, float* probs, const float* logits, const int32_t* labels,
                           int64_t B, int64_t K, float smoothing) {
  RC_ASSERT(B >= 0 && K > 0 && (B == 0 || (losses && probs && logits && labels)) && smoothing >= 0 && smoothing < 1);
  if (ctx.device == Device::cpu)  // host memory only: device arrays are not readable here
    for (int64_t b = 0; b < B; ++b) RC_ASSERT(labels[b] < K);
  switch (ctx.device) {
    case Device::cpu:
      return cpu::cross_entropy_forward(losses, probs, logits, labels, B, K, smoothing);
    case Device::cuda:
      RC_CUDA_RETURN(cross_entropy_forward, losses, probs, logits, labels, B, K, smoothing, ctx.stream);
  }
}

void cross_entropy_backward(const ExecCtx& ctx, float* dlogits, const float* probs, const int32_t* labels, int64_t B,
                            int64_t K, float scale, float smoothing) {
  RC_ASSERT(B >= 0 && K > 0 && (B == 0 || (dlogits && probs && labels)) && smoothing >= 0 && smoothing < 1);
  if (ctx.device == Device::cpu)  // host memory only: device arrays are not readable here
    for (int64_t b = 0; b < B; ++b) RC_ASSERT(labels[b] < K);
  switch (ctx.device) {
    case Device::cpu:
      return cpu::cross_entropy_backward(dlogits, probs, labels, B, K, scale, smoothing);
    case Device::cuda:
      RC_CUDA_RETURN(cross_entropy_backward, dlogits, probs, labels, B, K, scale, smoothing, ctx.stream);
  }
}

void pointwise_loss_forward(const ExecCtx& ctx, PointwiseLoss kind, float* losses, const float* logits,
                            const float* targets, int64_t B, int64_t K) {
  RC_ASSERT(B >= 0 && K > 0 && (B == 0 || (losses && logits && targets)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::pointwise_loss_forward(kind, losses, logits, targets, B, K);
    case Device::cuda:
      RC_CUDA_RETURN(pointwise_loss_forward, kind, losses, logits, targets, B, K, ctx.stream);
  }
}

void pointwise_loss_backward(const ExecCtx& ctx, PointwiseLoss kind, float* dlogits, const float* logits,
                             const float* targets, int64_t B, int64_t K, float scale) {
  RC_ASSERT(B >= 0 && K > 0 && (B == 0 || (dlogits && logits && targets)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::pointwise_loss_backward(kind, dlogits, logits, targets, B, K, scale);
    case Device::cuda:
      RC_CUDA_RETURN(pointwise_loss_backward, kind, dlogits, logits, targets, B, K, scale, ctx.stream);
  }
}

}  // namespace rc::kernels
