// CPU dropout: the mask is a pure function of (seed, i), so any split of i over threads gives
// the same result.
#include <cstdint>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dropout.h"

namespace rc::kernels::cpu {

void dropout_forward(float* y, const float* x, int64_t n, float p, uint64_t seed) noexcept {
  if (p <= 0.0f) {
    if (y != x) {
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
      for (int64_t i = 0; i < n; ++i) y[i] = x[i];
    }
    return;
  }
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;  // p == 1 drops everything
#pragma omp parallel for schedule(static) if (n >= (1 << 14))
  for (int64_t i = 0; i < n; ++i) y[i] = dropout_uniform(seed, uint64_t(i)) >= p ? x[i] * scale : 0.0f;
}

}  // namespace rc::kernels::cpu
