// Scalar oracles for softmax and cross-entropy (loss.h), in double.
#include <cmath>
#include <cstdint>

#include "kernels/loss.h"

namespace rc::kernels::ref {

namespace {
// Writes softmax(row) into probs and returns log Σ exp(row).
double softmax_row(float* probs, const float* logits, int64_t K) {
  double mx = logits[0];
  for (int64_t k = 1; k < K; ++k) mx = logits[k] > mx ? logits[k] : mx;
  double sum = 0;
  for (int64_t k = 0; k < K; ++k) sum += std::exp(double(logits[k]) - mx);
  for (int64_t k = 0; k < K; ++k) probs[k] = float(std::exp(double(logits[k]) - mx) / sum);
  return mx + std::log(sum);
}
}  // namespace

void softmax_forward(float* probs, const float* logits, int64_t B, int64_t K) {
  for (int64_t b = 0; b < B; ++b) softmax_row(probs + b * K, logits + b * K, K);
}

void cross_entropy_forward(float* losses, float* probs, const float* logits, const int32_t* labels, int64_t B,
                           int64_t K, float smoothing) {
  for (int64_t b = 0; b < B; ++b) {
    const double lse = softmax_row(probs + b * K, logits + b * K, K);
    double mean = 0;  // of the row's logits: mean_k(-log p[k]) = lse - mean
    for (int64_t k = 0; k < K; ++k) mean += double(logits[b * K + k]) / double(K);
    const double eps = smoothing;
    losses[b] =
        labels[b] < 0 ? 0.0f : float((1.0 - eps) * (lse - double(logits[b * K + labels[b]])) + eps * (lse - mean));
  }
}

void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int64_t B, int64_t K,
                            float scale, float smoothing) {
  const double eps = smoothing;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k)
      dlogits[b * K + k] =
          labels[b] < 0 ? 0.0f
                        : float(double(scale) *
                                (double(probs[b * K + k]) - (k == labels[b] ? 1.0 - eps : 0.0) - eps / double(K)));
}

// The textbook forms, in double: log(1 + exp(-x)) + (1 - y)·x is torch's BCEWithLogits
// written without its max-shift (exact in double for |x| < 700).
void pointwise_loss_forward(PointwiseLoss kind, float* losses, const float* logits, const float* targets, int64_t B,
                            int64_t K) {
  for (int64_t b = 0; b < B; ++b) {
    double s = 0;
    for (int64_t k = 0; k < K; ++k) {
      const double x = logits[b * K + k], y = targets[b * K + k];
      s += kind == PointwiseLoss::bce_with_logits ? std::log1p(std::exp(-x)) + (1.0 - y) * x : (x - y) * (x - y);
    }
    losses[b] = float(s);
  }
}

void pointwise_loss_backward(PointwiseLoss kind, float* dlogits, const float* logits, const float* targets, int64_t B,
                             int64_t K, float scale) {
  for (int64_t i = 0; i < B * K; ++i) {
    const double x = logits[i], y = targets[i];
    const double d = kind == PointwiseLoss::bce_with_logits ? 1.0 / (1.0 + std::exp(-x)) - y : 2.0 * (x - y);
    dlogits[i] = float(double(scale) * d);
  }
}

}  // namespace rc::kernels::ref
