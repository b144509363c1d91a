// Scalar oracle for dropout (dropout.h). Backward is the same function applied to dy.
#include <cstdint>

#include "kernels/dropout.h"

namespace rc::kernels::ref {

void dropout_forward(float* y, const float* x, int64_t rows, int64_t cols, float p, uint64_t seed, uint64_t row0) {
  const int64_t n = rows * cols;
  if (p <= 0.0f) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i];
    return;
  }
  // p >= 1 drops everything (PyTorch returns zeros), without dividing by zero.
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    const uint64_t s = rng::dropout_row_seed(seed, row0 + uint64_t(r));
    for (int64_t k = 0; k < cols; ++k) {
      const int64_t i = r * cols + k;
      y[i] = dropout_uniform(s, uint64_t(k)) >= p ? x[i] * scale : 0.0f;
    }
  }
}

}  // namespace rc::kernels::ref
