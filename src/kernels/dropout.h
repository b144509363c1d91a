// Dropout with a counter-based RNG: element i of a call seeded `seed` is kept iff
// dropout_uniform(seed, i) >= p, and kept values are scaled by 1/(1-p). The mask is never
// stored: backward recomputes it from (seed, i), and a run is reproducible from its seeds
// alone (resume, any thread count).
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// splitmix64 of (seed, i), mapped to [0, 1) with 24 bits. Pure function, inlinable anywhere.
inline float dropout_uniform(uint64_t seed, uint64_t i) noexcept {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return float(z >> 40) * (1.0f / 16777216.0f);
}

// y = x · keep / (1-p).  p == 0 copies.  OVERWRITES y (may alias x).
void dropout_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n, float p, uint64_t seed);
// dx = dy · keep / (1-p), the same mask.  OVERWRITES dx (may alias dy).
void dropout_backward(const ExecCtx& ctx, float* dx, const float* dy, int64_t n, float p, uint64_t seed);

namespace ref {
void dropout_forward(float* y, const float* x, int64_t n, float p, uint64_t seed);
}

}  // namespace rc::kernels
