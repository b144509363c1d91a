// CPU softmax / cross-entropy over the classifier's K classes (K is small: rows in parallel,
// sums in double so that the result matches the reference to fp32 rounding).
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
                           int64_t K) noexcept {
#pragma omp parallel for schedule(static) if (B * K >= (1 << 14))
  for (int64_t b = 0; b < B; ++b)
    losses[b] = float(softmax_any(probs + b * K, logits + b * K, K) - double(logits[b * K + labels[b]]));
}

void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int64_t B, int64_t K,
                            float scale) noexcept {
#pragma omp parallel for schedule(static) if (B * K >= (1 << 14))
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k) dlogits[b * K + k] = scale * (probs[b * K + k] - (k == labels[b] ? 1.0f : 0.0f));
}

}  // namespace rc::kernels::cpu
