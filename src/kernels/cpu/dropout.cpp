// CPU dropout: the mask is a pure function of (seed, row0 + r, k), so any split of the
// elements over threads gives the same result.
#include <cstdint>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dropout.h"

namespace rc::kernels::cpu {

void dropout_forward(float* y, const float* x, int64_t rows, int64_t cols, float p, uint64_t seed,
                     uint64_t row0) noexcept {
  const int64_t n = rows * cols;
  if (p <= 0.0f) {
    if (y != x) {
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
      for (int64_t i = 0; i < n; ++i) y[i] = x[i];
    }
    return;
  }
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;  // p == 1 drops everything
  // Work items: chunks of at most kChunk elements of one row (rows may be few and long).
  constexpr int64_t kChunk = 4096;
  const int64_t chunks_per_row = cols > 0 ? (cols + kChunk - 1) / kChunk : 0;
#pragma omp parallel for schedule(static) if (n >= (1 << 14))
  for (int64_t w = 0; w < rows * chunks_per_row; ++w) {
    const int64_t r = w / chunks_per_row, k0 = (w % chunks_per_row) * kChunk;
    const int64_t k1 = k0 + kChunk < cols ? k0 + kChunk : cols;
    const uint64_t s = rng::dropout_row_seed(seed, row0 + uint64_t(r));
    float* yr = y + r * cols;
    const float* xr = x + r * cols;
    for (int64_t k = k0; k < k1; ++k) yr[k] = dropout_uniform(s, uint64_t(k)) >= p ? xr[k] * scale : 0.0f;
  }
}

}  // namespace rc::kernels::cpu
