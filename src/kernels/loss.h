// Softmax and cross-entropy over K classes.  logits, probs, dlogits: (B, K)  labels: (B).
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// probs = softmax(logits) row-wise, max-subtracted.  OVERWRITES probs.
void softmax_forward(const ExecCtx& ctx, float* probs, const float* logits, int64_t B, int64_t K);

// losses(B) = -log softmax(logits)[label] (log-sum-exp form); probs(B, K) saved.
// OVERWRITES losses, probs.  Labels are trusted: the trainer checks them.
void cross_entropy_forward(const ExecCtx& ctx, float* losses, float* probs, const float* logits, const int32_t* labels,
                           int64_t B, int64_t K);

// dlogits = scale · (probs - onehot(label)).  scale is 1/B for a mean loss.  OVERWRITES.
void cross_entropy_backward(const ExecCtx& ctx, float* dlogits, const float* probs, const int32_t* labels, int64_t B,
                            int64_t K, float scale);

namespace ref {
void softmax_forward(float* probs, const float* logits, int64_t B, int64_t K);
void cross_entropy_forward(float* losses, float* probs, const float* logits, const int32_t* labels, int64_t B,
                           int64_t K);
void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int64_t B, int64_t K,
                            float scale);
}  // namespace ref

}  // namespace rc::kernels
