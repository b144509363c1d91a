// CPU softmax / cross-entropy over the classifier's K classes (K is small: rows in parallel,
// sums in double so that the result matches the reference to fp32 rounding).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/cpu_kernels.h"

namespace rc::kernels::cpu {

namespace {
double softmax_row(float* probs, const float* logits, int64_t K) noexcept {
  float mx = logits[0];
  for (int64_t k = 1; k < K; ++k) mx = logits[k] > mx ? logits[k] : mx;
  double sum = 0;
  for (int64_t k = 0; k < K; ++k) sum += std::exp(double(logits[k]) - mx);
  const double inv = 1.0 / sum;
  for (int64_t k = 0; k < K; ++k) probs[k] = float(std::exp(double(logits[k]) - mx) * inv);
  return double(mx) + std::log(sum);
}
// The masked-LM decoder's rows span the whole vocabulary (50k): one float exp per logit
// (glibc's expf is within 1 ulp) instead of two double ones, still summed in double.
constexpr int64_t kWideRow = 256;  // the masked-LM golden (vocab 1000) takes this path
double softmax_row_wide(float* probs, const float* logits, int64_t K) noexcept {
  float mx = logits[0];
  for (int64_t k = 1; k < K; ++k) mx = logits[k] > mx ? logits[k] : mx;
  double sum = 0;
  for (int64_t k = 0; k < K; ++k) {
    const float e = std::exp(logits[k] - mx);
    probs[k] = e;
    sum += double(e);
  }
  const float inv = float(1.0 / sum);
  for (int64_t k = 0; k < K; ++k) probs[k] *= inv;
  return double(mx) + std::log(sum);
}

double softmax_any(float* probs, const float* logits, int64_t K) noexcept {
  return K >= kWideRow ? softmax_row_wide(probs, logits, K) : softmax_row(probs, logits, K);
}
}  // namespace

void softmax_forward(float* probs, const float* logits, int64_t B, int64_t K) noexcept {
#pragma omp parallel for schedule(static) if (B * K >= (1 << 14))
  for (int64_t b = 0; b < B; ++b) softmax_row(probs + b * K, logits + b * K, K);
}

void cross_entropy_forward(float* losses, float* probs, const float* logits, const int32_t* labels, int64_t B,
                           int64_t K, float smoothing) noexcept {
#pragma omp parallel for schedule(static) if (B * K >= (1 << 14))
  for (int64_t b = 0; b < B; ++b) {
    const double lse = softmax_any(probs + b * K, logits + b * K, K);
    double loss = lse - double(logits[b * K + (labels[b] < 0 ? 0 : labels[b])]);
    if (smoothing > 0) {  // + ε·(mean_k(-log p[k]) - nll); mean_k(-log p[k]) = lse - mean(logits)
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += double(logits[b * K + k]);
      loss = (1.0 - double(smoothing)) * loss + double(smoothing) * (lse - sum / double(K));
    }
    losses[b] = labels[b] < 0 ? 0.0f : float(loss);
  }
}

void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int64_t B, int64_t K,
                            float scale, float smoothing) noexcept {
  const float hit = 1.0f - smoothing, floor = smoothing / float(K);  // the smoothed target: hit + floor, floor
#pragma omp parallel for schedule(static) if (B * K >= (1 << 14))
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k)
      dlogits[b * K + k] = labels[b] < 0 ? 0.0f : scale * (probs[b * K + k] - (k == labels[b] ? hit : 0.0f) - floor);
}

namespace {
// torch's BCEWithLogits element (max-shifted, no overflow for any finite x) and squared error.
double pointwise_loss(PointwiseLoss kind, double x, double y) noexcept {
  if (kind == PointwiseLoss::squared_error) return (x - y) * (x - y);
  return std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::abs(x)));
}
double pointwise_grad(PointwiseLoss kind, double x, double y) noexcept {
  if (kind == PointwiseLoss::squared_error) return 2.0 * (x - y);
  // σ(x) without overflow on either side.
  const double sig = x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
  return sig - y;
}
}  // namespace

void pointwise_loss_forward(PointwiseLoss kind, float* losses, const float* logits, const float* targets, int64_t B,
                            int64_t K) noexcept {
#pragma omp parallel for schedule(static) if (B * K >= (1 << 14))
  for (int64_t b = 0; b < B; ++b) {
    double s = 0;
    for (int64_t k = 0; k < K; ++k) s += pointwise_loss(kind, logits[b * K + k], targets[b * K + k]);
    losses[b] = float(s);
  }
}

void pointwise_loss_backward(PointwiseLoss kind, float* dlogits, const float* logits, const float* targets, int64_t B,
                             int64_t K, float scale) noexcept {
#pragma omp parallel for schedule(static) if (B * K >= (1 << 14))
  for (int64_t i = 0; i < B * K; ++i) dlogits[i] = float(double(scale) * pointwise_grad(kind, logits[i], targets[i]));
}

}  // namespace rc::kernels::cpu
