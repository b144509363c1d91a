// Scalar oracle for dropout (dropout.h). Backward is the same function applied to dy.
#include <cstdint>

#include "kernels/dropout.h"

namespace rc::kernels::ref {

void dropout_forward(float* y, const float* x, int64_t n, float p, uint64_t seed) {
  if (p <= 0.0f) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i];
    return;
  }
  // p >= 1 drops everything (PyTorch returns zeros), without dividing by zero.
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  for (int64_t i = 0; i < n; ++i) y[i] = dropout_uniform(seed, uint64_t(i)) >= p ? x[i] * scale : 0.0f;
}

}  // namespace rc::kernels::ref
