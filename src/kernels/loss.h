// The heads' losses over K outputs.  logits, probs, dlogits, targets: (B, K)  labels: (B).
//   - softmax cross-entropy with integer labels (single-label classification, token
//     classification): a label < 0 (HF's -100) is ignored, as torch's ignore_index: its loss
//     and gradient are 0 and the caller divides by the rows that count;
//   - pointwise losses with float targets: BCE-with-logits (multi-label) and squared error
//     (regression), as torch.nn.BCEWithLogitsLoss / MSELoss compute each element.
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// probs = softmax(logits) row-wise, max-subtracted.  OVERWRITES probs.
void softmax_forward(const ExecCtx& ctx, float* probs, const float* logits, int64_t B, int64_t K);

// losses(B) = -log softmax(logits)[label] (log-sum-exp form), 0 where label < 0; probs(B, K)
// saved (every row).  With label smoothing ε (HF Trainer's LabelSmoother, torch's
// label_smoothing): (1 - ε)·(-log p[label]) + ε·mean_k(-log p[k]).  OVERWRITES losses, probs.
// Labels are trusted: the trainer checks them.
void cross_entropy_forward(const ExecCtx& ctx, float* losses, float* probs, const float* logits, const int32_t* labels,
                           int64_t B, int64_t K, float smoothing = 0.0f);

// dlogits = scale · (probs - (1 - ε)·onehot(label) - ε/K), 0 where label < 0.  scale is
// 1/rows for a mean loss.  OVERWRITES.
void cross_entropy_backward(const ExecCtx& ctx, float* dlogits, const float* probs, const int32_t* labels, int64_t B,
                            int64_t K, float scale, float smoothing = 0.0f);

enum class PointwiseLoss {
  bce_with_logits,  // max(x, 0) - x·y + log(1 + exp(-|x|))   (multi-label, y in [0, 1])
  squared_error,    // (x - y)²                                (regression)
};
// losses(B) = Σ_k loss(logits[b, k], targets[b, k]) per row (the mean over all B·K elements,
// torch's default reduction, is Σ losses / (B·K)).  OVERWRITES losses.
void pointwise_loss_forward(const ExecCtx& ctx, PointwiseLoss kind, float* losses, const float* logits,
                            const float* targets, int64_t B, int64_t K);
// dlogits = scale · ∂loss/∂logit: σ(x) - y, or 2(x - y).  scale is 1/(B·K) for the mean.
// OVERWRITES dlogits.
void pointwise_loss_backward(const ExecCtx& ctx, PointwiseLoss kind, float* dlogits, const float* logits,
                             const float* targets, int64_t B, int64_t K, float scale);

namespace ref {
void softmax_forward(float* probs, const float* logits, int64_t B, int64_t K);
void cross_entropy_forward(float* losses, float* probs, const float* logits, const int32_t* labels, int64_t B,
                           int64_t K, float smoothing = 0.0f);
void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int64_t B, int64_t K,
                            float scale, float smoothing = 0.0f);
void pointwise_loss_forward(PointwiseLoss kind, float* losses, const float* logits, const float* targets, int64_t B,
                            int64_t K);
void pointwise_loss_backward(PointwiseLoss kind, float* dlogits, const float* logits, const float* targets, int64_t B,
                             int64_t K, float scale);
}  // namespace ref

}  // namespace rc::kernels
